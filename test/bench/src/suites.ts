/**
 * The benchmarks, written once for any environment (a module worker in Chromium, or Node on
 * fake-indexeddb). Each pairs sessionline with raw Dexie doing the same durable work in the
 * same run; databases are fresh per run and named per side.
 */

import type { Engine } from '../../../src/engine/types'
import { createEngine, type EngineOptions } from '../../../src/index'
import type { BenchConfig } from './config'
import { chunks, promptText, prose, Stamper, seededTurns, streamedTurnBody } from './fixtures'
import {
  admitLikeEngine,
  appendBatch,
  createRawSession,
  type DexieEnv,
  freshRaw,
  openRaw,
  pageBackThrough,
  promoteBatch,
  putReceipt,
  type RawDb,
  receipt,
  rowsBelow,
} from './raw'
import { type Comparison, compare, figure, measureSides, timeLoop } from './stats'

export interface BenchEnv {
  dexie: DexieEnv
  /** What every engine of the run gets besides its database name (Node: fake-indexeddb). */
  engine: Pick<EngineOptions, 'indexedDB' | 'IDBKeyRange'>
  log(message: string): void
}

/** Database names; the long session lives in its own pair so the write benchmarks never touch it. */
export const DB = {
  writesSl: 'bench-writes-sessionline',
  writesRaw: 'bench-writes-raw',
  longSl: 'bench-long-sessionline',
  longRaw: 'bench-long-raw',
} as const
export const LONG_SESSION = 'long'

const clock = () => Date.now()

async function freshEngine(env: BenchEnv, dbName: string): Promise<Engine> {
  await openRaw(dbName, env.dexie).delete() // start from nothing, whatever schema was there
  return createEngine({ ...env.engine, dbName })
}

// --- (1)–(3): writes ---------------------------------------------------------------------------

export async function runWrites(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const engine = await freshEngine(env, DB.writesSl)
  const raw = await freshRaw(DB.writesRaw, env.dexie)
  try {
    env.log('(1) admit')
    const admits = await benchAdmit(engine, raw, cfg)
    env.log('(2) batched append')
    const append = await benchAppend(engine, raw, cfg)
    env.log('(3) promote')
    const promote = await benchPromote(engine, raw, cfg)
    return [...admits, append, promote]
  } finally {
    await engine.close()
    raw.close()
  }
}

let sessionCounter = 0
const nextSessionId = (what: string, rep: number) => `${what}-${rep < 0 ? 'warm' : rep}-${++sessionCounter}`

async function benchAdmit(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison[]> {
  const n = cfg.admitCalls
  const text = (i: number) => prose(i, 100)
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: nextSessionId('admit', rep) })
        return timeLoop(n, (i) => engine.admit(id, { id: `${id}-in${i}`, text: text(i), delivery: 'steer' }))
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, nextSessionId('admit', rep), clock())
        return timeLoop(n, (i) => putReceipt(raw, receipt(id, `${id}-in${i}`, i + 1, text(i), clock())))
      },
      rawLikeEngine: async (rep) => {
        const { id } = await createRawSession(raw, nextSessionId('admit', rep), clock())
        return timeLoop(n, (i) => admitLikeEngine(raw, id, `${id}-in${i}`, text(i), clock()))
      },
    },
    { reps: cfg.writeReps, opsPerRep: n, warmup: true },
  )
  return [
    compare(
      {
        id: '1',
        name: 'admit, one durable receipt per call',
        op: 'admit',
        target: 1.5,
        note: 'raw: one inputs.put per transaction',
      },
      figures.sessionline,
      figures.raw,
    ),
    compare(
      {
        id: '1b',
        name: 'admit vs raw doing the same reads',
        op: 'admit',
        note: 'raw: get input by id + get session, put receipt + put session, one transaction',
      },
      figures.sessionline,
      figures.rawLikeEngine,
    ),
  ]
}

