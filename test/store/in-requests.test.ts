/**
 * `inRequests` settles however many requests a read takes. Reading in requests of
 * `ROWS_PER_REQUEST` turns a log of 950,000 events into 9,500 requests; a chain that nested one
 * promise per request never settled past about 10,000 (the bench's 100,000-turn compaction hung),
 * while 5,000 did. Each request here is a real read in the transaction, answering a synthetic
 * batch, so 20,000 requests take a second, not two million stored rows.
 */
import Dexie from 'dexie'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect, test } from 'vitest'
import { inRequests, ROWS_PER_REQUEST } from '../../src/store/transactions'

test('a read of 20,000 requests settles, in order, inside its transaction', async () => {
  const db = new Dexie('in-requests-depth', { indexedDB, IDBKeyRange })
  db.version(1).stores({ t: 'k' })
  const table = db.table<{ k: number }, number>('t')
  await table.add({ k: 1 })
  const requests = 20_000
  const limit = requests * ROWS_PER_REQUEST - 7
  let issued = 0
  const keys = await db.transaction('r', table, () =>
    inRequests(
      limit,
      (after: number | undefined, count) => {
        issued++
        return table.get(1).then(() => Array.from({ length: count }, (_, i) => (after ?? 0) + i + 1))
      },
      (key: number) => key,
    ),
  )
  expect(issued).toBe(requests)
  expect(keys.length).toBe(limit)
  expect(keys.every((key, i) => key === i + 1)).toBe(true)
  db.close()
}, 30_000)

test('a failed request rejects the read', async () => {
  const db = new Dexie('in-requests-failure', { indexedDB, IDBKeyRange })
  db.version(1).stores({ t: 'k' })
  const table = db.table<{ k: number }, number>('t')
  const failure = await db
    .transaction('r', table, () =>
      inRequests(
        1000,
        (after: number | undefined, count) =>
          after === 300
            ? Dexie.Promise.reject(new Error('request failed'))
            : table.get(1).then(() => Array.from({ length: count }, (_, i) => (after ?? 0) + i + 1)),
        (key: number) => key,
      ),
    )
    .catch((error: unknown) => error)
  expect(failure).toBeInstanceOf(Error)
  expect((failure as Error).message).toBe('request failed')
  db.close()
})
