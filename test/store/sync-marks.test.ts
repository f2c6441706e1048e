/**
 * How outbox batches were sent and acknowledged is recorded in the sync state, apart from the
 * batches' events (docs/decisions/0036, Measured): recording writes the small state row and
 * never the stored batch again. Outbox rows written before the marks moved (their `sent` and
 * `acked` on the row itself) are read as they stand; a pull folds the marks into the rows it
 * writes, and a new engine keeps them.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, expect, test } from 'vitest'
import type { SyncBatch } from '../../src/schema/sync'
import { openDb, type SessionlineDb, type SyncOutboxRow, type SyncStateRow } from '../../src/store/db'
import { commitPull, readSyncView, recordSends, startSyncState } from '../../src/store/sync'
import { freshDbName } from '../support/engines'

const opened: SessionlineDb[] = []
afterEach(() => {
  for (const db of opened.splice(0)) db.close()
})

const batch = (batchId: string): SyncBatch => ({
  v: 1,
  kind: 'batch',
  device: 'd',
  batchId,
  parentHead: null,
  baseTurn: 0,
  events: [{ type: 'session/created', data: { title: batchId }, at: 1 }],
})

/** A state and outbox as a release before the marks moved wrote them (the marks on the rows). */
async function oldShape() {
  const db = openDb(freshDbName('sync-marks'), { indexedDB, IDBKeyRange })
  opened.push(db)
  const state: SyncStateRow = {
    sessionId: 's',
    url: 'http://127.0.0.1:1',
    deviceId: 'd',
    epoch: 0,
    nextProducerSeq: 2,
    offset: '-1',
    canonicalSeq: 0,
    seen: [],
    skipped: 0,
  }
  const outbox: SyncOutboxRow[] = [
    { sessionId: 's', fromSeq: 1, toSeq: 1, batch: batch('b1'), sent: { epoch: 0, seq: 0 }, acked: true },
    { sessionId: 's', fromSeq: 2, toSeq: 2, batch: batch('b2'), sent: { epoch: 0, seq: 1 } },
    { sessionId: 's', fromSeq: 3, toSeq: 3, batch: batch('b3') },
  ]
  await db.syncState.put(state)
  await db.syncOutbox.bulkAdd(outbox)
  return { db, state, outbox }
}

test('rows of the old shape are read as they stand; marks recorded since override them, without rewriting a batch', async () => {
  const { db, outbox } = await oldShape()
  expect((await readSyncView(db, 's')).outbox).toEqual(outbox)

  // The acknowledgement of b2 and the send of b3, in one transaction.
  const marks = { b2: { sent: { epoch: 0, seq: 1 }, acked: true }, b3: { sent: { epoch: 0, seq: 2 } } }
  expect(await recordSends(db, 's', { epoch: 0, nextProducerSeq: 3 }, marks)).toBe(true)
  const view = await readSyncView(db, 's')
  expect(view.outbox.map((o) => [o.batch.batchId, o.sent, o.acked])).toEqual([
    ['b1', { epoch: 0, seq: 0 }, true],
    ['b2', { epoch: 0, seq: 1 }, true],
    ['b3', { epoch: 0, seq: 2 }, undefined],
  ])
  expect(view.state?.nextProducerSeq).toBe(3)
  // The stored batches are exactly as they were written.
  expect(await db.syncOutbox.toArray()).toEqual(outbox)

  // An engine of an older epoch records nothing.
  expect(
    await recordSends(db, 's', { epoch: -1, nextProducerSeq: 9 }, { b3: { sent: { epoch: -1, seq: 8 } } }),
  ).toBe(false)
  expect(await readSyncView(db, 's')).toEqual(view)
})

test('a pull writes the marks into the outbox rows it keeps and drops them from the state; a new engine keeps them', async () => {
  const { db } = await oldShape()
  await recordSends(
    db,
    's',
    { epoch: 0, nextProducerSeq: 3 },
    { b3: { sent: { epoch: 0, seq: 2 }, acked: true } },
  )
  const view = await readSyncView(db, 's')
  // A pull that confirmed b1: b2 and b3 remain.
  const state = { ...view.state!, offset: '0_1' }
  const remaining = view.outbox.slice(1)
  expect(
    await commitPull(db, { sessionId: 's', expectRev: undefined, epoch: 0, state, outbox: remaining }),
  ).toBe(true)
  const stored = await db.syncState.get('s')
  expect(stored?.sends).toBeUndefined()
  expect(await db.syncOutbox.toArray()).toEqual(remaining)
  expect((await readSyncView(db, 's')).outbox).toEqual(remaining)

  // Marks recorded after the pull survive the engine starting again (an acknowledged batch is
  // not sent again by the next one).
  await recordSends(
    db,
    's',
    { epoch: 0, nextProducerSeq: 4 },
    { b2: { sent: { epoch: 0, seq: 3 }, acked: true } },
  )
  const next = await startSyncState(db, 's', 'http://127.0.0.1:1', () => 'other')
  expect(next.epoch).toBe(1)
  expect((await readSyncView(db, 's')).outbox.map((o) => [o.batch.batchId, o.sent, o.acked])).toEqual([
    ['b2', { epoch: 0, seq: 3 }, true],
    ['b3', { epoch: 0, seq: 2 }, true],
  ])
})
