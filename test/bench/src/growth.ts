/**
 * Growth with session length (`--huge`): the cold open, admit, appending a turn and loadThrough
 * on one session grown to each of `growthSizes` turns in turn (1,000, 10,000, 100,000), each
 * figure against a session of the smallest size measured beside it, and raw Dexie doing the same
 * reads and writes on the same sessions in a database of its own: so IndexedDB's own growth can
 * be told apart from ours, and the machine's load from either.
 *
 * Four subjects per size, interleaved operation by operation (the first rotating): sessionline's
 * grown session and a fresh reference session of the smallest size in the same database, and
 * raw Dexie's two copies of them. Sizes are minutes apart (seeding 100,000 turns takes ten), and
 * on a shared machine the load moves by 2× in that time: a figure against the smallest size
 * measured minutes earlier is as much the load as the session, one against a reference measured
 * in the same seconds is the session's growth alone.
 *
 * Sessions are seeded through the engine's own `append` (whole turns, `seedTurnsPerWrite` per
 * call), so their projections are the ones the engine builds, never a hand-made copy; the raw
 * side gets the same events and rows (stamped and folded outside the timing) in bulk
 * transactions. Each size's seeding engine is closed before measuring: what it still had to do
 * in the background (writing the search index of the turns just seeded) is seeding, not the next
 * measurement. The measuring engine's first write brings each session's search index into
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

/** The two databases grown, and the grown session in each. */
export const GROWTH_DB = { sessionline: 'bench-growth', raw: 'bench-growth-raw' } as const
export const GROWTH_SESSION = 'growth'
const DB_NAME = GROWTH_DB.sessionline
const RAW_DB_NAME = GROWTH_DB.raw
const ADMITS = 50
const TURNS_APPENDED = 20
const REPS = 7

type Metric = 'cold-open-outline' | 'admit' | 'append-turn' | 'loadThrough'
type SideName = 'sessionline' | 'raw'
type SubjectName = 'sessionline' | 'sessionline-ref' | 'raw' | 'raw-ref'
const SUBJECTS: SubjectName[] = ['sessionline', 'sessionline-ref', 'raw', 'raw-ref']
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

/** The subjects in the order they go at step `i`: the first rotates, as in measureSides. */
const order = (i: number): SubjectName[] => SUBJECTS.map((_, k) => SUBJECTS[(i + k) % SUBJECTS.length]!)

/** One session of one side: its id, the prefix of its ids, and how many turns it has. */
class Session {
  turns = 0
  /** Raw only: stamps events and folds rows as the engine would. */
  readonly stamper: Stamper
  private admitted = 0
  constructor(
    readonly side: SideName,
    readonly id: string,
    readonly idPrefix: string,
  ) {
    this.stamper = new Stamper(id, 2)
  }

  nextInputId(): string {
    return `${this.idPrefix}note-${++this.admitted}`
  }
}

/** The seq of the `n`-th newest row (paging back through the public API). */
async function seqOfNthNewest(engine: Engine, sessionId: string, n: number): Promise<number> {
  let before: number | undefined
  for (let left = n; left > 0; ) {
    const limit = Math.min(left, 1000)
    const page = await engine.page(sessionId, { limit, beforeSeq: before })
    if (page.messages.length < limit) throw new Error(`${sessionId} has fewer than ${n} rows`)
    before = page.baseSeq
    left -= limit
  }
  return before ?? 0
}

async function rawSeqOfNthNewest(db: RawDb, sessionId: string, n: number): Promise<number> {
  const rows = await rowsBelow(db, sessionId, n)
  if (rows.length < n) throw new Error(`raw ${sessionId} has fewer than ${n} rows`)
  return rows[0]!.seq
}

/** Grows `session` to `size` turns through the engine, `perWrite` turns per append. */
async function seedSessionline(engine: Engine, session: Session, size: number, perWrite: number) {
  if (session.turns === 0) await engine.createSession({ id: session.id, title: session.id })
  while (session.turns < size) {
    const last = Math.min(size, session.turns + perWrite)
    await engine.append(session.id, seededTurns(session.turns + 1, last, session.idPrefix))
    session.turns = last
  }
}

