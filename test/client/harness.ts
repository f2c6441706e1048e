/**
 * A page and a worker for client tests: a real engine on fake-indexeddb served by `exposeEngine`
 * on one port of a MessageChannel, and `connect` on the other, through a port wrapper that can
 * stall (drop what the page sends, as a hung worker would) and count calls by method.
 */

import type { Endpoint } from 'comlink'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { type ConnectOptions, connect } from '../../src/client/connect'
import type { SessionlineClient, SessionView, TimelineSnapshot } from '../../src/client/types'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import { exposeEngine } from '../../worker/index'
import { freshDbName, immediateSchedule } from '../support/engines'

export interface Page {
  client: SessionlineClient
  /** The engine as the worker holds it (for seeding; the page only uses `client`). */
  engine: Engine
  dbName: string
  /** While true, calls from the page never reach the worker. */
  stall(on: boolean): void
  /** While true, calls from the page wait; they reach the worker, in order, once it is false again. */
  hold(on: boolean): void
  /** Calls the page made, by method name. */
  calls: Map<string, number>
  close(): Promise<void>
}

export async function openPage(
  options: ConnectOptions & { broadcast?: boolean; firstScreen?: boolean } = {},
): Promise<Page> {
  const { dbName: named, broadcast, firstScreen, ...connectOptions } = options
  const dbName = named ?? freshDbName('client')
  const engine = createEngine({
    indexedDB,
    IDBKeyRange,
    schedule: immediateSchedule,
    dbName,
    broadcast: broadcast ?? false,
  })
  const { port1, port2 } = new MessageChannel()
  exposeEngine(engine, port1)
  let stalled = false
  let held: (() => void)[] | undefined
  const calls = new Map<string, number>()
  const endpoint: Endpoint = {
    postMessage(message: { type?: string; path?: string[] }, transfer?: Transferable[]) {
      if (stalled) return
      if (held) {
        held.push(() => endpoint.postMessage(message, transfer))
        return
      }
      const method = message.type === 'APPLY' ? message.path?.join('.') : undefined
      if (method) calls.set(method, (calls.get(method) ?? 0) + 1)
      port2.postMessage(message, transfer ?? [])
    },
    addEventListener: port2.addEventListener.bind(port2),
    removeEventListener: port2.removeEventListener.bind(port2),
    start: () => port2.start(),
  }
  // The page reads first screens itself only when a test asks (docs/decisions/0038).
  const client = connect(endpoint, {
    ...connectOptions,
    ...(firstScreen && { dbName, indexedDB, IDBKeyRange }),
  })
  return {
    client,
    engine,
    dbName,
    stall: (on) => {
      stalled = on
    },
    hold: (on) => {
      const waiting = held
      held = on ? (held ?? []) : undefined
      if (!on) for (const send of waiting ?? []) send()
    },
    calls,
    async close() {
      await client.close()
      await engine.close()
      port1.close()
      port2.close()
    },
  }
}

/** Resolves with the first snapshot (now or later) that satisfies `ok`. */
export function until(view: SessionView, ok: (s: TimelineSnapshot) => boolean): Promise<TimelineSnapshot> {
  return new Promise((resolve) => {
    const check = () => {
      const s = view.getSnapshot()
      if (!ok(s)) return false
      stop()
      resolve(s)
      return true
    }
    const stop = view.subscribe(check)
    check()
  })
}

export const ready = (view: SessionView) => until(view, (s) => s.status !== 'loading')

/** Every snapshot the view publishes from now on. */
export function record(view: SessionView): TimelineSnapshot[] {
  const seen = [view.getSnapshot()]
  view.subscribe(() => seen.push(view.getSnapshot()))
  return seen
}

/** The events of one finished turn: a prompt and an answer (two transcript rows). */
export function turnEvents(
  turn: number,
  prompt = `question ${turn}`,
  answer = `answer ${turn}`,
): SessionEvent[] {
  const messageId = `a-${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    { type: 'user/message', data: { inputId: `u-${turn}`, text: prompt, delivery: 'steer', source: 'user' } },
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: answer } },
    { type: 'assistant/end', data: { messageId, finish: 'stop' } },
    { type: 'step/end', data: { turn, step: 1 } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

/** Appends `turns` finished turns after `from`, `batch` turns per transaction. */
export async function seedTurns(engine: Engine, sessionId: string, turns: number, batch = 250, from = 0) {
  for (let first = from + 1; first <= from + turns; first += batch) {
    const events: SessionEvent[] = []
    for (let t = first; t < Math.min(first + batch, from + turns + 1); t++) events.push(...turnEvents(t))
    await engine.append(sessionId, events)
  }
}
