/**
 * (1) admit, (2) batched append, (3) promote: sessionline's writes against raw Dexie writing
 * the same durable result. One step of each benchmark is one operation (or one streamed turn),
 * and the sides take turns step by step.
 */
import { PERSIST_DELAY } from '../../../src/engine/search/index'
import type { Engine } from '../../../src/engine/types'
import type { SessionEvent } from '../../../src/schema/events'
import type { BenchConfig } from './config'
import { type BenchEnv, clock, DB, freshEngine, newSessionId } from './env'
import { chunks, promptText, prose, Stamper, streamedTurnBody } from './fixtures'
import {
  admitAtOnce,
  admitLikeEngine,
  appendBatch,
  createRawSession,
  freshRaw,
  promoteBatch,
  putReceipt,
  type RawDb,
  receipt,
} from './raw'
import { type Comparison, compare, type Figure, measureSides, timed } from './stats'

export async function runWrites(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const engine = await freshEngine(env, DB.writesSl)
  const raw = await freshRaw(DB.writesRaw, env.dexie)
  try {
    env.log('(1) admit')
    const admits = await benchAdmit(engine, raw, cfg)
    env.log('(1c) admits issued at once')
    const concurrent = await benchAdmitConcurrent(engine, raw, cfg)
    env.log('(2) batched append')
    const append = await benchAppend(engine, raw, cfg)
    env.log('(3) promote')
    const promote = await benchPromote(engine, raw, cfg)
    env.log('(8) one long answer streamed in 1 KB deltas')
    const stream = await benchStream(env, engine, cfg)
    return [...admits, concurrent, append, promote, ...stream]
  } finally {
    await engine.close()
    raw.close()
  }
}

async function benchAdmit(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison[]> {
  const text = (i: number) => prose(i, 100)
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: newSessionId('admit', rep) })
        return (i) => timed(() => engine.admit(id, { id: `${id}-in${i}`, text: text(i), delivery: 'steer' }))
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, newSessionId('admit', rep), clock())
        return (i) => timed(() => putReceipt(raw, receipt(id, `${id}-in${i}`, i + 1, text(i), clock())))
      },
      rawLikeEngine: async (rep) => {
        const { id } = await createRawSession(raw, newSessionId('admit', rep), clock())
        return (i) => timed(() => admitLikeEngine(raw, id, `${id}-in${i}`, text(i), clock()))
      },
      rawAtOnce: async (rep) => {
        const session = await createRawSession(raw, newSessionId('admit', rep), clock())
        return (i) => timed(() => admitAtOnce(raw, session, `${session.id}-in${i}`, text(i), clock()))
      },
    },
    { reps: cfg.writeReps, steps: cfg.admitCalls, warmup: true },
  )
  return [
    // Judged against raw Dexie issuing the requests an admit needs, at once as the engine issues
    // them: the reads of the session row and of the id's owner are what make an admit idempotent
    // and its seq safe across tabs, so one bare put is a floor no admit can reach (issue 28).
    compare(
      {
        id: 'admit',
        name: 'admit, one durable receipt per call, vs raw issuing the same requests',
        op: 'admit',
        target: 1.15,
        note: 'raw: get session + get row by id, add receipt + put session, all at once, one transaction (the requests of an admit)',
      },
      figures.sessionline,
      figures.rawAtOnce,
    ),
    compare(
      {
        id: 'admit-one-put',
        name: 'admit vs one raw put',
        op: 'admit',
        note: 'raw: one inputs.put per transaction (no idempotency, no seq: information, not a target)',
      },
      figures.sessionline,
      figures.raw,
    ),
    compare(
      {
        id: 'admit-like-raw',
        name: 'admit vs raw doing the same reads',
        op: 'admit',
        note: 'raw: get input by id + get session, put receipt + put session, one transaction',
      },
      figures.sessionline,
      figures.rawLikeEngine,
    ),
  ]
}

/** `turn/start` + `user/message`: what a promotion that opens turn `turn` logs. */
const openingOf = (turn: number, inputId: string): SessionEvent[] => [
  { type: 'turn/start', data: { turn } },
  { type: 'user/message', data: { inputId, text: promptText(turn), delivery: 'steer', source: 'user' } },
]

