/**
 * Growth with session length (`--huge`): the cold open, admit, appending a turn and loadThrough
 * on one session grown to each of `growthSizes` turns in turn (1,000, 10,000, 100,000), each
 * figure against the same one at the smallest size. The session is seeded through the engine's
 * own `append` (whole turns, `seedTurnsPerWrite` per call), so its projections are the ones the
 * engine builds, never a hand-made copy.
 */
import type { Engine } from '../../../src/engine/types'
import type { BenchConfig } from './config'
import { type BenchEnv, freshEngine, openEngine } from './env'
import { seededTurns } from './fixtures'
import { coldOpen } from './seed'
import { type Comparison, compare, type Figure, figure, timed } from './stats'

const DB_NAME = 'bench-growth'
const SESSION = 'growth'
const ADMITS = 50
const TURNS_APPENDED = 20
const REPS = 5

type Metric = 'cold-open-outline' | 'admit' | 'append-turn' | 'loadThrough'

const WHAT: Record<Metric, { name: string; op: string }> = {
  'cold-open-outline': { name: 'cold open: tail 50 + outline slice', op: 'open' },
  admit: { name: `admit into the session (${ADMITS} per rep)`, op: 'admit' },
  'append-turn': { name: `append one whole turn per call (${TURNS_APPENDED} per rep)`, op: 'turn' },
  loadThrough: { name: 'loadThrough 2,000 rows back, pages of 200', op: 'page of 200' },
}

/** The seq of the `n`-th newest row (paging back through the public API). */
async function seqOfNthNewest(engine: Engine, n: number): Promise<number> {
  let before: number | undefined
  for (let left = n; left > 0; ) {
    const limit = Math.min(left, 1000)
    const page = await engine.page(SESSION, { limit, beforeSeq: before })
    before = page.baseSeq
    left -= limit
  }
  return before ?? 0
}

let admitted = 0

async function measure(
  env: BenchEnv,
  cfg: BenchConfig,
  nextTurn: () => number,
): Promise<Record<Metric, Figure>> {
  const cold: number[] = []
  for (let rep = -1; rep < REPS; rep++) {
    const t0 = performance.now()
    const engine = openEngine(env, DB_NAME)
    await coldOpen(engine, cfg.tailLimit, SESSION)
    const ms = performance.now() - t0
    await engine.close()
    if (rep >= 0) cold.push(ms)
  }
  const engine = openEngine(env, DB_NAME)
  try {
    const admits: number[] = []
    const appends: number[] = []
    const loads: number[] = []
    const target = await seqOfNthNewest(engine, cfg.loadRows)
    for (let rep = -1; rep < REPS; rep++) {
      let ms = 0
      const ids: string[] = []
      for (let i = 0; i < ADMITS; i++) {
        const id = `growth-${cfg.seedTurns}-${++admitted}`
        ids.push(id)
        ms += await timed(() => engine.admit(SESSION, { id, text: `a note ${i}`, delivery: 'queue' }))
      }
      // Untimed: the next size starts with no pending input, as this one did.
      for (const id of ids) await engine.cancel(SESSION, id)
      if (rep >= 0) admits.push(ms)
      ms = 0
      for (let i = 0; i < TURNS_APPENDED; i++) {
        const turn = nextTurn()
        ms += await timed(() => engine.append(SESSION, seededTurns(turn, turn)))
      }
      if (rep >= 0) appends.push(ms)
      ms = await timed(() => engine.loadThrough(SESSION, { seq: target, pageSize: cfg.pageSize }))
      if (rep >= 0) loads.push(ms)
    }
    return {
      'cold-open-outline': figure(cold, 1),
      admit: figure(admits, ADMITS),
      'append-turn': figure(appends, TURNS_APPENDED),
      loadThrough: figure(loads, Math.ceil(cfg.loadRows / cfg.pageSize)),
    }
  } finally {
    await engine.close()
  }
}

export async function runGrowth(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const sizes = [...cfg.growthSizes].sort((a, b) => a - b)
  if (sizes.length === 0) return []
  const engine = await freshEngine(env, DB_NAME)
  await engine.createSession({ id: SESSION, title: 'growth' })
  let turns = 0
  const byTurns = new Map<number, { figures: Record<Metric, Figure>; seedMs: number; size: number }>()
  const out: Comparison[] = []
  try {
    for (const size of sizes) {
      env.log(`growth: seeding to ${size.toLocaleString('en')} turns`)
      const t0 = performance.now()
      const seeded = turns
      while (turns < size) {
        const last = Math.min(size, turns + cfg.seedTurnsPerWrite)
        await engine.append(SESSION, seededTurns(turns + 1, last))
        turns = last
      }
      const seedMs = performance.now() - t0
      env.log(`growth: measuring at ${turns.toLocaleString('en')} turns`)
      const figures = await measure(env, cfg, () => ++turns)
      byTurns.set(size, { figures, seedMs: seedMs / Math.max(1, size - seeded), size })
    }
  } finally {
    await engine.close()
  }
  const smallest = byTurns.get(sizes[0]!)!
  for (const size of sizes) {
    const { figures, seedMs } = byTurns.get(size)!
    for (const metric of Object.keys(WHAT) as Metric[]) {
      out.push(
        compare(
          {
            id: `growth-${metric}-${size}`,
            name: `${WHAT[metric].name}, ${size.toLocaleString('en')} turns`,
            op: WHAT[metric].op,
            ...(size > sizes[0]! ? { target: 1.5 } : {}),
            note: `baseline: the same at ${sizes[0]!.toLocaleString('en')} turns; seeding took ${seedMs.toFixed(3)} ms per turn`,
          },
          figures[metric],
          smallest.figures[metric],
        ),
      )
    }
  }
  return out
}