/** Grows the raw copy of a session to `size` turns, `perWrite` turns per transaction; answers the ms. */
async function seedRaw(db: RawDb, session: Session, size: number, perWrite: number): Promise<number> {
  if (session.turns === 0) await createRawSession(db, session.id, clock())
  let ms = 0
  while (session.turns < size) {
    const last = Math.min(size, session.turns + perWrite)
    const at = clock()
    const batch = session.stamper.stamp(seededTurns(session.turns + 1, last, session.idPrefix), at)
    ms += await timed(() => appendBatch(db, session.id, batch.events, batch.rows, at))
    session.turns = last
  }
  return ms
}

interface Measured {
  figures: Record<SubjectName, Figures>
  /** How long the measuring engine took to bring both sessions' search indexes into memory, untimed. */
  indexLoadMs: number
}

type Subjects = Record<SubjectName, Session>

async function measure(env: BenchEnv, cfg: BenchConfig, subjects: Subjects): Promise<Measured> {
  const blank = () => ({
    cold: [] as number[],
    admit: [] as number[],
    append: [] as number[],
    load: [] as number[],
  })
  const times = Object.fromEntries(SUBJECTS.map((s) => [s, blank()])) as Record<
    SubjectName,
    ReturnType<typeof blank>
  >

  /** A cold open, timed: a new engine (or connection) reading the first screen; closing is not timed. */
  async function coldOpenOf(session: Session): Promise<number> {
    if (session.side === 'raw') {
      const t0 = performance.now()
      const db = openRaw(RAW_DB_NAME, env.dexie)
      const rows = await rowsBelow(db, session.id, cfg.tailLimit)
      const ms = performance.now() - t0
      db.close()
      if (rows.length !== cfg.tailLimit) throw new Error('short raw tail')
      return ms
    }
    const t0 = performance.now()
    const engine = createEngine({ ...env.engine, dbName: DB_NAME })
    await coldOpen(engine, cfg.tailLimit, session.id)
    const ms = performance.now() - t0
    await engine.close()
    return ms
  }

  // Cold opens are short and move most with the load: `coldReps` of them (15), as in (4).
  for (let rep = -1; rep < cfg.coldReps; rep++) {
    for (const name of order(rep + 1)) {
      const ms = await coldOpenOf(subjects[name])
      if (rep >= 0) times[name].cold.push(ms)
    }
  }

  const engine = createEngine({ ...env.engine, dbName: DB_NAME })
  const db = openRaw(RAW_DB_NAME, env.dexie)
  let indexLoadMs = 0

  const admit = (session: Session, id: string, i: number) =>
    session.side === 'sessionline'
      ? engine.admit(session.id, { id, text: `a note ${i}`, delivery: 'queue' })
      : admitLikeEngine(db, session.id, id, `a note ${i}`, clock())

  /** The next turn of `session`, prepared outside the timing (raw: stamped and folded). */
  function nextTurn(session: Session): () => Promise<unknown> {
    const turn = ++session.turns
    if (session.side === 'sessionline') {
      const events = seededTurns(turn, turn, session.idPrefix)
      return () => engine.append(session.id, events)
    }
    const at = clock()
    const batch = session.stamper.stamp(seededTurn(turn, session.idPrefix), at)
    return () => appendBatch(db, session.id, batch.events, batch.rows, at)
  }

  /** loadThrough (raw: paging back) to the 2,000th newest row as it stands now; its target is found untimed. */
  async function loadThroughOf(session: Session): Promise<() => Promise<unknown>> {
    if (session.side === 'sessionline') {
      const seq = await seqOfNthNewest(engine, session.id, cfg.loadRows)
      return async () => {
        const page = await engine.loadThrough(session.id, { seq, pageSize: cfg.pageSize })
        if (page.messages.length < cfg.loadRows)
          throw new Error(`loadThrough gave ${page.messages.length} rows`)
      }
    }
    const seq = await rawSeqOfNthNewest(db, session.id, cfg.loadRows)
    return async () => {
      const rows = await pageBackThrough(db, session.id, seq, cfg.pageSize)
      if (rows.length < cfg.loadRows) throw new Error(`raw paging gave ${rows.length} rows`)
    }
  }

  try {
    for (let rep = -1; rep < REPS; rep++) {
      const ms = Object.fromEntries(SUBJECTS.map((s) => [s, { admit: 0, append: 0, load: 0 }])) as Record<
        SubjectName,
        { admit: number; append: number; load: number }
      >
      const admitted = Object.fromEntries(SUBJECTS.map((s) => [s, [] as string[]])) as Record<
        SubjectName,
        string[]
      >
      for (let i = 0; i < ADMITS; i++) {
        for (const name of order(rep + 1 + i)) {
          const id = subjects[name].nextInputId()
          admitted[name].push(id)
          ms[name].admit += await timed(() => admit(subjects[name], id, i))
        }
      }
      // Untimed: the next size starts with no pending input, as this one did.
      for (const name of SUBJECTS) {
        const session = subjects[name]
        if (session.side === 'sessionline') {
          for (const id of admitted[name]) await engine.cancel(session.id, id)
        } else {
          const stored = await db.inputs.bulkGet(admitted[name])
          await db.inputs.bulkPut(stored.map((r) => ({ ...r!, status: 'cancelled' as const })))
        }
      }
      for (let i = 0; i < TURNS_APPENDED; i++) {
        for (const name of order(rep + 1 + i)) ms[name].append += await timed(nextTurn(subjects[name]))
      }
      // The warm-up's first writes set this engine loading both sessions' search indexes in the
      // background, as any engine's first commit to a session does: a search waits for each to be
      // loaded and caught up, so that one-off cost lands here, untimed, not in the timed reps.
      if (rep === -1) {
        indexLoadMs = await timed(async () => {
          for (const name of ['sessionline', 'sessionline-ref'] as const)
            await engine.search('turn', { sessionId: subjects[name].id, limit: 1 })
        })
      }
      const loads = new Map<SubjectName, () => Promise<unknown>>()
      for (const name of SUBJECTS) loads.set(name, await loadThroughOf(subjects[name]))
      for (const name of order(rep + 1)) ms[name].load = await timed(loads.get(name)!)
      if (rep < 0) continue
      for (const name of SUBJECTS) {
        times[name].admit.push(ms[name].admit)
        times[name].append.push(ms[name].append)
        times[name].load.push(ms[name].load)
      }
    }
  } finally {
    await engine.close()
    db.close()
  }
  const figuresOf = (t: ReturnType<typeof blank>): Figures => ({
    'cold-open-outline': figure(t.cold, 1),
    admit: figure(t.admit, ADMITS),
    'append-turn': figure(t.append, TURNS_APPENDED),
    loadThrough: figure(t.load, Math.ceil(cfg.loadRows / cfg.pageSize)),
  })
  const figures = Object.fromEntries(SUBJECTS.map((s) => [s, figuresOf(times[s])])) as Record<
    SubjectName,
    Figures
  >
  return { figures, indexLoadMs }
}

