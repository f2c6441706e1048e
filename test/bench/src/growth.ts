/**
 * Growth with session length (`--huge`): the cold open, admit, appending a turn and loadThrough
 * on one session grown to each of `growthSizes` turns in turn (1,000, 10,000, 100,000), each
 * figure against the same one at the smallest size, and beside it raw Dexie doing the same reads
 * and writes on a database grown to the same turns, events and rows: so IndexedDB's own growth
 * on a larger store can be told apart from ours.
 *
 * The session is seeded through the engine's own `append` (whole turns, `seedTurnsPerWrite` per
 * call), so its projections are the ones the engine builds, never a hand-made copy; the raw side
 * gets the same events and rows (stamped and folded outside the timing) in bulk transactions.
 * Each size's seeding engine is closed before measuring: what it still had to do in the
 * background (writing the search index of the turns just seeded) is seeding, not the next
 * measurement. The measuring engine's first write brings the session's search index into
 * memory (as any engine's first commit to a session does); that one-off load is waited for
 * (a search) in the untimed warm-up and reported in the note, not spread over the timed reps.
 * loadThrough pages back to the 2,000th newest row as it is at each repetition, so every
 * repetition reads the same number of rows while the appends grow the session.
 */
import type { Engine } from '../../../src/engine/types'
import { createEngine } from '../../../src/index'
import type { BenchConfig } from './config'
import { type BenchEnv, clock, freshEngine } from './env'
import { Stamper, seededTurn, seededTurns } from './fixtures'
import {
  admitLikeEngine,
  appendBatch,
  createRawSession,
  freshRaw,
  openRaw,
  pageBackThrough,
  type RawDb,
  rowsBelow,
} from './raw'
import { coldOpen } from './seed'
import { type Comparison, compare, type Figure, figure, timed } from './stats'

/** The two databases grown, and the one session in each. */
export const GROWTH_DB = { sessionline: 'bench-growth', raw: 'bench-growth-raw' } as const
export const GROWTH_SESSION = 'growth'
const DB_NAME = GROWTH_DB.sessionline
const RAW_DB_NAME = GROWTH_DB.raw
const SESSION = GROWTH_SESSION
const ADMITS = 50
const TURNS_APPENDED = 20
const REPS = 7

type Metric = 'cold-open-outline' | 'admit' | 'append-turn' | 'loadThrough'
type SideName = 'sessionline' | 'raw'
type Figures = Record<Metric, Figure>

const METRICS: Metric[] = ['cold-open-outline', 'admit', 'append-turn', 'loadThrough']

const WHAT: Record<Metric, { name: string; op: string; raw: string }> = {
  'cold-open-outline': {
    name: 'cold open: tail 50 + outline slice',
    op: 'open',
    raw: 'a new Dexie connection reading the last 50 rows by [sessionId+seq]',
  },
  admit: {
    name: `admit into the session (${ADMITS} per rep)`,
    op: 'admit',
    raw: 'get the input and the session, put receipt and session, one transaction per admit',
  },
  'append-turn': {
    name: `append one whole turn per call (${TURNS_APPENDED} per rep)`,
    op: 'turn',
    raw: "one transaction per turn: bulkAdd its events, bulkPut its rows, put the session's head",
  },
  loadThrough: {
    name: 'loadThrough 2,000 rows back, pages of 200',
    op: 'page of 200',
    raw: 'reverse range reads of 200 rows by [sessionId+seq], one transaction each',
  },
}

/** Both sides in the order they go at step `i` (the first rotates, as in measureSides). */
const order = (i: number): SideName[] => (i % 2 === 0 ? ['sessionline', 'raw'] : ['raw', 'sessionline'])

/** The seq of the `n`-th newest row (paging back through the public API). */
async function seqOfNthNewest(engine: Engine, n: number): Promise<number> {
  let before: number | undefined
  for (let left = n; left > 0; ) {
    const limit = Math.min(left, 1000)
    const page = await engine.page(SESSION, { limit, beforeSeq: before })
    if (page.messages.length < limit) throw new Error(`the growth session has fewer than ${n} rows`)
    before = page.baseSeq
    left -= limit
  }
  return before ?? 0
}

async function rawSeqOfNthNewest(db: RawDb, n: number): Promise<number> {
  const rows = await rowsBelow(db, SESSION, n)
  if (rows.length < n) throw new Error(`the raw growth session has fewer than ${n} rows`)
  return rows[0]!.seq
}

/** The raw side's session: its own database, events and rows stamped as the engine stamps them. */
class RawSide {
  private stamper = new Stamper(SESSION, 2)
  turns = 0
  private admitted = 0

  static async create(env: BenchEnv): Promise<RawSide> {
    const db = await freshRaw(RAW_DB_NAME, env.dexie)
    await createRawSession(db, SESSION, clock())
    db.close()
    return new RawSide(env)
  }

  private constructor(private env: BenchEnv) {}

  open(): RawDb {
    return openRaw(RAW_DB_NAME, this.env.dexie)
  }

