/**
 * (1) admit, (2) batched append, (3) promote: sessionline's writes against raw Dexie writing
 * the same durable result. One step of each benchmark is one operation (or one streamed turn),
 * and the sides take turns step by step.
 */
import type { Engine } from '../../../src/engine/types'
import type { SessionEvent } from '../../../src/schema/events'
import type { BenchConfig } from './config'
import { type BenchEnv, clock, DB, freshEngine, newSessionId } from './env'
import { chunks, promptText, prose, Stamper, streamedTurnBody } from './fixtures'
import {
  admitLikeEngine,
  appendBatch,
  createRawSession,
  freshRaw,
  promoteBatch,
  putReceipt,
  type RawDb,
  receipt,
} from './raw'
import { type Comparison, compare, measureSides, timed } from './stats'

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
    },
    { reps: cfg.writeReps, steps: cfg.admitCalls, warmup: true },
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
      id: '3',
      name: "promote 'settled': open a turn with one pending steer",
      op: 'promote',
      note: 'raw: get session + input, add turn/start + user/message, put row, receipt and session',
    },
    figures.sessionline,
    figures.raw,
  )
}
