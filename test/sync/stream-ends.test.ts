/**
 * How a session's stream ends a read or ends for good, against the real reference server: a
 * long-poll that times out with no data (again and again), a stream closed by someone else, and
 * forks (of the stream on the server, and of the session by the engine's `fork`). Each test
 * bounds the requests a device makes, so a loop that spins fails it.
 */
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest'
import { createSessionView } from '../../src/client/session-view'
import type { SyncBatch, SyncStatus } from '../../src/schema/sync'
import { countRequests, offlineSwitch, type RequestMatch } from './faults'
import {
  allEvents,
  allRows,
  converged,
  type Device,
  device,
  expectSameSession,
  startServer,
  turn,
} from './support'

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
const streamOf = (id: string) => `${server.url}/v1/stream/sessionline/${encodeURIComponent(id)}`
const streamMessages = async (id: string): Promise<unknown[]> =>
  (await fetch(`${streamOf(id)}?offset=-1`)).json() as Promise<unknown[]>

/** Asks `check` until it holds, for at most `ms`; throws what it last saw otherwise. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, ms = 8_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await read()
    if (check(value)) return value
    if (Date.now() > end) throw new Error(`still ${JSON.stringify(value)}`)
    await pause(20)
  }
}

/** Events without the session they belong to: a fork's prefix has the source's events under another id. */
const unowned = (events: readonly { sessionId: string }[]) => events.map(({ sessionId: _, ...rest }) => rest)
const textsOf = async (d: Device, sessionId: string) =>
  (await allRows(d.engine, sessionId)).flatMap((r) => r.parts.map((p) => ('text' in p ? p.text : '')))

/** Closes a stream the way any writer may (an empty POST with Stream-Closed: true). */
async function closeStream(id: string) {
  const closed = await fetch(streamOf(id), { method: 'POST', headers: { 'Stream-Closed': 'true' } })
  expect(closed.status).toBe(204)
  expect(closed.headers.get('stream-closed')).toBe('true')
}
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

test('a stream closed by someone else: error `closed` once what it holds is folded, local writes kept pending, no more requests', async () => {
  const aSwitch = offlineSwitch()
  const aCounted = countRequests({ fetch: aSwitch.fetch })
  const bCounted = countRequests()
  const a = make('a', { sync: { fetch: aCounted.fetch } })
  const b = make('b', { sync: { fetch: bCounted.fetch } })
  const id = await pair(a, b)
  // a writes while cut off; b writes and pushes; then someone closes the stream.
  aSwitch.offline = true
  await turn(a.engine, id, 'written offline on a')
  await turn(b.engine, id, 'pushed by b before the close')
  await until(
    () => b.engine.syncStatus(id),
    (s) => s?.state === 'live' && s.pending === 0,
  )
  await closeStream(id)
  const atClose = await streamMessages(id)

  // b, a reader at the tail: its long-poll ends at once on a closed stream, and it stops.
  const bStatus = await until(
    () => b.engine.syncStatus(id),
    (s) => s?.state === 'error',
  )
  expect(bStatus).toMatchObject({ state: 'error', pending: 0, error: { code: 'closed' } })
  const bEvents = await allEvents(b.engine, id)

  // a comes back: its append is refused, it still reads the stream to its end (b's turn, folded
  // whole, its own turn rebased after it) and stops with its turn pending, in the outbox.
  const view = createSessionView(a.engine, id)
  const backOnline = aCounted.count()
  aSwitch.offline = false
  try {
    const aStatus = (await until(
      () => a.engine.syncStatus(id),
      (s) => s?.state === 'error',
    ))!
    expect(aStatus).toMatchObject({ state: 'error', error: { code: 'closed' } })
    const aEvents = await allEvents(a.engine, id)
    expect(aEvents.slice(0, bEvents.length)).toEqual(bEvents)
    expect(aStatus.pending).toBe(aEvents.length - bEvents.length)
    expect(aStatus.pending).toBeGreaterThan(0)
    const texts = (await allRows(a.engine, id)).flatMap((r) =>
      r.parts.map((p) => ('text' in p ? p.text : '')),
    )
    expect(texts).toContain('written offline on a')
    expect(texts).toContain('pushed by b before the close')
    // The view shows the state, and its pending follows a write made after the stop.
    await until(
      async () => view.getSnapshot().sync,
      (s) => s?.state === 'error' && s.error?.code === 'closed' && s.pending === aStatus.pending,
    )
    await turn(a.engine, id, 'written after the close')
    const more = (await allEvents(a.engine, id)).length - bEvents.length
    expect((await a.engine.syncStatus(id))?.pending).toBe(more)
    await until(
      async () => view.getSnapshot().sync,
      (s) => s?.pending === more,
    )
    expect(view.getSnapshot().sync).toMatchObject({ state: 'error', error: { code: 'closed' } })
  } finally {
    view.dispose()
  }

  // Nothing was appended after the close, and neither device asks anything more: no retry loop.
  expect(await streamMessages(id)).toEqual(atClose)
  const asked = [aCounted.count(), bCounted.count()]
  await pause(5 * LONG_POLL_MS)
  expect([aCounted.count(), bCounted.count()]).toEqual(asked)
  // Back online, a tried its batch once; the refusal was not retried.
  expect(aCounted.requests.slice(backOnline).filter((r) => r.method === 'POST')).toHaveLength(1)

  // Syncing it again finds it closed at once (a PUT, a HEAD, one read) and stops the same way.
  await b.engine.unsync(id)
  const before = bCounted.count()
  expect(await b.engine.sync(id, { url: server.url })).toMatchObject({
    state: 'error',
    error: { code: 'closed' },
  })
  expect(bCounted.requests.slice(before).map((r) => r.method)).toEqual(['PUT', 'HEAD', 'GET'])
  expect(await allEvents(b.engine, id)).toEqual(bEvents)
  expect((atClose as SyncBatch[]).every((m) => m.kind === 'batch')).toBe(true)

  // The way on: a fork holds the visible path (here a's branch, its pending turns with it) and
  // syncs to a stream of its own.
  const fork = await a.engine.fork(id, { title: 'after the close' })
  await a.engine.sync(fork.id, { url: server.url })
  await b.engine.sync(fork.id, { url: server.url })
  await converged([a, b], fork.id)
  await expectSameSession([a, b], fork.id)
  expect(await textsOf(b, fork.id)).toEqual([
    'one',
    're: one',
    'written offline on a',
    're: written offline on a',
    'written after the close',
    're: written after the close',
  ])
})

