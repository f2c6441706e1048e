/**
 * One runner per session across devices (docs/decisions/0036, amendment): two engines with a
 * provider sync one session through the real Durable Streams server; the device whose claim
 * holds runs every turn, the other's inputs travel to it, and a lapsed claim is taken over.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import {
  allEvents,
  answeredOnceOnAll,
  converged,
  type Device,
  device,
  expectSameSession,
  runnerOf,
  startServer,
  turnsEnded,
  until,
  userRows,
} from './support'

let server: Awaited<ReturnType<typeof startServer>>
const open: Device[] = []
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await Promise.all(open.map((d) => d.engine.close()))
  await server.stop()
})

const TTL = 1500

/** A device whose engine runs turns with the scripted provider (no tools, no delay). */
const runnerDevice = (name: string, options: { ttl?: number; dbName?: string } = {}) => {
  const d = device(name, {
    engine: { provider: { kind: 'scripted', wordDelayMs: 0, toolRate: 0 } },
    sync: { claimTtlMs: options.ttl ?? TTL },
    ...(options.dbName ? { dbName: options.dbName } : {}),
  })
  open.push(d)
  return d
}

/** The receipt as the device stores it (an admit of the same input answers it, writing nothing). */
const receiptOf = (engine: Engine, id: string, input: { id: string; text: string }) =>
  engine.admit(id, { id: input.id, text: input.text, delivery: 'queue' })