  /** Grows the session to `size` turns, `perWrite` turns per transaction; answers ms per turn. */
  async seed(size: number, perWrite: number): Promise<number> {
    const db = this.open()
    const seeded = this.turns
    let ms = 0
    try {
      while (this.turns < size) {
        const last = Math.min(size, this.turns + perWrite)
        const at = clock()
        const batch = this.stamper.stamp(seededTurns(this.turns + 1, last), at)
        ms += await timed(() => appendBatch(db, SESSION, batch.events, batch.rows, at))
        this.turns = last
      }
    } finally {
      db.close()
    }
    return ms / Math.max(1, size - seeded)
  }

  /** The next turn's events and rows, prepared outside the timing; `write` appends them. */
  nextTurn(db: RawDb): () => Promise<unknown> {
    const at = clock()
    const batch = this.stamper.stamp(seededTurn(++this.turns), at)
    return () => appendBatch(db, SESSION, batch.events, batch.rows, at)
  }

  nextInputId(size: number): string {
    return `raw-${size}-${++this.admitted}`
  }
}

/** A cold open, timed: a new engine (or connection) reading the first screen; closing is not timed. */
async function coldOpenOf(env: BenchEnv, cfg: BenchConfig, side: SideName, raw: RawSide): Promise<number> {
  if (side === 'raw') {
    const t0 = performance.now()
    const db = raw.open()
    const rows = await rowsBelow(db, SESSION, cfg.tailLimit)
    const ms = performance.now() - t0
    db.close()
    if (rows.length !== cfg.tailLimit) throw new Error('short raw tail')
    return ms
  }
  const t0 = performance.now()
  const engine = createEngine({ ...env.engine, dbName: DB_NAME })
  await coldOpen(engine, cfg.tailLimit, SESSION)
  const ms = performance.now() - t0
  await engine.close()
  return ms
}

interface Measured {
  figures: Record<SideName, Figures>
  /** How long the measuring engine took to bring the session's search index into memory, untimed. */
  indexLoadMs: number
}

async function measure(
  env: BenchEnv,
  cfg: BenchConfig,
  raw: RawSide,
  nextTurn: () => number,
): Promise<Measured> {
  const times = {
    sessionline: {
      cold: [] as number[],
      admit: [] as number[],
      append: [] as number[],
      load: [] as number[],
    },
    raw: { cold: [] as number[], admit: [] as number[], append: [] as number[], load: [] as number[] },
  }
  // Cold opens are short and move most with the load: `coldReps` of them (15), as in (4).
  for (let rep = -1; rep < cfg.coldReps; rep++) {
    for (const side of order(rep + 1)) {
      const ms = await coldOpenOf(env, cfg, side, raw)
      if (rep >= 0) times[side].cold.push(ms)
    }
  }
  const engine = createEngine({ ...env.engine, dbName: DB_NAME })
  const db = raw.open()
  let indexLoadMs = 0
  try {
    for (let rep = -1; rep < REPS; rep++) {
      const admitMs = { sessionline: 0, raw: 0 }
      const slIds: string[] = []
      const rawIds: string[] = []
      for (let i = 0; i < ADMITS; i++) {
        for (const side of order(rep + 1 + i)) {
          if (side === 'sessionline') {
            const id = `growth-${cfg.seedTurns}-${rep}-${i}-${raw.turns}`
            slIds.push(id)
            admitMs.sessionline += await timed(() =>
              engine.admit(SESSION, { id, text: `a note ${i}`, delivery: 'queue' }),
            )
          } else {
            const id = raw.nextInputId(raw.turns)
            rawIds.push(id)
            admitMs.raw += await timed(() => admitLikeEngine(db, SESSION, id, `a note ${i}`, clock()))
          }
        }
      }
      // Untimed: the next size starts with no pending input, as this one did.
      for (const id of slIds) await engine.cancel(SESSION, id)
      await db.inputs.bulkPut(
        (await db.inputs.bulkGet(rawIds)).map((r) => ({ ...r!, status: 'cancelled' as const })),
      )
      const appendMs = { sessionline: 0, raw: 0 }
      for (let i = 0; i < TURNS_APPENDED; i++) {
        for (const side of order(rep + 1 + i)) {
          if (side === 'sessionline') {
            const turn = nextTurn()
            appendMs.sessionline += await timed(() => engine.append(SESSION, seededTurns(turn, turn)))
          } else {
            const write = raw.nextTurn(db)
            appendMs.raw += await timed(write)
          }
        }
      }
      // The warm-up's first write set this engine loading the session's search index in the
      // background, as any engine's first commit to a session does: a search waits for it to be
      // loaded and caught up, so that one-off cost lands here, untimed, not in the timed reps.
      if (rep === -1) indexLoadMs = await timed(() => engine.search('turn', { sessionId: SESSION, limit: 1 }))
      // Where the 2,000th newest row is now (untimed): every rep pages back over the same rows.
      const [slTarget, rawTarget] = [
        await seqOfNthNewest(engine, cfg.loadRows),
        await rawSeqOfNthNewest(db, cfg.loadRows),
      ]
      const loadMs = { sessionline: 0, raw: 0 }
      for (const side of order(rep + 1)) {
        if (side === 'sessionline') {
          const t0 = performance.now()
          const page = await engine.loadThrough(SESSION, { seq: slTarget, pageSize: cfg.pageSize })
          loadMs.sessionline = performance.now() - t0
          if (page.messages.length < cfg.loadRows)
            throw new Error(`loadThrough gave ${page.messages.length} rows`)
        } else {
          const t0 = performance.now()
          const rows = await pageBackThrough(db, SESSION, rawTarget, cfg.pageSize)
          loadMs.raw = performance.now() - t0
          if (rows.length < cfg.loadRows) throw new Error(`raw paging gave ${rows.length} rows`)
        }
      }
      if (rep < 0) continue
      for (const side of ['sessionline', 'raw'] as const) {
        times[side].admit.push(admitMs[side])
        times[side].append.push(appendMs[side])
        times[side].load.push(loadMs[side])
      }
    }
  } finally {
    await engine.close()
    db.close()
  }
  const figuresOf = (t: (typeof times)[SideName]): Figures => ({
    'cold-open-outline': figure(t.cold, 1),
    admit: figure(t.admit, ADMITS),
    'append-turn': figure(t.append, TURNS_APPENDED),
    loadThrough: figure(t.load, Math.ceil(cfg.loadRows / cfg.pageSize)),
  })
  return { figures: { sessionline: figuresOf(times.sessionline), raw: figuresOf(times.raw) }, indexLoadMs }
}

