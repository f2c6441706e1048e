/**
 * Timing and comparison records. A repetition times a whole loop of operations (never one
 * call): browser timers are coarse (100 µs without cross-origin isolation), a loop is not.
 */

/** One side's figures: `median` of the repetitions, `perOp` = median / opsPerRep. */
export interface Figure {
  reps: number
  opsPerRep: number
  median: number
  perOp: number
  min: number
  max: number
  all: number[]
}

/** One row of the report: sessionline against raw Dexie doing the same work in the same run. */
export interface Comparison {
  id: string
  name: string
  /** What one operation is, e.g. "append of 200 events". */
  op: string
  unit: 'ms' | 'MB'
  sessionline: Figure
  raw: Figure
  /** sessionline.median / raw.median (null when raw is too close to zero to divide by). */
  ratio: number | null
  /** The ratio sessionline aims to stay at or under, when there is one. */
  target?: number
  note?: string
}

const round = (x: number) => Math.round(x * 1000) / 1000

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export function figure(values: readonly number[], opsPerRep: number): Figure {
  const med = median(values)
  return {
    reps: values.length,
    opsPerRep,
    median: round(med),
    perOp: round(med / opsPerRep),
    min: round(Math.min(...values)),
    max: round(Math.max(...values)),
    all: values.map(round),
  }
}

export function compare(
  head: Pick<Comparison, 'id' | 'name' | 'op'> & Partial<Pick<Comparison, 'unit' | 'target' | 'note'>>,
  sessionline: Figure,
  raw: Figure,
): Comparison {
  const ratio = Math.abs(raw.median) < 1e-6 ? null : Math.round((sessionline.median / raw.median) * 100) / 100
  return { unit: 'ms', ...head, sessionline, raw, ratio }
}

/** A repetition: does its own untimed setup and returns the milliseconds of its timed part. */
export type Rep = (rep: number) => Promise<number>

/**
 * Runs the sides' repetitions interleaved, rotating which side goes first, so a slow stretch
 * of the machine (or a growing database) lands on every side alike. `warmup` runs one
 * untimed repetition of each side first, for the JIT and the database files.
 */
export async function measureSides<K extends string>(
  sides: Record<K, Rep>,
  options: { reps: number; opsPerRep: number; warmup?: boolean },
): Promise<Record<K, Figure>> {
  const names = Object.keys(sides) as K[]
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>
  if (options.warmup) for (const n of names) await sides[n](-1)
  for (let rep = 0; rep < options.reps; rep++) {
    for (let i = 0; i < names.length; i++) {
      const n = names[(rep + i) % names.length]!
      times[n].push(await sides[n](rep))
    }
  }
  return Object.fromEntries(names.map((n) => [n, figure(times[n], options.opsPerRep)])) as Record<K, Figure>
}

/** Times `ops` sequential awaited calls of `call`. */
export async function timeLoop(ops: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  for (let i = 0; i < ops; i++) await call(i)
  return performance.now() - t0
}
