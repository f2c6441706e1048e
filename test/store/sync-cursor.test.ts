/**
 * A pull that brought no batch commits its cursor, skips and claim alone (src/store/sync.ts
 * `commitCursor`, docs/decisions/0036 amendment "An idle session is cheap"): one transaction on
 * the sync state that keeps every other field (the sends' marks, the seen batches, the outbox
 * as stored), and writes nothing for an engine fenced meanwhile or a cursor that moved. The read
 * before it (`readSyncHead`) reads no event.
 */
import { IDBKeyRange } from 'fake-indexeddb'
import { afterEach, expect, test } from 'vitest'
import type { SyncBatch } from '../../src/schema/sync'
import { openDb, type SessionlineDb, type SyncOutboxRow, type SyncStateRow } from '../../src/store/db'
import { commitCursor, readSyncHead, readSyncView } from '../../src/store/sync'
import { freshDbName } from '../support/engines'
import { createReadCountingFactory } from '../support/read-counting-factory'

const opened: SessionlineDb[] = []
afterEach(() => {
  for (const db of opened.splice(0)) db.close()
})

const batch: SyncBatch = {
  v: 1,
  kind: 'batch',
  device: 'd',
  batchId: 'b1',
  parentHead: null,
  baseTurn: 0,
  events: [{ type: 'session/created', data: { title: 't' }, at: 1 }],
}

async function synced() {
  const reads = createReadCountingFactory()
  const db = openDb(freshDbName('sync-cursor'), { indexedDB: reads.factory, IDBKeyRange })
  opened.push(db)
  const state: SyncStateRow = {
    sessionId: 's',
    url: 'http://127.0.0.1:1',
    deviceId: 'd',
    epoch: 3,
    nextProducerSeq: 5,
    offset: 'o1',
    canonicalSeq: 1,
    seen: ['x/b0'],
    skipped: 1,
    lastSkip: 'earlier',
    claim: { device: 'e', at: 10, ttlMs: 100 },
    sends: { b1: { sent: { epoch: 3, seq: 4 } } },
  }
  const outbox: SyncOutboxRow[] = [{ sessionId: 's', fromSeq: 2, toSeq: 2, batch }]
  await db.syncState.put(state)
  await db.syncOutbox.bulkAdd(outbox)
  await db.events.bulkAdd([
    { type: 'session/created', data: { title: 't' }, at: 1, sessionId: 's', seq: 1 },
    { type: 'session/created', data: { title: 't' }, at: 1, sessionId: 's', seq: 2 },
  ])
  return { db, state, reads }
}

test('the cursor, skips and claim move in one write; the rest of the state and the outbox stay', async () => {
  const { db, state, reads } = await synced()
  const before = await readSyncView(db, 's')
  reads.reset()
  const head = await readSyncHead(db, 's')
  expect(reads.requests('events', 'messages')).toBe(0)
  expect(head).toEqual({ row: before.row, state: before.state, outbox: before.outbox })

  const claim = { device: 'd', at: 20, ttlMs: 100 }
  const next = { ...state, offset: 'o2', skipped: 2, lastSkip: 'not a batch', claim }
  expect(await commitCursor(db, 's', 'o1', next)).toBe(true)
  expect(await db.syncState.get('s')).toEqual({
    ...state,
    offset: 'o2',
    skipped: 2,
    lastSkip: 'not a batch',
    claim,
  })
  expect((await readSyncView(db, 's')).outbox).toEqual(before.outbox)
})

test('an engine fenced meanwhile, or a cursor that moved, commits nothing', async () => {
  const { db, state } = await synced()
  const next = { ...state, offset: 'o2', claim: null }
  expect(await commitCursor(db, 's', 'o1', { ...next, epoch: 2 })).toBe(false)
  expect(await commitCursor(db, 's', 'o0', next)).toBe(false)
  expect(await commitCursor(db, 'other', 'o1', next)).toBe(false)
  expect(await db.syncState.get('s')).toEqual(state)
})
