/**
 * Faults between a device and the real Durable Streams server: answers lost after the server
 * committed, requests lost before, a busy server, an engine killed between its POST and its
 * outbox commit, a zombie engine of an older epoch, a producer seq gap, garbage and truncated
 * bodies, a deleted stream. Each ends with the devices holding the same log, every event once,
 * or in a typed state with the local log untouched.
 */
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest'
import type { SyncBatch } from '../../src/schema/sync'
import {
  allEvents,
  converged,
  type Device,
  device,
  expectSameSession,
  network,
  startServer,
  turn,
} from './support'

let server: Awaited<ReturnType<typeof startServer>>
let open: Device[] = []
beforeAll(async () => {
  server = await startServer()
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
const streamOf = (id: string) => `${server.url}/v1/stream/sessionline/${id}`
const streamMessages = async (id: string): Promise<unknown[]> =>
  (await fetch(`${streamOf(id)}?offset=-1`)).json() as Promise<unknown[]>
const batchIds = async (id: string) =>
  (await streamMessages(id)).map((m) => (m as SyncBatch).batchId).filter((b) => b !== undefined)
const isPost = (init?: RequestInit) => init?.method === 'POST'

/** Two devices sharing a session with one turn on it, converged. */
async function pair(a: Device, b: Device) {
  const { id } = await a.engine.createSession({ title: 'faults' })
  await turn(a.engine, id, 'one')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  return id
}

test('an acknowledgement lost after the server committed: the retry is a duplicate, appended once', async () => {
  const net = network()
  const a = make('a', { net })
  const b = make('b')
  const id = await pair(a, b)
  let lost = 0
  net.fault = async (input, init, real) => {
    const response = await real(input, init)
    if (isPost(init) && lost++ === 0) throw new TypeError('connection reset after the commit')
    return response
  }
  await turn(a.engine, id, 'two')
  await converged([a, b], id)
  expect(lost).toBeGreaterThan(1)
  const ids = await batchIds(id)
  expect(new Set(ids).size).toBe(ids.length)
  expect(net.requests.some((r) => r.method === 'POST' && r.status === 204)).toBe(true)
  await expectSameSession([a, b], id)
})

test('a request lost before it reached the server is sent again, once', async () => {
  const net = network()
  const a = make('a', { net })
  const b = make('b')
  const id = await pair(a, b)
  let dropped = 0
  net.fault = async (input, init, real) => {
    if (isPost(init) && dropped++ === 0) throw new TypeError('network down')
    return real(input, init)
  }
  await turn(a.engine, id, 'two')
  await converged([a, b], id)
  const ids = await batchIds(id)
  expect(new Set(ids).size).toBe(ids.length)
  expect(ids).toHaveLength(2)
  await expectSameSession([a, b], id)
})

test('503 and 429 with Retry-After: the device waits what the server asks, then goes on', async () => {
  const net = network()
  const a = make('a', { net })
  const b = make('b')
  const id = await pair(a, b)
  let busy = 0
  const at = Date.now()
  net.fault = async (input, init, real) => {
    if (isPost(init) && busy === 0) {
      busy++
      return new Response('busy', { status: 503, headers: { 'retry-after': '3' } })
    }
    if (!isPost(init) && busy === 1) {
      busy++
      const date = new Date(at + 30_000).toUTCString()
      return new Response('slow down', { status: 429, headers: { 'retry-after': date } })
    }
    return real(input, init)
  }
  await turn(a.engine, id, 'two')
  await converged([a, b], id)
  expect(busy).toBe(2)
  expect(a.waits).toContain(3000)
  // The date asks for about 30 s from when it was made (HTTP dates have whole seconds).
  expect(a.waits.some((ms) => ms > 25_000 && ms <= 30_000)).toBe(true)
  await expectSameSession([a, b], id)
})

test('an engine killed between its POST and its outbox commit: the next one resends, the fold keeps one copy', async () => {
  const net = network()
  const a = make('a', { net })
  const b = make('b')
  const id = await pair(a, b)
  let posted = false
  net.fault = async (input, init, real) => {
    const response = await real(input, init)
    if (isPost(init)) {
      posted = true
      throw new TypeError('the worker died before it recorded the answer')
    }
    return response
  }
  await turn(a.engine, id, 'two')
  while (!posted) await new Promise((r) => setTimeout(r, 10))
  await a.engine.close()
  // The same database, a new engine: it takes the next producer epoch and sends the outbox again.
  const again = make('a2', { dbName: a.dbName })
  expect(await again.engine.syncStatus(id)).toBeUndefined()
  await again.engine.sync(id, { url: server.url })
  await converged([again, b], id)
  const ids = await batchIds(id)
  expect(ids.length).toBe(new Set(ids).size + 1) // one batch is in the stream twice
  const { events } = await expectSameSession([again, b], id)
  expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
})

test('an engine stopped after the server acknowledged its batch, before a pull confirmed it: the next one does not send it again', async () => {
  const net = network()
  const a = make('a', { net })
  const b = make('b')
  const id = await pair(a, b)
  // Reads fail from here: the batch is posted and acknowledged, and nothing confirms it.
  net.fault = async (input, init, real) => {
    if (!isPost(init)) throw new TypeError('reads are down')
    return real(input, init)
  }
  await turn(a.engine, id, 'two')
  // A read after the turn's POST (the pair's POST came first) means its answer was recorded:
  // the loop reads only once it has recorded every acknowledgement of the round.
  const readAfterPost = () => {
    const posts = net.requests.flatMap((r, i) => (r.method === 'POST' && r.status === 200 ? [i] : []))
    return posts.length === 2 && net.requests.some((r, i) => r.method === 'GET' && i > posts[1]!)
  }
  while (!readAfterPost()) await new Promise((r) => setTimeout(r, 10))
  await a.engine.close()
  const again = make('a2', { dbName: a.dbName })
  await again.engine.sync(id, { url: server.url })
  await converged([again, b], id)
  // The acknowledgement was kept with the cursor: the stream holds each batch once.
  const ids = await batchIds(id)
  expect(ids).toHaveLength(2)
  expect(new Set(ids).size).toBe(2)
  await expectSameSession([again, b], id)
})

test('a zombie engine of an older epoch is fenced by the server and writes nothing more', async () => {
  const net = network()
  const zombie = make('z', { net })
  const b = make('b')
  const id = await pair(zombie, b)
  let release: () => void = () => undefined
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let held = false
  net.fault = async (input, init, real) => {
    if (isPost(init) && !held) {
      held = true
      await gate // the zombie's POST hangs while a newer engine takes over
    }
    return real(input, init)
  }
  await turn(zombie.engine, id, 'two')
  while (!held) await new Promise((r) => setTimeout(r, 10))
  const heir = make('heir', { dbName: zombie.dbName })
  await heir.engine.sync(id, { url: server.url })
  await converged([heir, b], id)
  release()
  const until = Date.now() + 10_000
  while ((await zombie.engine.syncStatus(id))?.state !== 'fenced' && Date.now() < until)
    await new Promise((r) => setTimeout(r, 20))
  expect(await zombie.engine.syncStatus(id)).toMatchObject({ state: 'fenced', error: { code: 'fenced' } })
  expect(net.requests.some((r) => r.method === 'POST' && r.status === 403)).toBe(true)
  const ids = await batchIds(id)
  expect(new Set(ids).size).toBe(ids.length)
  await expectSameSession([heir, b], id)
})

test('a producer seq gap (409) is closed with the seq the server expects', async () => {
  const net = network()
  const a = make('a', { net })
  const b = make('b')
  const id = await pair(a, b)
  let bumped = false
  net.fault = async (input, init, real) => {
    if (isPost(init) && !bumped) {
      bumped = true
      const headers = new Headers(init?.headers)
      headers.set('Producer-Seq', String(Number(headers.get('Producer-Seq')) + 5))
      return real(input, { ...init, headers })
    }
    return real(input, init)
  }
  await turn(a.engine, id, 'two')
  await converged([a, b], id)
  expect(net.requests.some((r) => r.method === 'POST' && r.status === 409)).toBe(true)
  const ids = await batchIds(id)
  expect(ids).toHaveLength(2)
  await expectSameSession([a, b], id)
})

test('a gap on the second of three batches sent in one round: it and the third take the count the server expects', async () => {
  const net = network()
  // One turn per batch.
  const a = make('a', { net, sync: { maxBatchEvents: 1 } })
  const b = make('b')
  const id = await pair(a, b)
  net.offline = true
  for (const text of ['two', 'three', 'four']) await turn(a.engine, id, text)
  let posts = 0
  net.fault = async (input, init, real) => {
    if (isPost(init) && ++posts === 2) {
      const headers = new Headers(init?.headers)
      headers.set('Producer-Seq', String(Number(headers.get('Producer-Seq')) + 5))
      return real(input, { ...init, headers })
    }
    return real(input, init)
  }
  net.offline = false
  await converged([a, b], id)
  expect(net.requests.filter((r) => r.method === 'POST' && r.status === 409)).toHaveLength(1)
  // The pair's two (its session/created and its first turn) and the three turns, each once.
  const ids = await batchIds(id)
  expect(ids).toHaveLength(5)
  expect(new Set(ids).size).toBe(5)
  const { events } = await expectSameSession([a, b], id)
  expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(4)
})

test('garbage in the stream and an unknown event type are skipped, counted, and sync goes on', async () => {
  const a = make('a')
  const b = make('b')
  const id = await pair(a, b)
  const [first] = (await streamMessages(id)) as SyncBatch[]
  const garbage = [
    { hello: 'world' },
    42,
    { ...first!, batchId: 'forged', events: [{ type: 'tool/teleport', data: {}, at: 1 }] },
  ]
  const posted = await fetch(streamOf(id), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(garbage),
  })
  expect(posted.status).toBe(204)
  const before = await allEvents(a.engine, id)
  await turn(b.engine, id, 'after the garbage')
  await converged([a, b], id)
  for (const d of [a, b]) expect((await d.engine.syncStatus(id))?.skipped).toBe(3)
  const { events } = await expectSameSession([a, b], id)
  expect(events.slice(0, before.length)).toEqual(before)
  expect(events.some((e) => (e.type as string) === 'tool/teleport')).toBe(false)
})

test('a truncated body is read again; nothing of it is applied', async () => {
  const net = network()
  const a = make('a')
  const b = make('b', { net })
  const id = await pair(a, b)
  let cut = 0
  net.fault = async (input, init, real) => {
    const response = await real(input, init)
    if (isPost(init) || response.status !== 200) return response
    const text = await response.text()
    if (text.length > 2 && cut === 0) {
      cut++
      return new Response(text.slice(0, Math.floor(text.length / 2)), {
        status: 200,
        headers: response.headers,
      })
    }
    return new Response(text, { status: 200, headers: response.headers })
  }
  await turn(a.engine, id, 'two')
  await converged([a, b], id)
  expect(cut).toBe(1)
  await expectSameSession([a, b], id)
})

test('a deleted stream (404) and one past retention (410) end in error; the local log keeps serving', async () => {
  const net = network()
  const a = make('a')
  const b = make('b', { net })
  const id = await pair(a, b)
  const held = await allEvents(a.engine, id)
  expect((await fetch(streamOf(id), { method: 'DELETE' })).status).toBe(204)
  await turn(a.engine, id, 'after the delete')
  const until = Date.now() + 10_000
  while ((await a.engine.syncStatus(id))?.state !== 'error' && Date.now() < until)
    await new Promise((r) => setTimeout(r, 20))
  expect(await a.engine.syncStatus(id)).toMatchObject({ state: 'error', error: { code: 'not_found' } })
  expect((await a.engine.syncStatus(id))?.pending).toBeGreaterThan(0)
  expect((await allEvents(a.engine, id)).slice(0, held.length)).toEqual(held)

  net.fault = async () => new Response('gone', { status: 410 })
  await b.engine.unsync(id)
  await b.engine.sync(id, { url: server.url })
  expect(await b.engine.syncStatus(id)).toMatchObject({ state: 'error', error: { code: 'gone' } })
  expect(await allEvents(b.engine, id)).toEqual(held)
})
