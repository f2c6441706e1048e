/** Types of main-thread.mjs (plain JavaScript so the bench runner needs no TypeScript loader). */
/** A markdown answer of `bytes` characters (headings, paragraphs, lists, code, tables), the same every run. */
export function markdownAnswer(bytes: number): string
/** An OpenAI-compatible `/chat/completions` on 127.0.0.1 streaming `text`, refusing after `limitMs`. */
export function startSseServer(options: {
  text: string
  charsPerSecond: number
  tickMs?: number
  limitMs: number
}): Promise<{ baseUrl: string; close(): Promise<void> }>
/** The recorder script the playground page gets before its own scripts. */
export const RECORDER: string
/** One workload's reading of the main thread. */
export interface MainThreadReading {
  longTasks: number
  longestMs: number
  tbtMs: number
  longestFrameGapMs: number
}
/** A main-thread report row: `value` the longest task, the total blocking time beside it. */
export function mainThreadRow(
  id: string,
  name: string,
  op: string,
  reading: MainThreadReading,
  extra?: string,
): import('./report.mjs').Comparison & {
  value: number
  tbtMs: number
  longTasks: number
  longestFrameGapMs: number
}
/** Builds, serves and streams into the playground once: the `main-thread-stream` row. */
export function runPlaygroundStream(options: {
  context: import('playwright-core').BrowserContext
  root: string
  outDir: string
  vite: string
  log: (message: string) => void
  answerBytes: number
  charsPerSecond: number
  startServer: (options: { root: string }) => Promise<{ url: string; close(): Promise<unknown> }>
}): Promise<import('./report.mjs').Comparison>
/** The rows of the page's workloads (src/main-thread.ts). */
export function pageRows(
  result: import('./src/main-thread').MainThreadResult,
  config: { seedTurns: number },
): import('./report.mjs').Comparison[]
