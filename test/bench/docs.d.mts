/** Types of docs.mjs (plain JavaScript so it runs with no TypeScript loader). */
export const DOC: string
export const RESULTS: string
export function publishedReports(): string[]
export function readReports(files: string[]): { report: unknown; source: string }[]
export function renderBenchmarksDoc(reports: { report: unknown; source: string }[]): string
