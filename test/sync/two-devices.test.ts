import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createSessionView } from '../../src/client/session-view'
import { createEngine } from '../../src/engine/engine'
import type { SessionChange } from '../../src/engine/types'
import { immediateSchedule } from '../support/engines'
import {
  allRows,
  answerNext,
  converged,
  type Device,
  device,
  expectSameSession,
  startServer,
  turn,
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
const make = (...args: Parameters<typeof device>) => {
  const d = device(...args)
  open.push(d)
  return d
}

test('a second device pulls a session it does not hold, and both write to it', async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'shared' })
  await turn(a.engine, id, 'first')
  expect(await a.engine.sync(id, { url: server.url })).toMatchObject({ state: expect.any(String) })
  await converged([a], id)
  expect(await b.engine.getSession(id)).toBeUndefined()
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  expect(await b.engine.getSession(id)).toMatchObject({ id, title: 'shared', source: 'native' })
  await turn(b.engine, id, 'from b')
  await converged([a, b], id)
  await turn(a.engine, id, 'from a')
  await converged([a, b], id)
  const { rows } = await expectSameSession([a, b], id)
  expect(rows.map((r) => r.parts[0]?.type === 'text' && r.parts[0].text)).toEqual([
    'first',
    're: first',
    'from b',
    're: from b',
    'from a',
    're: from a',
  ])
  expect(rows.every((r) => r.visibility === 'visible')).toBe(true)
})

test('turns run on two devices while one is offline become two branches, the same on both', async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'apart' })
  await turn(a.engine, id, 'shared start')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  const shownA = await allRows(a.engine, id)

  b.net.offline = true
  await turn(b.engine, id, 'b while offline')
  await turn(a.engine, id, 'a online')
  // An input admitted offline is a durable receipt, promoted by b's own hand as on one device.
  const receipt = await b.engine.admit(id, { text: 'b queued offline', delivery: 'queue' })
  expect(receipt.status).toBe('pending')
  await converged([a], id)
  expect((await b.engine.syncStatus(id))?.state).toBe('offline')
  expect((await b.engine.syncStatus(id))?.pending).toBeGreaterThan(0)
  b.net.offline = false
  await converged([a, b], id)
  const { rows, events } = await expectSameSession([a, b], id)
  // The rows shown as synced before kept their seqs.
  for (const row of shownA) expect(rows.find((r) => r.id === row.id)?.seq).toBe(row.seq)
  // a pushed first, so b's offline turn was rebased: a switch back to the shared answer, and
  // its turn renumbered after a's. Its rows are a sibling branch, inactive; the head is b's.
  const turns = events.flatMap((e) => (e.type === 'turn/start' ? [e.data.turn] : []))
  expect(turns).toEqual([1, 2, 3])
  expect(events.filter((e) => e.type === 'history/head')).toHaveLength(1)
  const text = (r: (typeof rows)[number]) => (r.parts[0]?.type === 'text' ? r.parts[0].text : '')
  const visible = rows.filter((r) => r.visibility === 'visible').map(text)
  expect(visible).toEqual(['shared start', 're: shared start', 'b while offline', 're: b while offline'])
  expect(rows.filter((r) => r.visibility === 'inactive').map(text)).toEqual(['a online', 're: a online'])
  expect(rows.find((r) => text(r) === 'b while offline')?.branch).toEqual({ index: 1, count: 2 })
  // The input admitted offline is still pending on b: it reaches the transcript by promotion.
  await answerNext(b.engine, id)
  expect(await b.engine.pending(id)).toEqual([])
  await converged([a, b], id)
  await expectSameSession([a, b], id)
  expect((await allRows(a.engine, id)).map(text)).toContain('b queued offline')
})

test('a rewind and the branch after it reach the other device with the same rows, branch places included', async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'verbs' })
  await turn(a.engine, id, 'one')
  await turn(a.engine, id, 'two')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  const second = (await allRows(b.engine, id)).find((r) => r.role === 'user' && r.turn === 2)!
  await b.engine.rewind(id, second.id)
  await turn(b.engine, id, 'two again')
  await converged([a, b], id)
  const { rows } = await expectSameSession([a, b], id)
  expect(rows.filter((r) => r.branch !== undefined).map((r) => r.branch)).toEqual([
    { index: 0, count: 2 },
    { index: 1, count: 2 },
  ])
})

test('a turn still running stays on its device; it is pushed whole when it ends', async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'running' })
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  const headBefore = (await b.engine.getSession(id))!.headSeq
  await a.engine.admit(id, { text: 'long one', delivery: 'queue' })
  const [prompt] = await a.engine.promote(id, 'settled')
  const t = prompt!.turn
  await a.engine.append(id, [
    { type: 'step/start', data: { turn: t, step: 1 } },
    { type: 'assistant/start', data: { messageId: 'long-answer', turn: t, step: 1 } },
    { type: 'assistant/delta', data: { messageId: 'long-answer', text: 'part one, ' } },
  ])
  await new Promise((r) => setTimeout(r, 300))
  // turn/start, user/message, step/start, assistant/start, assistant/delta
  expect((await a.engine.syncStatus(id))?.pending).toBe(5)
  expect((await b.engine.getSession(id))!.headSeq).toBe(headBefore)
  await a.engine.append(id, [
    { type: 'assistant/delta', data: { messageId: 'long-answer', text: 'part two' } },
    { type: 'assistant/end', data: { messageId: 'long-answer', finish: 'stop' } },
    { type: 'step/end', data: { turn: t, step: 1 } },
    { type: 'turn/end', data: { turn: t, reason: 'completed' } },
  ])
  await converged([a, b], id)
  const { rows } = await expectSameSession([a, b], id)
  expect(rows.at(-1)).toMatchObject({
    id: 'long-answer',
    parts: [{ type: 'text', text: 'part one, part two' }],
  })
})

