/**
 * How a session's stream ends a read or ends for good, against the real reference server: a
 * long-poll that times out with no data (again and again), a stream closed by someone else, and
 * forks (of the stream on the server, and of the session by the engine's `fork`). Each test
 * bounds the requests a device makes, so a loop that spins fails it.
 */
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest'
import type { SyncStatus } from '../../src/schema/sync'
import { countRequests, type RequestMatch } from './faults'
import { converged, type Device, device, expectSameSession, startServer, turn } from './support'

/** A long-poll at the tail ends empty (204) after this long. */
const LONG_POLL_MS = 100

let server: Awaited<ReturnType<typeof startServer>>
let open: Device[] = []
beforeAll(async () => {
  server = await startServer({ longPollTimeout: LONG_POLL_MS })
})
afterAll(async () => {
  await server.stop()
})
afterEach(async () => {
  await Promise.all(open.map((d) => d.engine.close().catch(() => undefined)))
  open = []
})
const make = (...args: Parameters<typeof device>) => {
  const d = device(...args)
  open.push(d)
  return d
}
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const longPolls: RequestMatch = (r) => r.method === 'GET' && r.url.includes('live=long-poll')

/** Every sync status published to the session's watchers, in order. */
async function statusesOf(d: Device, sessionId: string) {
  const seen: SyncStatus[] = []
  const stop = await d.engine.watch(sessionId, (change) => {
    if (change.sync) seen.push(change.sync)
  })
  return { seen, stop }
}

/** Two devices on one session with one turn, converged; `b` talks through `counted`. */
async function pair(a: Device, b: Device) {
  const { id } = await a.engine.createSession({ title: 'stream ends' })
  await turn(a.engine, id, 'one')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  return id
}

test('long-polls that time out with no data: the device stays live, waits in each, and still gets the next append', async () => {
  const counted = countRequests()
  const a = make('a')
  const b = make('b', { sync: { fetch: counted.fetch } })
  const id = await pair(a, b)
  // The round after the one that converged (its PUT, made once) is over by then.
  await pause(2 * LONG_POLL_MS)
  const watched = await statusesOf(b, id)
  const before = counted.count()
  // Ten long-polls' worth of an idle stream.
  const windowMs = 10 * LONG_POLL_MS
  await pause(windowMs)
  const during = counted.requests.slice(before)
  // Each request waited at the tail until the server timed it out: about one per timeout (the
  // first may have started before the window; a slow machine makes fewer). A device that read
  // again at once after an empty answer, or fell back to catch-up reads, makes hundreds.
  expect(during.length).toBeGreaterThanOrEqual(3)
  expect(during.length).toBeLessThanOrEqual(windowMs / LONG_POLL_MS + 2)
  expect(during.filter((r) => !longPolls(r))).toEqual([])
  // An empty answer changes nothing: the one status published is the one a new watcher is sent.
  expect(watched.seen).toEqual([{ state: 'live', pending: 0 }])
  expect(await b.engine.syncStatus(id)).toMatchObject({ state: 'live', pending: 0 })
  // Several timeouts later, an append still reaches it, in one more long-poll or two.
  const waiting = counted.count()
  await turn(a.engine, id, 'after the timeouts')
  await converged([a, b], id)
  expect(counted.count() - waiting).toBeLessThanOrEqual(4)
  watched.stop()
  const { events } = await expectSameSession([a, b], id)
  expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
})