test('a stream forked on the server reads as one log (the prefix, then what follows); a device holding the source is refused, `conflict`, nothing applied', async () => {
  const counted = countRequests()
  const a = make('a', { sync: { fetch: counted.fetch } })
  const { id } = await a.engine.createSession({ title: 'source' })
  await turn(a.engine, id, 'before the fork')
  await a.engine.sync(id, { url: server.url })
  await converged([a], id)
  const prefix = await allEvents(a.engine, id)
  const forkId = `${id}-fork`
  const forked = await fetch(streamOf(forkId), {
    method: 'PUT',
    headers: { 'Stream-Forked-From': new URL(streamOf(id)).pathname },
  })
  expect(forked.status).toBe(201)
  await turn(a.engine, id, 'in the source after the fork')
  await converged([a], id)
  const source = await streamMessages(id)

  // Devices that hold neither read the source's prefix and the fork's own messages as one log.
  const c = make('c')
  const d = make('d')
  await c.engine.sync(forkId, { url: server.url })
  await converged([c], forkId)
  expect(unowned(await allEvents(c.engine, forkId))).toEqual(unowned(prefix))
  await turn(c.engine, forkId, 'in the fork')
  await d.engine.sync(forkId, { url: server.url })
  await converged([c, d], forkId)
  const { events } = await expectSameSession([c, d], forkId)
  expect(unowned(events.slice(0, prefix.length))).toEqual(unowned(prefix))
  expect(events.length).toBeGreaterThan(prefix.length)
  expect(await textsOf(d, forkId)).toContain('in the fork')
  expect(await textsOf(d, forkId)).not.toContain('in the source after the fork')
  expect(await streamMessages(id)).toEqual(source)

  // The device that holds the source: the fork's rows take ids its source rows hold (ids are
  // global). A conflict, stopped, nothing of the fork written, the source's rows untouched.
  const rows = await allRows(a.engine, id)
  const before = counted.count()
  await a.engine.sync(forkId, { url: server.url })
  const status = await until(
    () => a.engine.syncStatus(forkId),
    (s) => s?.state === 'error',
  )
  expect(status).toMatchObject({ state: 'error', error: { code: 'conflict' } })
  expect(await a.engine.getSession(forkId)).toBeUndefined()
  expect(await allRows(a.engine, id)).toEqual(rows)
  const asked = counted.count()
  await pause(5 * LONG_POLL_MS)
  // The source's own loop long-polls on; the fork's asks nothing more.
  const since = counted.requests.slice(before)
  expect(since.filter((r) => r.url.includes(encodeURIComponent(forkId))).length).toBeLessThanOrEqual(2)
  expect(counted.requests.slice(asked).filter((r) => r.url.includes(encodeURIComponent(forkId)))).toEqual([])
})