interface AtSize {
  measured: Measured
  /** Seeding the grown session, ms per turn added to reach this size. */
  seedMs: Record<SideName, number>
}

export async function runGrowth(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const sizes = [...cfg.growthSizes].sort((a, b) => a - b)
  if (sizes.length === 0) return []
  const smallest = sizes[0]!
  await (await freshEngine(env, DB_NAME)).close()
  ;(await freshRaw(RAW_DB_NAME, env.dexie)).close()
  const grown = {
    sessionline: new Session('sessionline', GROWTH_SESSION, ''),
    raw: new Session('raw', GROWTH_SESSION, ''),
  }
  const bySize = new Map<number, AtSize>()
  for (const size of sizes) {
    env.log(
      `growth: seeding to ${size.toLocaleString('en')} turns, and a new ${smallest.toLocaleString('en')}-turn reference`,
    )
    // A reference session of the smallest size, fresh at every size (the measurements add turns to it).
    const ref = (side: SideName) => new Session(side, `ref-${size}`, `ref-${size}-`)
    const subjects: Subjects = {
      sessionline: grown.sessionline,
      'sessionline-ref': ref('sessionline'),
      raw: grown.raw,
      'raw-ref': ref('raw'),
    }
    const seeded = grown.sessionline.turns
    const added = Math.max(1, size - seeded)
    // A seeding engine per size, closed (its search index written) before anything is timed.
    const engine = createEngine({ ...env.engine, dbName: DB_NAME })
    let slSeedMs: number
    try {
      slSeedMs = await timed(() => seedSessionline(engine, grown.sessionline, size, cfg.seedTurnsPerWrite))
      await seedSessionline(engine, subjects['sessionline-ref'], smallest, cfg.seedTurnsPerWrite)
    } finally {
      await engine.close()
    }
    const db = openRaw(RAW_DB_NAME, env.dexie)
    let rawSeedMs: number
    try {
      rawSeedMs = await seedRaw(db, grown.raw, size, cfg.seedTurnsPerWrite)
      await seedRaw(db, subjects['raw-ref'], smallest, cfg.seedTurnsPerWrite)
    } finally {
      db.close()
    }
    env.log(`growth: measuring at ${grown.sessionline.turns.toLocaleString('en')} turns`)
    const measured = await measure(env, cfg, subjects)
    if (grown.raw.turns !== grown.sessionline.turns)
      throw new Error(`the sides drifted apart: ${grown.sessionline.turns} and ${grown.raw.turns} turns`)
    bySize.set(size, { measured, seedMs: { sessionline: slSeedMs / added, raw: rawSeedMs / added } })
  }
  return growthComparisons(sizes, bySize)
}