async function benchAppend(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison> {
  const perTurn = cfg.appendsPerTurn * cfg.eventsPerAppend
  const appends = cfg.appendTurns * cfg.appendsPerTurn
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: nextSessionId('append', rep) })
        let timed = 0
        for (let turn = 1; turn <= cfg.appendTurns; turn++) {
          await engine.admit(id, { id: `${id}-in${turn}`, text: promptText(turn), delivery: 'steer' })
          await engine.promote(id, 'settled')
          for (const batch of chunks(streamedTurnBody(turn, perTurn, id), cfg.eventsPerAppend)) {
            const t0 = performance.now()
            await engine.append(id, batch)
            timed += performance.now() - t0
          }
        }
        return timed
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, nextSessionId('append', rep), clock())
        const stamper = new Stamper(id, 2)
        let timed = 0
        for (let turn = 1; turn <= cfg.appendTurns; turn++) {
          const opening = stamper.stamp(openingOf(turn, `${id}-in${turn}`), clock())
          await appendBatch(raw, id, opening.events, opening.rows, clock())
          for (const batch of chunks(streamedTurnBody(turn, perTurn, id), cfg.eventsPerAppend)) {
            const at = clock()
            // Rows come ready-made: raw times the transaction alone, the floor sessionline is held to.
            const { events, rows } = stamper.stamp(batch, at)
            const t0 = performance.now()
            await appendBatch(raw, id, events, rows, at)
            timed += performance.now() - t0
          }
        }
        return timed
      },
    },
    { reps: cfg.writeReps, opsPerRep: appends, warmup: true },
  )
  return compare(
    {
      id: '2',
      name: `append a streamed turn, ${cfg.eventsPerAppend} events per append`,
      op: `append of ${cfg.eventsPerAppend} events`,
      target: 2,
      note: 'raw: bulkAdd events + bulkPut touched rows + put session, one transaction',
    },
    figures.sessionline,
    figures.raw,
  )
}

const openingOf = (turn: number, inputId: string) =>
  [
    { type: 'turn/start', data: { turn } },
    { type: 'user/message', data: { inputId, text: promptText(turn), delivery: 'steer', source: 'user' } },
  ] as const satisfies Parameters<Stamper['stamp']>[0]

async function benchPromote(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison> {
  const n = cfg.promoteCalls
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: nextSessionId('promote', rep) })
        let timed = 0
        for (let turn = 1; turn <= n; turn++) {
          await engine.admit(id, { id: `${id}-in${turn}`, text: promptText(turn), delivery: 'steer' })
          const t0 = performance.now()
          await engine.promote(id, 'settled')
          timed += performance.now() - t0
          await engine.append(id, [{ type: 'turn/end', data: { turn, reason: 'completed' } }])
        }
        return timed
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, nextSessionId('promote', rep), clock())
        const stamper = new Stamper(id, 2)
        let timed = 0
        for (let turn = 1; turn <= n; turn++) {
          const inputId = `${id}-in${turn}`
          await putReceipt(raw, receipt(id, inputId, turn, promptText(turn), clock()))
          const at = clock()
          const { events, rows } = stamper.stamp(openingOf(turn, inputId), at)
          const t0 = performance.now()
          await promoteBatch(raw, id, inputId, events, rows, at)
          timed += performance.now() - t0
          const end = stamper.stamp([{ type: 'turn/end', data: { turn, reason: 'completed' } }], clock())
          await appendBatch(raw, id, end.events, end.rows, clock())
        }
        return timed
      },
    },
    { reps: cfg.writeReps, opsPerRep: n, warmup: true },
  )
  return compare(
    {
      id: '3',
      name: "promote 'settled': open a turn with one pending steer",
      op: 'promote',
      note: 'raw: get session + input, add turn/start + user/message, put row, receipt and session',
    },
    figures.sessionline,
    figures.raw,
  )
}

// --- seeding the long session, and (7) memory -----------------------------------------------------

/** Reads the heap of the current JavaScript context after a full garbage collection. */
export interface HeapProbe {
  /** Bytes in use after collecting garbage. */
  measure(): Promise<number>
}