test("a batch in another session's stream that reuses a row id this database holds: `conflict`, the row stays where it is", async () => {
  const a = make('a')
  const s = await a.engine.createSession({ title: 'holds the row' })
  await turn(a.engine, s.id, 'a row of s')
  const t = await a.engine.createSession({ title: 'gets the forged batch' })
  const head = await turn(a.engine, t.id, 'a row of t')
  await a.engine.sync(s.id, { url: server.url })
  await a.engine.sync(t.id, { url: server.url })
  await converged([a], s.id)
  await converged([a], t.id)
  const sRows = await allRows(a.engine, s.id)
  const tEvents = await allEvents(a.engine, t.id)
  const taken = sRows.find((r) => r.role === 'user')!.id
  // A well-formed turn that folds on t's log, whose prompt takes the id of s's prompt. On a
  // device with nothing unconfirmed, others' turns are appended and their rows put by id.
  const forged: SyncBatch = {
    v: 1,
    kind: 'batch',
    device: 'forger',
    batchId: 'forged',
    parentHead: head,
    baseTurn: 1,
    events: [
      { type: 'turn/start', data: { turn: 2 }, at: 1 },
      {
        type: 'user/message',
        data: { inputId: taken, text: 'not yours', delivery: 'queue', source: 'user' },
        at: 1,
      },
      { type: 'turn/end', data: { turn: 2, reason: 'completed' }, at: 1 },
    ],
  }
  const posted = await fetch(streamOf(t.id), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([forged]),
  })
  expect(posted.status).toBe(204)
  const status = await until(
    () => a.engine.syncStatus(t.id),
    (st) => st?.state === 'error',
  )
  expect(status).toMatchObject({ state: 'error', error: { code: 'conflict' } })
  expect(await allRows(a.engine, s.id)).toEqual(sRows)
  expect(await allEvents(a.engine, t.id)).toEqual(tEvents)
  expect(await a.engine.syncStatus(s.id)).toMatchObject({ state: 'live' })
})

test("the engine's fork of a synced session: nothing of it reaches the source's stream; it syncs only when asked, to a stream of its own", async () => {
  const counted = countRequests()
  const a = make('a', { sync: { fetch: counted.fetch } })
  const b = make('b')
  const id = await pair(a, b)
  const source = await streamMessages(id)
  const fork = await a.engine.fork(id, { title: 'the fork' })
  await turn(a.engine, fork.id, 'only in the fork')
  // Rounds of the source's loop go by: it has nothing to push, and the fork is not synced.
  await pause(3 * LONG_POLL_MS)
  expect(await streamMessages(id)).toEqual(source)
  expect(await a.engine.syncStatus(fork.id)).toBeUndefined()
  expect(counted.requests.filter((r) => r.url.includes(encodeURIComponent(fork.id)))).toEqual([])
  expect((await fetch(`${streamOf(fork.id)}?offset=-1`)).status).toBe(404)
  expect(await b.engine.getSession(fork.id)).toBeUndefined()

  // The source syncs on as before, without the fork's turn.
  await turn(a.engine, id, 'in the source after the fork')
  await converged([a, b], id)
  await expectSameSession([a, b], id)
  expect(await textsOf(b, id)).not.toContain('only in the fork')

  // Asked, the fork syncs to its own stream, and another device that holds the source takes it:
  // its rows have ids of their own.
  await a.engine.sync(fork.id, { url: server.url })
  await b.engine.sync(fork.id, { url: server.url })
  await converged([a, b], fork.id)
  const { rows } = await expectSameSession([a, b], fork.id)
  expect(await textsOf(b, fork.id)).toEqual(expect.arrayContaining(['one', 'only in the fork']))
  expect(await textsOf(b, fork.id)).not.toContain('in the source after the fork')
  const sourceIds = new Set((await allRows(b.engine, id)).map((r) => r.id))
  expect(rows.filter((r) => sourceIds.has(r.id))).toEqual([])
  expect(JSON.stringify(await streamMessages(id))).not.toContain('only in the fork')
})
