/**
 * Devices for sync tests: engines on fake-indexeddb (one database each unless told), syncing
 * with a real Durable Streams server (`@durable-streams/server`, in memory, on a free port)
 * through a `fetch` a test can break on purpose.
 */
import { DurableStreamTestServer } from '@durable-streams/server'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect } from 'vitest'
import { createEngine, type EngineOptions } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import type { StoredEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { createSessionSync, type SessionSyncOptions } from '../../src/sync'
import { freshDbName, immediateSchedule } from '../support/engines'

/** The reference server in memory on a free port; a long-poll at the tail ends empty after `longPollTimeout` ms. */
export async function startServer(
  options: { longPollTimeout?: number } = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const server = new DurableStreamTestServer({
    port: 0,
    host: '127.0.0.1',
    longPollTimeout: options.longPollTimeout ?? 400,
  })
  const url = await server.start()
  return { url, stop: () => server.stop() }
}

/** A fetch whose behaviour a test changes while it runs; by default the real one. */
export interface Network {
  fetch(input: string, init?: RequestInit): Promise<Response>
  /** Every request goes through this when set (the real fetch is its second argument). */
  fault?: (input: string, init: RequestInit | undefined, real: typeof fetch) => Promise<Response>
  offline: boolean
  requests: { method: string; url: string; status?: number }[]
}

export function network(): Network {
  const net: Network = {
    offline: false,
    requests: [],
    async fetch(input, init) {
      const record: { method: string; url: string; status?: number } = {
        method: init?.method ?? 'GET',
        url: input,
      }
      net.requests.push(record)
      if (net.offline) throw new TypeError('fetch failed (offline)')
      const response = net.fault ? await net.fault(input, init, fetch) : await fetch(input, init)
      record.status = response.status
      return response
    },
  }
  return net
}

export interface Device {
  name: string
  engine: Engine
  dbName: string
  net: Network
  waits: number[]
}

/** An engine with sync, waits shortened (each asked wait is recorded, then taken at 1/50 of it). */
export function device(
  name: string,
  options: {
    dbName?: string
    net?: Network
    sync?: SessionSyncOptions
    engine?: Pick<EngineOptions, 'provider' | 'onError' | 'indexedDB'>
  } = {},
): Device {
  const net = options.net ?? network()
  const dbName = options.dbName ?? freshDbName(`sync-${name}`)
  const waits: number[] = []
  const engine = createEngine({
    dbName,
    indexedDB,
    IDBKeyRange,
    schedule: immediateSchedule,
    ...options.engine,
    sync: createSessionSync({
      fetch: (input, init) => net.fetch(input, init),
      newId: undefined,
      pollMs: 20,
      backoff: { baseMs: 20, maxMs: 400 },
      sleep: (ms, signal) => {
        waits.push(ms)
        return new Promise((resolve) => {
          const timer = setTimeout(resolve, Math.max(1, ms / 50))
          signal.addEventListener('abort', () => {
            clearTimeout(timer)
            resolve()
          })
        })
      },
      ...options.sync,
    }),
  })
  return { name, engine, dbName, net, waits }
}

/** One whole turn with the host's hand: an input admitted and promoted, an answer, the end. */
export async function turn(engine: Engine, sessionId: string, text: string, tokens = 0): Promise<string> {
  await engine.admit(sessionId, { text, delivery: 'queue' })
  return answerNext(engine, sessionId, tokens)
}

/** Promotes the oldest queued input into a turn and answers it (`re: <its text>`), its step costing `tokens`. */
export async function answerNext(engine: Engine, sessionId: string, tokens = 0): Promise<string> {
  const [row] = await engine.promote(sessionId, 'settled')
  const t = row!.turn
  const text = row!.parts[0]?.type === 'text' ? row!.parts[0].text : ''
  const messageId = `${row!.id}-answer`
  await engine.append(sessionId, [
    { type: 'step/start', data: { turn: t, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn: t, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: `re: ${text}` } },
    { type: 'assistant/end', data: { messageId, finish: 'stop' } },
    {
      type: 'step/end',
      data: { turn: t, step: 1, ...(tokens > 0 ? { usage: { input: tokens, output: tokens } } : {}) },
    },
    { type: 'turn/end', data: { turn: t, reason: 'completed' } },
  ])
  return messageId
}

export async function allEvents(engine: Engine, sessionId: string): Promise<StoredEvent[]> {
  return engine.events(sessionId, { limit: 10_000 })
}

export async function allRows(engine: Engine, sessionId: string): Promise<SessionMessage[]> {
  const page = await engine.page(sessionId, { limit: 1000, includeInactive: true })
  return page.messages
}

/** Waits until every device is live with nothing pending and all hold the same log. */
export async function converged(devices: readonly Device[], sessionId: string, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs
  let last = ''
  for (;;) {
    const statuses = await Promise.all(devices.map((d) => d.engine.syncStatus(sessionId)))
    const heads = await Promise.all(
      devices.map((d) => d.engine.getSession(sessionId).then((s) => s?.headSeq)),
    )
    last = JSON.stringify({ statuses, heads })
    if (
      statuses.every((s) => s?.state === 'live' && s.pending === 0) &&
      heads.every((h) => h !== undefined && h === heads[0])
    )
      return
    if (Date.now() > until) throw new Error(`not converged: ${last}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The same events, rows and head on every device; no row id twice. */
export async function expectSameSession(devices: readonly Device[], sessionId: string) {
  const [first, ...rest] = devices
  const events = await allEvents(first!.engine, sessionId)
  const rows = await allRows(first!.engine, sessionId)
  const context = await first!.engine.context(sessionId)
  expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length)
  for (const d of rest) {
    expect(await allEvents(d.engine, sessionId)).toEqual(events)
    expect(await allRows(d.engine, sessionId)).toEqual(rows)
    expect((await d.engine.context(sessionId)).rows.map((r) => r.id)).toEqual(context.rows.map((r) => r.id))
  }
  return { events, rows }
}

/** Reads until `ok` holds, every 20 ms, failing after `ms` with what was read last. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  ms = 10_000,
): Promise<T> {
  const end = Date.now() + ms
  let last: T
  for (;;) {
    last = await read()
    if (ok(last)) return last
    if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(last)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The device whose runner claim holds on `d`'s view of the session (undefined: none). */
export const runnerOf = (d: Device, sessionId: string) =>
  d.engine.syncStatus(sessionId).then((status) => status?.runner)

/** Turns the log says ended `completed`. */
export const turnsEnded = (events: readonly StoredEvent[]) =>
  events.filter((e) => e.type === 'turn/end' && e.data.reason === 'completed').length

/** The `user/message` events that answer input `inputId` (one when it was answered once). */
export const userRows = (events: readonly StoredEvent[], inputId: string) =>
  events.filter((e) => e.type === 'user/message' && e.data.inputId === inputId)

/**
 * Waits until every device's log has `turns` completed turns, then checks they converged to one
 * session in which input `inputId` was answered once and no branch was made (one runner).
 */
export async function answeredOnceOnAll(
  devices: readonly Device[],
  sessionId: string,
  inputId: string,
  turns: number,
  ms?: number,
): Promise<void> {
  await until(
    `${turns} turns answered on every device`,
    () => Promise.all(devices.map((d) => allEvents(d.engine, sessionId))),
    (logs) => logs.every((log) => turnsEnded(log) === turns),
    ms,
  )
  await converged(devices, sessionId)
  const after = await expectSameSession(devices, sessionId)
  expect(userRows(after.events, inputId)).toHaveLength(1)
  expect(after.events.some((e) => e.type === 'history/head')).toBe(false)
}
