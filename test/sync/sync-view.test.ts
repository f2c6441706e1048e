/**
 * `readSyncView` keeps each synced session's log between reads and reads only what was appended
 * since: differential against a plain read of the whole log, through appends, a log rewritten
 * by a pull, and a session deleted and made again with the same id at the same instant (so its
 * row's `createdAt`, `rebased` and `rev` match the cached one's, and so does its last event: only
 * its first event, another title, tells them apart; a session made again in the same millisecond
 * with the same first and last events is the limit the engine's cache has too).
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { openDb, type SessionlineDb } from '../../src/store/db'
import { readSyncView } from '../../src/store/sync'
import { eventsBetween } from '../../src/store/transactions'
import { freshDbName, immediateSchedule } from '../support/engines'
import { converged, device, startServer, turn } from './support'

const opened: { close(): unknown }[] = []
afterEach(async () => {
  // Engines before the server: a server stops once no long-poll is open.
  for (const o of opened.splice(0).reverse()) await o.close()
})

/** The view's log against the whole log read plainly, in one go. */
async function expectWholeLog(db: SessionlineDb, sessionId: string) {
  const view = await readSyncView(db, sessionId)
  const plain = await db.transaction('r', db.events, () => eventsBetween(db, sessionId, 0))
  expect(view.events).toEqual(plain)
  expect(view.events.length).toBe(view.row?.headSeq ?? 0)
  return view
}

describe('readSyncView', () => {
  it('answers the whole log after appends and after a session made again at the same instant', async () => {
    const dbName = freshDbName('sync-view')
    const at = Date.UTC(2026, 0, 1)
    const engine: Engine = createEngine({
      dbName,
      indexedDB,
      IDBKeyRange,
      schedule: immediateSchedule,
      now: () => at,
    })
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    opened.push(engine, db)
    await engine.createSession({ id: 's', title: 'first' })
    await turn(engine, 's', 'one')
    await expectWholeLog(db, 's')
    await turn(engine, 's', 'two')
    const before = await expectWholeLog(db, 's')
    await engine.deleteSession('s')
    await engine.createSession({ id: 's', title: 'again' })
    await turn(engine, 's', 'uno')
    await turn(engine, 's', 'dos')
    const after = await expectWholeLog(db, 's')
    // Same id, same instant, same length and last event: only the title tells them apart.
    expect(after.row?.createdAt).toBe(before.row?.createdAt)
    expect(after.row?.rev).toBe(before.row?.rev)
    expect(after.events.at(-1)?.data).toEqual(before.events.at(-1)?.data)
    expect(after.events.length).toBe(before.events.length)
    expect(after.events).not.toEqual(before.events)
  })

  it('answers the rewritten log after a pull rebased this device’s turns', async () => {
    const server = await startServer()
    const a = device('a')
    const b = device('b')
    const db = openDb(b.dbName, { indexedDB, IDBKeyRange })
    opened.push({ close: () => server.stop() }, a.engine, b.engine, db)
    await a.engine.createSession({ id: 's', title: 't' })
    await turn(a.engine, 's', 'shared')
    await a.engine.sync('s', { url: server.url })
    await b.engine.sync('s', { url: server.url })
    await converged([a, b], 's')
    await expectWholeLog(db, 's')
    await Promise.all([a.engine.unsync('s'), b.engine.unsync('s')])
    await turn(a.engine, 's', 'from a')
    await turn(b.engine, 's', 'from b')
    const offline = await expectWholeLog(db, 's')
    await a.engine.sync('s', { url: server.url })
    await converged([a], 's')
    await b.engine.sync('s', { url: server.url })
    await converged([a, b], 's')
    const rewritten = await expectWholeLog(db, 's')
    expect(rewritten.row?.rebased).toBeGreaterThan(offline.row?.rebased ?? 0)
    expect(rewritten.events.length).toBeGreaterThan(offline.events.length)
  })
})