test('an input admitted on the device without the claim is answered once, by the claimant; both receipts promoted', async () => {
  const a = runnerDevice('a')
  const b = runnerDevice('b')
  const { id } = await a.engine.createSession({ title: 'one runner' })
  await a.engine.sync(id, { url: server.url, deviceId: 'dev-a' })
  await until(
    'a claims',
    () => runnerOf(a, id),
    (r) => r === 'dev-a',
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b' })
  await converged([a, b], id)
  expect(await runnerOf(b, id)).toBe('dev-a')

  const input = await b.engine.admit(id, { text: 'asked on b', delivery: 'queue' })
  await until(
    'answered on both',
    () => Promise.all([allEvents(a.engine, id), allEvents(b.engine, id)]),
    (logs) => logs.every((log) => turnsEnded(log) === 1),
  )
  await converged([a, b], id)
  const { events } = await expectSameSession([a, b], id)
  expect(userRows(events, input.id)).toHaveLength(1)
  expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
  expect(events.some((e) => e.type === 'history/head')).toBe(false) // no branch: one runner
  const promotedSeq = userRows(events, input.id)[0]!.seq
  await until(
    'b promoted',
    () => receiptOf(b.engine, id, input),
    (r) => r.status === 'promoted',
  )
  expect(await receiptOf(b.engine, id, input)).toMatchObject({ status: 'promoted', promotedSeq })
  expect(await receiptOf(a.engine, id, input)).toMatchObject({ status: 'promoted', promotedSeq })
  expect(await b.engine.pending(id)).toEqual([])
  expect(await a.engine.pending(id)).toEqual([])

  // Still one runner: the next input, admitted on a, is answered once more, no branch.
  const second = await a.engine.admit(id, { text: 'asked on a', delivery: 'queue' })
  await answeredOnceOnAll([a, b], id, second.id, 2)
})

test('the claimant closes, its claim lapses, and the other device takes over and answers', async () => {
  const a = runnerDevice('a')
  const b = runnerDevice('b')
  const { id } = await a.engine.createSession({ title: 'takeover' })
  await a.engine.sync(id, { url: server.url, deviceId: 'dev-a2' })
  await until(
    'a claims',
    () => runnerOf(a, id),
    (r) => r === 'dev-a2',
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b2' })
  await converged([a, b], id)
  expect(await runnerOf(b, id)).toBe('dev-a2')

  await a.engine.close()
  // Admitted while a's claim still holds: sent to a, which is gone; it waits, unanswered.
  const early = await b.engine.admit(id, { text: 'asked while a is gone', delivery: 'queue' })
  // While a's claim still holds, b's runner opens no turn for it (read the log, then the claim).
  await new Promise((r) => setTimeout(r, TTL / 5))
  const meanwhile = await allEvents(b.engine, id)
  if ((await runnerOf(b, id)) === 'dev-a2') expect(turnsEnded(meanwhile)).toBe(0)
  // The claim lapses (it is not said again): b claims and runs what waited.
  await until(
    'b takes over',
    () => runnerOf(b, id),
    (r) => r === 'dev-b2',
    TTL * 4,
  )
  await until(
    'b answered the input that waited',
    () => allEvents(b.engine, id),
    (log) => turnsEnded(log) === 1,
  )
  const late = await b.engine.admit(id, { text: 'asked after the takeover', delivery: 'queue' })
  const events = await until(
    'b answered the new input',
    () => allEvents(b.engine, id),
    (log) => turnsEnded(log) === 2,
  )
  expect(userRows(events, early.id)).toHaveLength(1)
  expect(userRows(events, late.id)).toHaveLength(1)
  await converged([b], id)
  expect(await b.engine.pending(id)).toEqual([])
})

test('an input admitted offline on the device without the claim is run there, and reaches the other device', async () => {
  const a = runnerDevice('a')
  const b = runnerDevice('b')
  const { id } = await a.engine.createSession({ title: 'offline' })
  await a.engine.sync(id, { url: server.url, deviceId: 'dev-a3' })
  await until(
    'a claims',
    () => runnerOf(a, id),
    (r) => r === 'dev-a3',
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b3' })
  await converged([a, b], id)

  b.net.offline = true
  const offline = await b.engine.admit(id, { text: 'asked offline on b', delivery: 'queue' })
  // b cannot reach the stream: its own runner answers, as on one device.
  await until(
    'b answered offline',
    () => allEvents(b.engine, id),
    (log) => turnsEnded(log) === 1,
  )
  expect((await b.engine.syncStatus(id))?.state).toBe('offline')
  expect(await receiptOf(b.engine, id, offline)).toMatchObject({ status: 'promoted' })
  // Meanwhile a answers its own input: the two turns become two branches.
  const online = await a.engine.admit(id, { text: 'asked on a meanwhile', delivery: 'queue' })
  await until(
    'a answered',
    () => allEvents(a.engine, id),
    (log) => turnsEnded(log) === 1,
  )
  b.net.offline = false
  await converged([a, b], id)
  const { events } = await expectSameSession([a, b], id)
  expect(userRows(events, offline.id)).toHaveLength(1)
  expect(userRows(events, online.id)).toHaveLength(1)
  expect(turnsEnded(events)).toBe(2)
  expect(events.some((e) => e.type === 'history/head' && e.data.cause === 'switch')).toBe(true)
  // Back live, a holds the claim again on both.
  expect(await runnerOf(b, id)).toBe('dev-a3')
})

test('an engine that starts again knows the claim it folded before, and does not take it over', async () => {
  // A long ttl: no renewal arrives while the test runs, so only the kept claim can tell.
  const ttl = 60_000
  const a = runnerDevice('a', { ttl })
  const b = runnerDevice('b', { ttl })
  const { id } = await a.engine.createSession({ title: 'restart' })
  await a.engine.sync(id, { url: server.url, deviceId: 'dev-a4' })
  await until(
    'a claims',
    () => runnerOf(a, id),
    (r) => r === 'dev-a4',
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b4' })
  await converged([a, b], id)
  expect(await runnerOf(b, id)).toBe('dev-a4')
  await b.engine.close()

  const again = runnerDevice('b', { ttl, dbName: b.dbName })
  await again.engine.sync(id, { url: server.url, deviceId: 'dev-b4' })
  await converged([a, again], id)
  expect(await runnerOf(again, id)).toBe('dev-a4')
  // Its input still goes to a, and is answered once.
  const input = await again.engine.admit(id, { text: 'after a restart', delivery: 'queue' })
  await until(
    'answered on both',
    () => Promise.all([allEvents(a.engine, id), allEvents(again.engine, id)]),
    (logs) => logs.every((log) => turnsEnded(log) === 1),
  )
  await converged([a, again], id)
  const { events } = await expectSameSession([a, again], id)
  expect(userRows(events, input.id)).toHaveLength(1)
  expect(events.some((e) => e.type === 'history/head')).toBe(false)
  expect(await runnerOf(a, id)).toBe('dev-a4')
  expect(await runnerOf(again, id)).toBe('dev-a4')
})

test('two devices that claim at once settle on one runner, and each one’s input is answered once', async () => {
  const a = runnerDevice('a')
  const b = runnerDevice('b')
  const { id } = await a.engine.createSession({ title: 'race' })
  // a's first claim is held on the way until b has claimed too: both claim, a's lands later.
  let bClaimed!: () => void
  const held = new Promise<void>((resolve) => (bClaimed = resolve))
  let first = true
  a.net.fault = async (input, init, real) => {
    if (first && init?.method === 'POST' && String(init.body).includes('"kind":"claim"')) {
      first = false
      await held
    }
    return real(input, init)
  }
  void a.engine.sync(id, { url: server.url, deviceId: 'dev-a5' })
  await until(
    'a pushed the session',
    () => a.engine.syncStatus(id),
    (s) => s?.pending === 0,
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b5' })
  await until(
    'b claims',
    () => runnerOf(b, id),
    (r) => r === 'dev-b5',
  )
  bClaimed()
  await converged([a, b], id)
  // The later claim in stream order wins on both: a's.
  const [runner] = await until(
    'one runner on both',
    () => Promise.all([runnerOf(a, id), runnerOf(b, id)]),
    ([ra, rb]) => ra === 'dev-a5' && rb === 'dev-a5',
  )
  const fromA = await a.engine.admit(id, { text: 'from a', delivery: 'queue' })
  const fromB = await b.engine.admit(id, { text: 'from b', delivery: 'queue' })
  await until(
    'both answered on both',
    () => Promise.all([allEvents(a.engine, id), allEvents(b.engine, id)]),
    // One turn or two: the claimant may promote both queued inputs at once.
    (logs) =>
      logs.every(
        (log) =>
          userRows(log, fromA.id).length > 0 &&
          userRows(log, fromB.id).length > 0 &&
          log.at(-1)?.type === 'turn/end',
      ),
  )
  await converged([a, b], id)
  const { events } = await expectSameSession([a, b], id)
  expect(userRows(events, fromA.id)).toHaveLength(1)
  expect(userRows(events, fromB.id)).toHaveLength(1)
  expect(events.some((e) => e.type === 'history/head')).toBe(false)
  expect(await runnerOf(a, id)).toBe(runner)
  expect(await a.engine.pending(id)).toEqual([])
  expect(await b.engine.pending(id)).toEqual([])
})

test('an input already sent to the claimant is not run again by its device while it cannot read the stream', async () => {
  // A ttl longer than the time b is cut off: a's claim holds throughout.
  const a = runnerDevice('a', { ttl: 6000 })
  const b = runnerDevice('b', { ttl: 6000 })
  const { id } = await a.engine.createSession({ title: 'sent, then cut off' })
  await a.engine.sync(id, { url: server.url, deviceId: 'dev-a6' })
  await until(
    'a claims',
    () => runnerOf(a, id),
    (r) => r === 'dev-a6',
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b6' })
  await converged([a, b], id)

  // Once b has sent its input to a, b's reads fail: it cannot see a's answer arrive.
  let sent = false
  b.net.fault = async (input, init, real) => {
    if (sent && (init?.method ?? 'GET') === 'GET') throw new TypeError('fetch failed (cut off)')
    const response = await real(input, init)
    if (init?.method === 'POST' && String(init.body).includes('"kind":"input"')) sent = true
    return response
  }
  const input = await b.engine.admit(id, { text: 'sent before the cut', delivery: 'queue' })
  await until(
    'a answered',
    () => allEvents(a.engine, id),
    (log) => turnsEnded(log) === 1,
  )
  await until(
    'b is offline',
    () => b.engine.syncStatus(id),
    (s) => s?.state === 'offline',
  )
  // b's runner leaves the input to a, whose claim still holds.
  await new Promise((r) => setTimeout(r, 300))
  expect(turnsEnded(await allEvents(b.engine, id))).toBe(0)
  expect((await b.engine.pending(id)).map((r) => r.id)).toEqual([input.id])

  b.net.fault = undefined
  await converged([a, b], id)
  const { events } = await expectSameSession([a, b], id)
  expect(userRows(events, input.id)).toHaveLength(1)
  expect(turnsEnded(events)).toBe(1)
  expect(events.some((e) => e.type === 'history/head')).toBe(false)
  await until(
    'b promoted',
    () => b.engine.pending(id),
    (p) => p.length === 0,
  )
  expect(await receiptOf(b.engine, id, input)).toMatchObject({ status: 'promoted' })
})

test('an input with attachments does not travel: it waits on its device until that device runs the session', async () => {
  const a = runnerDevice('a')
  const b = runnerDevice('b')
  const { id } = await a.engine.createSession({ title: 'files stay' })
  await a.engine.sync(id, { url: server.url, deviceId: 'dev-a7' })
  await until(
    'a claims',
    () => runnerOf(a, id),
    (r) => r === 'dev-a7',
  )
  await b.engine.sync(id, { url: server.url, deviceId: 'dev-b7' })
  await converged([a, b], id)

  const withFile = await b.engine.admit(id, {
    text: 'see the file',
    delivery: 'queue',
    attachments: [{ name: 'notes.txt', mediaType: 'text/plain', data: new Blob(['kept here']) }],
  })
  const plain = await b.engine.admit(id, { text: 'and this one', delivery: 'queue' })
  // The plain input travels and a answers it; the one with a file stays pending on b.
  await until(
    'a answered the plain input',
    () => allEvents(b.engine, id),
    (log) => userRows(log, plain.id).length === 1 && log.at(-1)?.type === 'turn/end',
  )
  expect(userRows(await allEvents(a.engine, id), withFile.id)).toHaveLength(0)
  expect((await b.engine.pending(id)).map((r) => r.id)).toEqual([withFile.id])

  // a goes away; b takes the claim and runs it with its file.
  await a.engine.close()
  await until(
    'b takes over',
    () => runnerOf(b, id),
    (r) => r === 'dev-b7',
    TTL * 4,
  )
  const events = await until(
    'b answered the input with a file',
    () => allEvents(b.engine, id),
    (log) => userRows(log, withFile.id).length === 1 && log.at(-1)?.type === 'turn/end',
  )
  const [message] = userRows(events, withFile.id)
  expect(message?.type === 'user/message' && message.data.attachments?.map((f) => f.name)).toEqual([
    'notes.txt',
  ])
  expect(await b.engine.pending(id)).toEqual([])
})