function growthComparisons(sizes: number[], bySize: Map<number, AtSize>): Comparison[] {
  const smallest = sizes[0]!
  const ofTurns = (n: number) => `${n.toLocaleString('en')} turns`
  const out: Comparison[] = []
  for (const size of sizes) {
    const { measured, seedMs } = bySize.get(size)!
    const f = measured.figures
    const seeding = `seeding took ${seedMs.sessionline.toFixed(3)} ms per turn (raw: ${seedMs.raw.toFixed(3)})`
    const index = `; the measuring engine's search indexes loaded and caught up in ${measured.indexLoadMs.toFixed(0)} ms (untimed warm-up)`
    const reference = `a ${ofTurns(smallest)} session in the same database, measured beside it`
    for (const metric of METRICS) {
      const { name, op } = WHAT[metric]
      out.push(
        compare(
          {
            id: `growth-${metric}-${size}`,
            name: `${name}, ${ofTurns(size)}`,
            op,
            ...(size > smallest ? { target: 1.5 } : {}),
            note: `sessionline's ${ofTurns(size)} session against ${reference}; ${seeding}${index}`,
          },
          f.sessionline[metric],
          f['sessionline-ref'][metric],
        ),
        compare(
          {
            id: `growth-raw-${metric}-${size}`,
            name: `raw Dexie: ${name}, ${ofTurns(size)}`,
            op,
            note: `both figures raw Dexie's (${WHAT[metric].raw}): the ${ofTurns(size)} session (first) against ${reference}`,
          },
          f.raw[metric],
          f['raw-ref'][metric],
        ),
        compare(
          {
            id: `growth-vs-raw-${metric}-${size}`,
            name: `${name}, ${ofTurns(size)}, against raw Dexie`,
            op,
            note: `raw Dexie on the same session: ${WHAT[metric].raw}`,
          },
          f.sessionline[metric],
          f.raw[metric],
        ),
      )
    }
  }
  return out
}
