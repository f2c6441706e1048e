/**
 * An idle synced session is cheap on every device (docs/decisions/0036, "Cost"): two devices
 * that run turns sync one session through the real server and then do nothing for several
 * claim ttls. The server's long-poll timeout equals the ttl, as with the defaults (30 s each),
 * so the counts per ttl scale to a minute at the defaults. Counted, not timed: the requests each
 * device makes and its IndexedDB reads by store (fake-indexeddb, counted by
 * test/support/read-counting-factory.ts).
 *
 * Then the claim an idle claimant let lapse is taken by the device where input arrives.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createReadCountingFactory, type ReadCountingFactory } from '../support/read-counting-factory'
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

const TTL = 400
const PERIODS = 8

let server: Awaited<ReturnType<typeof startServer>>
const open: Device[] = []
beforeAll(async () => {
  server = await startServer({ longPollTimeout: TTL })
})
afterAll(async () => {
  await Promise.all(open.map((d) => d.engine.close()))
  await server.stop()
})

interface Counted extends Device {
  reads: ReadCountingFactory
}

/** A device whose engine runs turns with the scripted provider (or, `host`, one driven by hand). */
const counted = (name: string, options: { host?: boolean } = {}): Counted => {
  const reads = createReadCountingFactory()
  const d = device(name, {
    engine: {
      ...(options.host ? {} : { provider: { kind: 'scripted', wordDelayMs: 0, toolRate: 0 } as const }),
      indexedDB: reads.factory,
    },
    sync: { claimTtlMs: TTL },
  })
  open.push(d)
  return { ...d, reads }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Two runner devices on one session of `turns` answered turns, converged, the claim lapsed. */
async function idlePair(title: string, turns: number) {
  const a = counted('a')
  const b = counted('b')
  const { id } = await a.engine.createSession({ title })
  for (let i = 0; i < turns; i++) await a.engine.admit(id, { text: `warm ${i}`, delivery: 'queue' })
  await a.engine.sync(id, { url: server.url, deviceId: `${title}-a` })
  await b.engine.sync(id, { url: server.url, deviceId: `${title}-b` })
  await until(
    'every input answered',
    () => a.engine.pending(id),
    (p) => p.length === 0,
  )
  await converged([a, b], id)
  // Nothing to run: the claimant stops saying its claim and it lapses on both.
  await until(
    'the claim lapsed',
    () => Promise.all([runnerOf(a, id), runnerOf(b, id)]),
    (runners) => runners.every((r) => r === undefined),
  )
  return { a, b, id }
}

test(`an idle pair of devices over ${PERIODS} claim ttls reads no log and makes one request per long-poll timeout`, async () => {
  const { a, b, id } = await idlePair('idle', 20)
  const head = (await a.engine.getSession(id))?.headSeq ?? 0
  expect(head).toBeGreaterThan(100)

  const marks = [a.net.requests.length, b.net.requests.length]
  for (const d of [a, b]) d.reads.reset()
  await sleep(TTL * PERIODS)
  const report = [a, b].map((d, i) => {
    const requests = d.net.requests.slice(marks[i])
    return {
      device: d.name,
      requests: requests.length,
      posts: requests.filter((r) => r.method === 'POST').length,
      logReads: d.reads.requests('events', 'messages'),
      reads: Object.fromEntries([...d.reads.reads].map(([store, n]) => [store, n.requests])),
    }
  })
  // The figures in 0036 ("Cost"); before this change each device made 2 long-polls a ttl (each
  // woken by a claim) and the claimant 2 claims a ttl more, and every pull read the log and
  // folded the session.
  console.log(JSON.stringify({ ttl: TTL, periods: PERIODS, head, report }))
  for (const r of report) {
    expect(r.logReads).toBe(0)
    expect(r.posts).toBe(0)
    // One long-poll per server timeout (the timeout is the ttl), and a little slack for timers.
    expect(r.requests).toBeLessThanOrEqual(PERIODS + 2)
  }
})

test('an input admitted on the device without the claim after it lapsed while idle is answered once, there', async () => {
  const { a, b, id } = await idlePair('lapsed', 1)
  const before = a.net.requests.length
  const input = await b.engine.admit(id, { text: 'asked on b after the lapse', delivery: 'queue' })
  // b has something to run and no claim holds: it claims and runs it.
  await until(
    'answered on both',
    () => Promise.all([allEvents(a.engine, id), allEvents(b.engine, id)]),
    (logs) => logs.every((log) => turnsEnded(log) === 2),
  )
  await converged([a, b], id)
  const { events } = await expectSameSession([a, b], id)
  expect(userRows(events, input.id)).toHaveLength(1)
  expect(events.some((e) => e.type === 'history/head')).toBe(false)
  expect(await b.engine.pending(id)).toEqual([])
  expect(await runnerOf(a, id)).toBe('lapsed-b')
  // a was not sent the input (no claim of a held): it only read b's claim and turn.
  expect(a.net.requests.slice(before).filter((r) => r.method === 'POST')).toEqual([])

  // Idle again, the claim lapses again; an input on a is answered once, by a.
  await until(
    'the claim lapsed again',
    () => Promise.all([runnerOf(a, id), runnerOf(b, id)]),
    (runners) => runners.every((r) => r === undefined),
  )
  const next = await a.engine.admit(id, { text: 'asked on a after the lapse', delivery: 'queue' })
  await answeredOnceOnAll([a, b], id, next.id, 3, 6000)
})

test('a device that runs no turns sends its input to the claimant whose idle claim lapsed, which answers it once', async () => {
  const a = counted('a')
  const host = counted('host', { host: true })
  const { id } = await a.engine.createSession({ title: 'host' })
  await a.engine.sync(id, { url: server.url, deviceId: 'host-a' })
  await host.engine.sync(id, { url: server.url, deviceId: 'host-h' })
  await converged([a, host], id)
  await until(
    'the claim lapsed',
    () => Promise.all([runnerOf(a, id), runnerOf(host, id)]),
    (runners) => runners.every((r) => r === undefined),
  )
  const input = await host.engine.admit(id, { text: 'asked where nothing runs', delivery: 'queue' })
  await until(
    'answered on both',
    () => Promise.all([allEvents(a.engine, id), allEvents(host.engine, id)]),
    (logs) => logs.every((log) => turnsEnded(log) === 1),
  )
  await converged([a, host], id)
  const { events } = await expectSameSession([a, host], id)
  expect(userRows(events, input.id)).toHaveLength(1)
  await until(
    'the receipt promoted',
    () => host.engine.pending(id),
    (p) => p.length === 0,
  )
})