interface AtSize {
  measured: Measured
  /** Seeding, ms per turn added to reach this size. */
  seedMs: Record<SideName, number>
}

export async function runGrowth(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const sizes = [...cfg.growthSizes].sort((a, b) => a - b)
  if (sizes.length === 0) return []
  const created = await freshEngine(env, DB_NAME)
  await created.createSession({ id: SESSION, title: 'growth' })
  await created.close()
  const raw = await RawSide.create(env)
  let turns = 0
  const bySize = new Map<number, AtSize>()
  for (const size of sizes) {
    env.log(`growth: seeding to ${size.toLocaleString('en')} turns (sessionline, then raw)`)
    const seeded = turns
    // A seeding engine per size, closed (its search index written) before anything is timed.
    const engine = createEngine({ ...env.engine, dbName: DB_NAME })
    const t0 = performance.now()
    try {
      while (turns < size) {
        const last = Math.min(size, turns + cfg.seedTurnsPerWrite)
        await engine.append(SESSION, seededTurns(turns + 1, last))
        turns = last
      }
    } finally {
      await engine.close()
    }
    const slSeedMs = (performance.now() - t0) / Math.max(1, size - seeded)
    const rawSeedMs = await raw.seed(size, cfg.seedTurnsPerWrite)
    env.log(`growth: measuring at ${turns.toLocaleString('en')} turns`)
    const measured = await measure(env, cfg, raw, () => ++turns)
    if (raw.turns !== turns) throw new Error(`the sides drifted apart: ${turns} and ${raw.turns} turns`)
    bySize.set(size, { measured, seedMs: { sessionline: slSeedMs, raw: rawSeedMs } })
  }
  return growthComparisons(sizes, bySize)
}

function growthComparisons(sizes: number[], bySize: Map<number, AtSize>): Comparison[] {
  const first = sizes[0]!
  const smallest = bySize.get(first)!.measured.figures
  const ofTurns = (n: number) => `${n.toLocaleString('en')} turns`
  const out: Comparison[] = []
  for (const size of sizes) {
    const { measured, seedMs } = bySize.get(size)!
    const { sessionline, raw } = measured.figures
    const seeding = `seeding took ${seedMs.sessionline.toFixed(3)} ms per turn (raw: ${seedMs.raw.toFixed(3)})`
    const index = `; the measuring engine's search index loaded and caught up in ${measured.indexLoadMs.toFixed(0)} ms (untimed warm-up)`
    for (const metric of METRICS) {
      const { name, op } = WHAT[metric]
      out.push(
        compare(
          {
            id: `growth-${metric}-${size}`,
            name: `${name}, ${ofTurns(size)}`,
            op,
            ...(size > first ? { target: 1.5 } : {}),
            note: `sessionline at ${ofTurns(size)} against sessionline at ${ofTurns(first)}; ${seeding}${index}`,
          },
          sessionline[metric],
          smallest.sessionline[metric],
        ),
        compare(
          {
            id: `growth-raw-${metric}-${size}`,
            name: `raw Dexie: ${name}, ${ofTurns(size)}`,
            op,
            note: `both figures raw Dexie's (${WHAT[metric].raw}): at ${ofTurns(size)} (first) against at ${ofTurns(first)}`,
          },
          raw[metric],
          smallest.raw[metric],
        ),
        compare(
          {
            id: `growth-vs-raw-${metric}-${size}`,
            name: `${name}, ${ofTurns(size)}, against raw Dexie`,
            op,
            note: `raw Dexie at the same size: ${WHAT[metric].raw}`,
          },
          sessionline[metric],
          raw[metric],
        ),
      )
    }
  }
  return out
}