test("a view's snapshot carries the session's sync status, and follows it", async () => {
  const a = make('a')
  const { id } = await a.engine.createSession({ title: 'seen' })
  await a.engine.sync(id, { url: server.url })
  await converged([a], id)
  // Opened after the sync started: the engine sends the status it has to the new watcher.
  const view = createSessionView(a.engine, id)
  const until = (check: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      if (check()) return resolve()
      const timer = setTimeout(
        () => reject(new Error(`snapshot: ${JSON.stringify(view.getSnapshot().sync)}`)),
        10_000,
      )
      const stop = view.subscribe(() => {
        if (!check()) return
        clearTimeout(timer)
        stop()
        resolve()
      })
    })
  try {
    await until(() => view.getSnapshot().sync?.state === 'live')
    expect(view.getSnapshot().sync).toEqual(await a.engine.syncStatus(id))
    a.net.offline = true
    await turn(a.engine, id, 'while offline')
    // The turn's events are counted as the retries find them waiting.
    await until(
      () => view.getSnapshot().sync?.state === 'offline' && (view.getSnapshot().sync?.pending ?? 0) > 0,
    )
    a.net.offline = false
    await until(() => view.getSnapshot().sync?.state === 'live' && view.getSnapshot().sync?.pending === 0)
  } finally {
    view.dispose()
  }
})

test('after a rewind on one device, a plain turn on the other leaves the same rows on both', async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'branched' })
  await turn(a.engine, id, 'one')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  const first = (await allRows(a.engine, id)).find((r) => r.role === 'user')!
  await a.engine.rewind(id, first.id)
  await converged([a, b], id)
  // b's turn is a new root beside 'one': b's write path stamps its own place, and the sibling
  // it joins (inactive) keeps a count that lags, where a replay counts both.
  await turn(b.engine, id, 'another start')
  await converged([a, b], id)
  const { rows } = await expectSameSession([a, b], id)
  expect(rows.filter((r) => r.role === 'user').map((r) => r.branch)).toEqual([
    { index: 0, count: 2 },
    { index: 1, count: 2 },
  ])
})

test("another device's turn reaches a watcher as new rows, without a reset, and search finds it", async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'appended' })
  await turn(a.engine, id, 'one')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  await a.engine.search('one', { sessionId: id })
  const changes: SessionChange[] = []
  const stop = await a.engine.watch(id, (change) => {
    if (change.sync === undefined) changes.push(change)
  })
  try {
    await turn(b.engine, id, 'zebra crossing')
    await converged([a, b], id)
    await expectSameSession([a, b], id)
    expect(changes.some((c) => c.reset)).toBe(false)
    const delivered = changes.flatMap((c) => c.rows.map((r) => r.id))
    const fromB = (await allRows(b.engine, id)).slice(-2).map((r) => r.id)
    for (const rowId of fromB) expect(delivered).toContain(rowId)
    const until = Date.now() + 5000
    let hits = await a.engine.search('zebra', { sessionId: id })
    while (hits.length === 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50))
      hits = await a.engine.search('zebra', { sessionId: id })
    }
    expect(hits.map((h) => h.messageId)).toContain(fromB[0])
  } finally {
    stop()
  }
})

test('another tab on the rewritten database reloads the session: a reset, then the rows the sync wrote', async () => {
  const a = make('a')
  const b = make('b')
  const { id } = await a.engine.createSession({ title: 'tabs' })
  await turn(a.engine, id, 'shared')
  await a.engine.sync(id, { url: server.url })
  await b.engine.sync(id, { url: server.url })
  await converged([a, b], id)
  // A second tab of device a: its own engine on the same database, not syncing.
  const tab = createEngine({ dbName: a.dbName, indexedDB, IDBKeyRange, schedule: immediateSchedule })
  try {
    const changes: SessionChange[] = []
    const stop = await tab.watch(id, (change) => {
      changes.push(change)
    })
    expect((await allRows(tab, id)).length).toBe(2)
    a.net.offline = true
    await turn(a.engine, id, 'a apart', 100)
    await turn(b.engine, id, 'b apart', 7)
    await converged([b], id)
    a.net.offline = false
    await converged([a, b], id)
    const { rows } = await expectSameSession([a, b], id)
    const until = Date.now() + 5000
    while (JSON.stringify(await allRows(tab, id)) !== JSON.stringify(rows) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 25))
    expect(await allRows(tab, id)).toEqual(rows)
    expect(await tab.events(id, { limit: 1000 })).toEqual(await a.engine.events(id, { limit: 1000 }))
    expect(changes.some((c) => c.reset)).toBe(true)
    // Its folds too: a cache moved forward over a changed past would count turns twice.
    expect(await tab.outline(id)).toEqual(await a.engine.outline(id))
    expect(await tab.projection(id, 'usage')).toEqual({ input: 107, output: 107, calls: 2 })
    expect(await a.engine.projection(id, 'usage')).toEqual({ input: 107, output: 107, calls: 2 })
    expect((await tab.context(id)).rows.map((r) => r.id)).toEqual(
      (await a.engine.context(id)).rows.map((r) => r.id),
    )
    stop()
  } finally {
    await tab.close()
  }
})