export interface SeedResult {
  side: 'sessionline' | 'raw'
  turns: number
  /** Transcript rows written (known on the raw side, which writes them itself). */
  rows?: number
  headSeq: number
  seedMs: number
  /** Bytes retained by the open engine / Dexie connection right after seeding. */
  heapAfterSeed?: number
  /** Bytes retained by a freshly opened engine / connection after its cold open. */
  heapAfterColdOpen?: number
}

/**
 * Writes the long session (turns `1..seedTurns`) on one side, in `seedTurnsPerWrite`-turn writes,
 * and measures what that side keeps on the heap afterwards and after a cold open.
 */
export async function seedLongSession(
  env: BenchEnv,
  side: 'sessionline' | 'raw',
  cfg: BenchConfig,
  heap?: HeapProbe,
): Promise<SeedResult> {
  const spans = chunks(
    Array.from({ length: cfg.seedTurns }, (_, i) => i + 1),
    cfg.seedTurnsPerWrite,
  )
  const before = await heap?.measure()
  let result: SeedResult
  if (side === 'sessionline') {
    const engine = await freshEngine(env, DB.longSl)
    await engine.createSession({ id: LONG_SESSION, title: 'long' })
    const t0 = performance.now()
    let headSeq = 0
    for (const span of spans) {
      ;({ headSeq } = await engine.append(LONG_SESSION, seededTurns(span[0]!, span[span.length - 1]!)))
    }
    const seedMs = performance.now() - t0
    const heapAfterSeed = await retained(heap, before)
    await engine.close()
    const beforeOpen = await heap?.measure()
    const reopened = createEngine({ ...env.engine, dbName: DB.longSl })
    const opened = await coldOpen(reopened, cfg.tailLimit)
    const heapAfterColdOpen = await retained(heap, beforeOpen, opened)
    await reopened.close()
    result = { side, turns: cfg.seedTurns, headSeq, seedMs, heapAfterSeed, heapAfterColdOpen }
  } else {
    const db = await freshRaw(DB.longRaw, env.dexie)
    await createRawSession(db, LONG_SESSION, clock())
    const stamper = new Stamper(LONG_SESSION, 2)
    const t0 = performance.now()
    let rows = 0
    for (const span of spans) {
      const at = clock()
      const batch = stamper.stamp(seededTurns(span[0]!, span[span.length - 1]!), at)
      rows += batch.rows.length
      await appendBatch(db, LONG_SESSION, batch.events, batch.rows, at)
    }
    const seedMs = performance.now() - t0
    const heapAfterSeed = await retained(heap, before)
    db.close()
    const beforeOpen = await heap?.measure()
    const reopened = openRaw(DB.longRaw, env.dexie)
    const tail = await rowsBelow(reopened, LONG_SESSION, cfg.tailLimit)
    const heapAfterColdOpen = await retained(heap, beforeOpen, tail)
    reopened.close()
    result = {
      side,
      turns: cfg.seedTurns,
      rows,
      headSeq: stamper.headSeq,
      seedMs,
      heapAfterSeed,
      heapAfterColdOpen,
    }
  }
  return result
}

/** What a page shows first on opening a session: the tail page and the turn outline. */
async function coldOpen(engine: Engine, limit: number) {
  const [page, outline] = await Promise.all([
    engine.page(LONG_SESSION, { limit }),
    engine.projection(LONG_SESSION, 'turnOutline'),
  ])
  if (page.messages.length !== limit || outline.length === 0) throw new Error('cold open read too little')
  return { page, outline }
}

/** Heap growth since `before`; `keep` stays reachable until measured, like what a page would hold. */
async function retained(heap: HeapProbe | undefined, before: number | undefined, keep?: unknown) {
  if (!heap || before === undefined) return undefined
  const after = await heap.measure()
  void keep
  return after - before
}