async function benchAppend(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison> {
  const perTurn = cfg.appendsPerTurn * cfg.eventsPerAppend
  // One step is one streamed turn: opened untimed, then its appends, timed.
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: newSessionId('append', rep) })
        return async (i) => {
          const turn = i + 1
          await engine.admit(id, { id: `${id}-in${turn}`, text: promptText(turn), delivery: 'steer' })
          await engine.promote(id, 'settled')
          let ms = 0
          for (const batch of chunks(streamedTurnBody(turn, perTurn, id), cfg.eventsPerAppend)) {
            ms += await timed(() => engine.append(id, batch))
          }
          return ms
        }
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, newSessionId('append', rep), clock())
        const stamper = new Stamper(id, 2)
        return async (i) => {
          const turn = i + 1
          const opening = stamper.stamp(openingOf(turn, `${id}-in${turn}`), clock())
          await appendBatch(raw, id, opening.events, opening.rows, clock())
          let ms = 0
          for (const batch of chunks(streamedTurnBody(turn, perTurn, id), cfg.eventsPerAppend)) {
            const at = clock()
            // Rows come ready-made: raw times the transaction alone, the floor sessionline is held to.
            const { events, rows } = stamper.stamp(batch, at)
            ms += await timed(() => appendBatch(raw, id, events, rows, at))
          }
          return ms
        }
      },
    },
    {
      reps: cfg.writeReps,
      steps: cfg.appendTurns,
      opsPerRep: cfg.appendTurns * cfg.appendsPerTurn,
      warmup: true,
    },
  )
  return compare(
    {
      id: 'append',
      name: `append a streamed turn, ${cfg.eventsPerAppend} events per append`,
      op: `append of ${cfg.eventsPerAppend} events`,
      target: 2,
      note: 'raw: bulkAdd events + bulkPut touched rows + put session, one transaction',
    },
    figures.sessionline,
    figures.raw,
  )
}

async function benchPromote(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison> {
  const endOf = (turn: number): SessionEvent[] => [{ type: 'turn/end', data: { turn, reason: 'completed' } }]
  // One step: admit (untimed), promote (timed), end the turn (untimed).
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: newSessionId('promote', rep) })
        return async (i) => {
          const turn = i + 1
          await engine.admit(id, { id: `${id}-in${turn}`, text: promptText(turn), delivery: 'steer' })
          const ms = await timed(() => engine.promote(id, 'settled'))
          await engine.append(id, endOf(turn))
          return ms
        }
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, newSessionId('promote', rep), clock())
        const stamper = new Stamper(id, 2)
        return async (i) => {
          const turn = i + 1
          const inputId = `${id}-in${turn}`
          await putReceipt(raw, receipt(id, inputId, turn, promptText(turn), clock()))
          const at = clock()
          const { events, rows } = stamper.stamp(openingOf(turn, inputId), at)
          const ms = await timed(() => promoteBatch(raw, id, inputId, events, rows, at))
          const end = stamper.stamp(endOf(turn), clock())
          await appendBatch(raw, id, end.events, end.rows, clock())
          return ms
        }
      },
    },
    { reps: cfg.writeReps, steps: cfg.promoteCalls, warmup: true },
  )
  return compare(
    {
      id: 'promote',
      name: "promote 'settled': open a turn with one pending steer",
      op: 'promote',
      note: 'raw: get session + input, add turn/start + user/message, put row, receipt and session',
    },
    figures.sessionline,
    figures.raw,
  )
}

async function benchAdmitConcurrent(engine: Engine, raw: RawDb, cfg: BenchConfig): Promise<Comparison> {
  const n = cfg.concurrentAdmits
  const text = (i: number) => prose(i, 100)
  const figures = await measureSides(
    {
      sessionline: async (rep) => {
        const { id } = await engine.createSession({ id: newSessionId('burst', rep) })
        return () =>
          timed(() =>
            Promise.all(
              Array.from({ length: n }, (_, i) =>
                engine.admit(id, { id: `${id}-in${i}`, text: text(i), delivery: 'steer' }),
              ),
            ),
          )
      },
      raw: async (rep) => {
        const { id } = await createRawSession(raw, newSessionId('burst', rep), clock())
        return () =>
          timed(() =>
            Promise.all(
              Array.from({ length: n }, (_, i) =>
                putReceipt(raw, receipt(id, `${id}-in${i}`, i + 1, text(i), clock())),
              ),
            ),
          )
      },
    },
    { reps: cfg.writeReps, steps: 1, opsPerRep: n, warmup: true },
  )
  return compare(
    {
      id: 'admit-concurrent',
      name: `${n} admits issued at once`,
      op: 'admit',
      target: 0.2,
      note: `raw: ${n} concurrent inputs.put, one transaction each`,
    },
    figures.sessionline,
    figures.raw,
  )
}

