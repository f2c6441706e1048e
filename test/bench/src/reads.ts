/**
 * (4) cold open, (4b) warm tail, (5) loadThrough, (6) the tail through Comlink: reads of the
 * long session, sessionline against raw Dexie reading the same rows by `[sessionId+seq]`.
 */
import { foldEvents, initFolds } from '../../../src/core/folds'
import { REBUILD_BATCH } from '../../../src/engine/cache/load'
import type { Engine } from '../../../src/engine/types'
import type { BenchConfig } from './config'
import { type BenchEnv, DB, LONG_SESSION, openEngine } from './env'
import { openRaw, pageBackThrough, rowsBelow } from './raw'
import { coldOpen } from './seed'
import { type Comparison, compare, measureSides, timed } from './stats'

export async function runReads(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  env.log('(4) cold open')
  const out = await benchColdOpen(env, cfg)
  const engine = openEngine(env, DB.longSl)
  const raw = openRaw(DB.longRaw, env.dexie)
  try {
    env.log('(4b) warm tail page')
    const warm = await measureSides(
      {
        sessionline: async () => () => timed(() => engine.page(LONG_SESSION, { limit: cfg.tailLimit })),
        raw: async () => () => timed(() => rowsBelow(raw, LONG_SESSION, cfg.tailLimit)),
      },
      { reps: cfg.tailReps, steps: cfg.tailReads, warmup: true },
    )
    out.push(
      compare(
        {
          id: 'tail-warm',
          name: `tail page of ${cfg.tailLimit}, engine already open`,
          op: 'page',
          target: 2,
        },
        warm.sessionline,
        warm.raw,
      ),
    )
    env.log('(5) loadThrough')
    out.push(await benchLoadThrough(engine, raw, cfg))
  } finally {
    await engine.close()
    raw.close()
  }
  return out
}

async function benchColdOpen(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const limit = cfg.tailLimit
  /** Opens a new engine, runs `read`, and times both; closing is not timed. */
  const fromNewEngine = (read: (engine: Engine) => Promise<unknown>) => async () => async () => {
    const t0 = performance.now()
    const engine = openEngine(env, DB.longSl)
    await read(engine)
    const ms = performance.now() - t0
    await engine.close()
    return ms
  }
  const cold = await measureSides(
    {
      sessionline: fromNewEngine((engine) => coldOpen(engine, limit)),
      sessionlineTail: fromNewEngine(async (engine) => {
        const page = await engine.page(LONG_SESSION, { limit })
        if (page.messages.length !== limit) throw new Error('short tail')
      }),
      raw: async () => async () => {
        const t0 = performance.now()
        const db = openRaw(DB.longRaw, env.dexie)
        const rows = await rowsBelow(db, LONG_SESSION, limit)
        const ms = performance.now() - t0
        if (rows.length !== limit) throw new Error('short tail')
        db.close()
        return ms
      },
      replay: async () => async () => {
        const t0 = performance.now()
        const db = openRaw(DB.longRaw, env.dexie)
        await replayWholeLog(db, LONG_SESSION, limit)
        const ms = performance.now() - t0
        db.close()
        return ms
      },
    },
    { reps: cfg.coldReps, steps: 1, warmup: true },
  )
  const session = `a ${cfg.seedTurns.toLocaleString('en')}-turn session`
  return [
    compare(
      {
        id: 'cold-open-outline',
        name: `cold open: tail ${limit} + outline of ${session}`,
        op: 'open',
        target: 3,
        note: `a new engine; raw: a new Dexie connection reading the last ${limit} rows`,
      },
      cold.sessionline,
      cold.raw,
    ),
    compare(
      {
        id: 'cold-open-outline-vs-replay',
        name: `cold open: tail ${limit} + outline of ${session}, vs replaying its log`,
        op: 'open',
        target: 0.1,
        note: 'baseline: a new connection reading the tail and folding every event of the log (the projections of a cold open without a cache)',
      },
      cold.sessionline,
      cold.replay,
    ),
    compare(
      {
        id: 'cold-open-tail',
        name: `cold open: tail ${limit} only, ${session}`,
        op: 'open',
        target: 2,
        note: 'a new engine reading the tail page alone',
      },
      cold.sessionlineTail,
      cold.raw,
    ),
  ]
}

/**
 * A cold open without cached projections: the tail rows, and every event of the log read in
 * batches (as the engine's rebuild reads them) and folded into the transcript, outline and usage.
 */