export function memoryComparisons(sl: SeedResult, raw: SeedResult): Comparison[] {
  const mb = (bytes: number | undefined) => figure([(bytes ?? 0) / 2 ** 20], 1)
  const ofTurns = `${sl.turns.toLocaleString('en')} turns`
  const rows: Comparison[] = [
    compare(
      {
        id: '7a',
        name: `seed ${ofTurns} (${rowCount(raw)} rows), writes of whole turns`,
        op: 'whole seeding',
        note: 'informational: sessionline appends validated events; raw bulk-writes prepared rows',
      },
      figure([sl.seedMs], sl.turns),
      figure([raw.seedMs], raw.turns),
    ),
  ]
  if (sl.heapAfterSeed === undefined || raw.heapAfterSeed === undefined) return rows
  rows.push(
    compare(
      {
        id: '7b',
        name: `heap retained after seeding ${ofTurns}`,
        op: 'MB',
        unit: 'MB',
        note: 'open engine vs open Dexie connection, after a forced GC',
      },
      mb(sl.heapAfterSeed),
      mb(raw.heapAfterSeed),
    ),
    compare(
      {
        id: '7c',
        name: `heap retained after a cold open of ${ofTurns}`,
        op: 'MB',
        unit: 'MB',
        note: 'sessionline holds the tail page, the outline and its fold caches; raw the tail rows',
      },
      mb(sl.heapAfterColdOpen),
      mb(raw.heapAfterColdOpen),
    ),
  )
  return rows
}

const rowCount = (r: SeedResult) => (r.rows ?? 0).toLocaleString('en')

// --- (4), (5): reads of the long session ---------------------------------------------------------

export async function runReads(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const out: Comparison[] = []
  env.log('(4) cold open')
  const cold = await measureSides(
    {
      sessionline: async () => {
        const t0 = performance.now()
        const engine = createEngine({ ...env.engine, dbName: DB.longSl })
        await coldOpen(engine, cfg.tailLimit)
        const ms = performance.now() - t0
        await engine.close()
        return ms
      },
      sessionlineTail: async () => {
        const t0 = performance.now()
        const engine = createEngine({ ...env.engine, dbName: DB.longSl })
        const page = await engine.page(LONG_SESSION, { limit: cfg.tailLimit })
        const ms = performance.now() - t0
        if (page.messages.length !== cfg.tailLimit) throw new Error('short tail')
        await engine.close()
        return ms
      },
      raw: async () => {
        const t0 = performance.now()
        const db = openRaw(DB.longRaw, env.dexie)
        const rows = await rowsBelow(db, LONG_SESSION, cfg.tailLimit)
        const ms = performance.now() - t0
        if (rows.length !== cfg.tailLimit) throw new Error('short tail')
        db.close()
        return ms
      },
    },
    { reps: cfg.coldReps, opsPerRep: 1, warmup: true },
  )
  const turns = `${cfg.seedTurns.toLocaleString('en')}-turn session`
  out.push(
    compare(
      {
        id: '4',
        name: `cold open: tail ${cfg.tailLimit} + outline of a ${turns}`,
        op: 'open',
        note: `new engine; raw: new Dexie connection reading the last ${cfg.tailLimit} rows`,
      },
      cold.sessionline,
      cold.raw,
    ),
    compare(
      {
        id: '4a',
        name: `cold open: tail ${cfg.tailLimit} only`,
        op: 'open',
        target: 2,
        note: 'new engine reading only the tail page',
      },
      cold.sessionlineTail,
      cold.raw,
    ),
  )

  const engine = createEngine({ ...env.engine, dbName: DB.longSl })
  const raw = openRaw(DB.longRaw, env.dexie)
  try {
    env.log('(4b) warm tail page')
    const warm = await measureSides(
      {
        sessionline: () => timeLoop(cfg.tailReads, () => engine.page(LONG_SESSION, { limit: cfg.tailLimit })),
        raw: () => timeLoop(cfg.tailReads, () => rowsBelow(raw, LONG_SESSION, cfg.tailLimit)),
      },
      { reps: cfg.tailReps, opsPerRep: cfg.tailReads, warmup: true },
    )
    out.push(
      compare(
        { id: '4b', name: `tail page of ${cfg.tailLimit}, engine already open`, op: 'page', target: 2 },
        warm.sessionline,
        warm.raw,
      ),
    )

    env.log('(5) loadThrough')
    const target = await seqOfNthNewestRow(engine, cfg.loadRows)
    const pages = Math.ceil(cfg.loadRows / cfg.pageSize)
    const load = await measureSides(
      {
        sessionline: async () => {
          const t0 = performance.now()
          const page = await engine.loadThrough(LONG_SESSION, { seq: target, pageSize: cfg.pageSize })
          const ms = performance.now() - t0
          if (page.messages.length < cfg.loadRows)
            throw new Error(`loadThrough gave ${page.messages.length} rows`)
          return ms
        },
        raw: async () => {
          const t0 = performance.now()
          const rows = await pageBackThrough(raw, LONG_SESSION, target, cfg.pageSize)
          const ms = performance.now() - t0
          if (rows.length < cfg.loadRows) throw new Error(`raw paging gave ${rows.length} rows`)
          return ms
        },
      },
      { reps: cfg.loadReps, opsPerRep: pages, warmup: true },
    )
    out.push(
      compare(
        {
          id: '5',
          name: `loadThrough ${cfg.loadRows.toLocaleString('en')} rows back, pages of ${cfg.pageSize}`,
          op: `page of ${cfg.pageSize}`,
          note: `raw: ${pages} reverse range reads of ${cfg.pageSize}`,
        },
        load.sessionline,
        load.raw,
      ),
    )
  } finally {
    await engine.close()
    raw.close()
  }
  return out
}