/**
 * Bytes handed to IndexedDB while `run` runs, estimated from the values written (their JSON
 * length: close to the structured clone's size for text-heavy rows). Counts every put and add
 * of this realm, whoever issues it.
 */
async function bytesWritten(env: BenchEnv, run: () => Promise<void>): Promise<number> {
  const proto = env.objectStore.prototype
  const { put, add } = proto
  let bytes = 0
  const count = (value: unknown) => {
    bytes += JSON.stringify(value)?.length ?? 0
  }
  proto.put = function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
    count(value)
    return put.call(this, value, key)
  }
  proto.add = function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
    count(value)
    return add.call(this, value, key)
  }
  try {
    await run()
  } finally {
    proto.put = put
    proto.add = add
  }
  return bytes
}

const p95 = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] ?? 0
}

/** A figure of one number (a byte count, a percentile) for `compare`. */
const single = (value: number, reps: number): Figure => ({
  reps,
  opsPerRep: 1,
  median: value,
  perOp: value,
  min: value,
  max: value,
  all: [value],
})

/** Long enough for the search index to store what the last commit changed (it waits PERSIST_DELAY). */
const indexStored = () => new Promise((resolve) => setTimeout(resolve, PERSIST_DELAY + 500))

/**
 * (8) One answer of `streamKb` KB streamed the way the runner flushes it: one append per 1 KB
 * delta. Bytes written to IndexedDB ÷ the answer's bytes, and the p95 flush near the end of the
 * answer ÷ the p95 flush of its first KBs.
 */
async function benchStream(env: BenchEnv, engine: Engine, cfg: BenchConfig): Promise<Comparison[]> {
  const deltas = cfg.streamKb
  const window = Math.max(5, Math.floor(deltas / 10))
  const early: number[] = []
  const late: number[] = []
  let written = 0
  let answer = 0
  // The search index of what the steps before wrote is stored a second after their last write:
  // not this answer's bytes.
  await indexStored()
  for (let rep = 0; rep < cfg.streamReps; rep++) {
    const { id } = await engine.createSession({ id: newSessionId('stream', rep) })
    await engine.admit(id, { id: `${id}-in1`, text: promptText(1), delivery: 'steer' })
    await engine.promote(id, 'settled')
    const messageId = `${id}-m1`
    written += await bytesWritten(env, async () => {
      await engine.append(id, [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId, turn: 1, step: 1 } },
      ])
      for (let i = 0; i < deltas; i++) {
        const text = prose(i, 1024)
        answer += text.length
        const ms = await timed(() =>
          engine.append(id, [{ type: 'assistant/delta', data: { messageId, text } }]),
        )
        if (i < window) early.push(ms)
        if (i >= deltas - window) late.push(ms)
      }
      await engine.append(id, [
        { type: 'assistant/end', data: { messageId, finish: 'stop', usage: { input: 10, output: 10 } } },
        { type: 'step/end', data: { turn: 1, step: 1, usage: { input: 10, output: 10 } } },
        { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
      ])
      // This answer's search index is written too, in the background: counted here, with it.
      await indexStored()
    })
  }
  const kb = (bytes: number) => Math.round(bytes / 102.4) / 10
  return [
    compare(
      {
        id: 'stream-bytes',
        name: `bytes written for a ${cfg.streamKb} KB answer in 1 KB deltas`,
        op: 'answer',
        unit: 'KB',
        target: 3,
        note: "baseline: the answer's own bytes; written: JSON size of every value put or added",
      },
      single(kb(written / cfg.streamReps), cfg.streamReps),
      single(kb(answer / cfg.streamReps), cfg.streamReps),
    ),
    compare(
      {
        id: 'stream-flush',
        name: `p95 delta flush at ${cfg.streamKb} KB vs in the first ${window} KB`,
        op: 'append of 1 delta',
        target: 1.5,
        note: `baseline: p95 of the first ${window} flushes; sessionline: p95 of the last ${window}`,
      },
      single(p95(late), late.length),
      single(p95(early), early.length),
    ),
  ]
}
