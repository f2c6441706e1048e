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
  unit: 'ms' | 'MB' | 'KB' | 'snapshots'
  sessionline: Figure
  raw: Figure
  /** sessionline.median / raw.median (null when raw is too close to zero to divide by: under 1 µs, 0.05 MB or 0.05 KB). */
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
  const unit = head.unit ?? 'ms'
  const floor = unit === 'ms' ? 0.001 : 0.05
  const ratio = raw.median < floor ? null : Math.round((sessionline.median / raw.median) * 100) / 100
  return { ...head, unit, sessionline, raw, ratio }
}

/** One step of a side: does its untimed work, and returns the milliseconds of its timed part. */
export type Step = (i: number) => Promise<number>
/** Prepares a side for one repetition (a fresh session, say) and returns its step. */
export type Side = (rep: number) => Promise<Step>

/**
 * Runs the sides step by step, interleaved: step i of every side, then step i + 1, the side
 * that goes first rotating each step. On a shared machine load comes and goes within seconds;
 * interleaving this finely lets it land on every side alike, which whole repetitions one after
 * the other do not. A repetition's figure is the sum of its timed parts; `warmup` runs one
 * untimed repetition first, for the JIT and the database files.
 */
export async function measureSides<K extends string>(
  sides: Record<K, Side>,
  options: { reps: number; steps: number; opsPerRep?: number; warmup?: boolean },
): Promise<Record<K, Figure>> {
  const names = Object.keys(sides) as K[]
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>
  for (let rep = options.warmup ? -1 : 0; rep < options.reps; rep++) {
    const steps = [] as Step[]
    for (const n of names) steps.push(await sides[n](rep))
    const sums = names.map(() => 0)
    for (let i = 0; i < options.steps; i++) {
      for (let k = 0; k < names.length; k++) {
        const at = (i + rep + k + names.length) % names.length
        sums[at]! += await steps[at]!(i)
      }
    }
    if (rep >= 0) for (const [k, n] of names.entries()) times[n].push(sums[k]!)
  }
  const ops = options.opsPerRep ?? options.steps
  return Object.fromEntries(names.map((n) => [n, figure(times[n], ops)])) as Record<K, Figure>
}

/** The milliseconds `run` takes. */
export async function timed(run: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await run()
  return performance.now() - t0
}