/** The seq of the `n`-th newest transcript row, found through the public API. */
async function seqOfNthNewestRow(engine: Engine, n: number): Promise<number> {
  let left = n
  let before: number | undefined
  let seq = 0
  while (left > 0) {
    const limit = Math.min(left, 1000)
    const page = await engine.page(LONG_SESSION, { limit, beforeSeq: before })
    if (page.messages.length < limit) throw new Error(`the long session has fewer than ${n} rows`)
    seq = page.baseSeq
    before = page.baseSeq
    left -= limit
  }
  return seq
}

// --- (6): the tail through Comlink ---------------------------------------------------------------

/** What the worker serves beside the engine for (6): the raw tail read. */
export function rawTailService(env: BenchEnv) {
  const db = openRaw(DB.longRaw, env.dexie)
  return {
    tail: (limit: number) => rowsBelow(db, LONG_SESSION, limit),
    close: () => db.close(),
  }
}
export type RawTailService = ReturnType<typeof rawTailService>

export interface RemoteTails {
  sessionline(limit: number): Promise<{ messages: readonly unknown[] }>
  raw(limit: number): Promise<readonly unknown[]>
}

/** (6) Times tail reads made from the page's side of a Comlink connection. */
export async function benchComlinkTail(remote: RemoteTails, cfg: BenchConfig): Promise<Comparison> {
  const check = (n: number) => {
    if (n !== cfg.tailLimit) throw new Error(`tail through Comlink gave ${n} rows`)
  }
  const figures = await measureSides(
    {
      sessionline: () =>
        timeLoop(cfg.comlinkCalls, async () =>
          check((await remote.sessionline(cfg.tailLimit)).messages.length),
        ),
      raw: () => timeLoop(cfg.comlinkCalls, async () => check((await remote.raw(cfg.tailLimit)).length)),
    },
    { reps: cfg.comlinkReps, opsPerRep: cfg.comlinkCalls, warmup: true },
  )
  return compare(
    {
      id: '6',
      name: `tail page of ${cfg.tailLimit} through Comlink, from the page`,
      op: 'page',
      target: 2,
      note: 'sessionline: connect() client; raw: Comlink.wrap of a Dexie tail read in the same worker',
    },
    figures.sessionline,
    figures.raw,
  )
}
