/** Types of report.mjs (plain JavaScript so the bench runner needs no TypeScript loader). */
export interface Figure {
  reps: number
  opsPerRep: number
  median: number
  perOp: number
  min?: number
  max?: number
  all?: number[]
}
export interface Comparison {
  id: string
  name: string
  op: string
  unit: 'ms' | 'MB' | 'KB' | 'snapshots'
  sessionline: Figure
  raw: Figure
  ratio: number | null
  target?: number
  note?: string
}
export interface FoldFigure {
  id: string
  name: string
  turns: number
  events: number
  value: number
  unit: 'events/s'
  atLeast: number
}
export interface SyncSide {
  median: number
  all: number[]
  eventsPerSecond: number
}
export interface SyncFigure {
  id: string
  name: string
  events: number
  bytes: number
  /** The most events in one POST. */
  batch: number
  /** POSTs per repetition, the same on both sides. */
  posts: number
  /** Where the engines' IndexedDB was. */
  where: string
  raw: SyncSide
  sessionline: SyncSide | null
  ratio: number | null
  note: string
}
export function ratioSpread(c: Comparison): string
export function markdownTable(comparisons: Comparison[], options?: { judge?: boolean }): string
export function missedTargets(comparisons: Comparison[]): Comparison[]
export function foldTable(folds: FoldFigure[]): string
export function missedSyncTargets(figures: SyncFigure[]): SyncFigure[]
export function syncTable(figures: SyncFigure[], options?: { judge?: boolean }): string
export function growthTable(comparisons: Comparison[], options?: { judge?: boolean }): string
export function agreementTable(
  first: Comparison[],
  repeat: Comparison[],
  tolerance?: number,
): { table: string; off: string[]; compared: number }