async function replayWholeLog(db: ReturnType<typeof openRaw>, sessionId: string, limit: number) {
  const tail = rowsBelow(db, sessionId, limit)
  let folds = initFolds()
  let after = 0
  for (;;) {
    const events = await db.events
      .where('[sessionId+seq]')
      .between([sessionId, after], [sessionId, Number.POSITIVE_INFINITY], false, true)
      .limit(REBUILD_BATCH)
      .toArray()
    folds = foldEvents(folds, events).folds
    after = events.at(-1)?.seq ?? after
    if (events.length < REBUILD_BATCH) break
  }
  if ((await tail).length !== limit || folds.turnOutline.entries.length === 0)
    throw new Error('replay read too little')
  return folds
}

async function benchLoadThrough(engine: Engine, raw: ReturnType<typeof openRaw>, cfg: BenchConfig) {
  const target = await seqOfNthNewestRow(engine, cfg.loadRows)
  const pages = Math.ceil(cfg.loadRows / cfg.pageSize)
  const enough = (n: number, who: string) => {
    if (n < cfg.loadRows) throw new Error(`${who} loaded ${n} rows, fewer than ${cfg.loadRows}`)
  }
  const load = await measureSides(
    {
      sessionline: async () => async () => {
        const t0 = performance.now()
        const page = await engine.loadThrough(LONG_SESSION, { seq: target, pageSize: cfg.pageSize })
        const ms = performance.now() - t0
        enough(page.messages.length, 'loadThrough')
        return ms
      },
      raw: async () => async () => {
        const t0 = performance.now()
        const rows = await pageBackThrough(raw, LONG_SESSION, target, cfg.pageSize)
        const ms = performance.now() - t0
        enough(rows.length, 'raw paging')
        return ms
      },
    },
    { reps: cfg.loadReps, steps: 1, opsPerRep: pages, warmup: true },
  )
  return compare(
    {
      id: 'loadThrough',
      name: `loadThrough ${cfg.loadRows.toLocaleString('en')} rows back, pages of ${cfg.pageSize}`,
      op: `page of ${cfg.pageSize}`,
      target: 1.3,
      note: `one loadThrough call; raw: ${pages} reverse range reads of ${cfg.pageSize}, one transaction each`,
    },
    load.sessionline,
    load.raw,
  )
}

/** The seq of the `n`-th newest transcript row, found through the public API. */
async function seqOfNthNewestRow(engine: Engine, n: number): Promise<number> {
  let left = n
  let before: number | undefined
  while (left > 0) {
    const limit = Math.min(left, 1000)
    const page = await engine.page(LONG_SESSION, { limit, beforeSeq: before })
    if (page.messages.length < limit) throw new Error(`the long session has fewer than ${n} rows`)
    before = page.baseSeq
    left -= limit
  }
  return before ?? 0
}

// --- (6) ---------------------------------------------------------------------------------------------

/** What the worker serves beside the engine for (6): raw Dexie's tail read. */
export function rawTailService(env: BenchEnv) {
  const db = openRaw(DB.longRaw, env.dexie)
  return {
    tail: (limit: number) => rowsBelow(db, LONG_SESSION, limit),
    close: () => db.close(),
  }
}
export type RawTailService = ReturnType<typeof rawTailService>

/** The two tail reads as the page calls them. */
export interface RemoteTails {
  sessionline(limit: number): Promise<{ messages: readonly unknown[] }>
  raw(limit: number): Promise<readonly unknown[]>
}

/** (6) Times tail reads made from the page's side of a Comlink connection. */
export async function benchComlinkTail(remote: RemoteTails, cfg: BenchConfig): Promise<Comparison> {
  const check = (n: number) => {
    if (n !== cfg.tailLimit) throw new Error(`the tail through Comlink gave ${n} rows`)
  }
  const figures = await measureSides(
    {
      sessionline: async () => () =>
        timed(async () => check((await remote.sessionline(cfg.tailLimit)).messages.length)),
      raw: async () => () => timed(async () => check((await remote.raw(cfg.tailLimit)).length)),
    },
    { reps: cfg.comlinkReps, steps: cfg.comlinkCalls, warmup: true },
  )
  return compare(
    {
      id: 'tail-comlink',
      name: `tail page of ${cfg.tailLimit} through Comlink, from the page`,
      op: 'page',
      target: 2,
      note: 'sessionline: a connect() client; raw: Comlink.wrap of a Dexie tail read in the same worker',
    },
    figures.sessionline,
    figures.raw,
  )
}
