/**
 * Schema version 5 adds the sync tables (docs/decisions/0036). A database written at version 4,
 * with a session in it, opens with today's schema: nothing of it changes, the new tables exist
 * and start empty, and its session can start syncing (its state is made, its epoch moves on).
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect, test } from 'vitest'
import { openDb } from '../../src/store/db'
import { SCHEMA_VERSION, SCHEMA_VERSIONS } from '../../src/store/migrations'
import { readSyncView, startSyncState } from '../../src/store/sync'
import { freshDbName } from '../support/engines'
import { storedTables } from '../support/stored-tables'

const options = { indexedDB, IDBKeyRange }
const V4 = SCHEMA_VERSIONS.filter((v) => v.version <= 4)

test('a version 4 database upgrades unchanged, with empty sync tables that then work', async () => {
  const dbName = freshDbName('v4')
  const old = openDb(dbName, options, V4)
  await old.open()
  await old.sessions.add({
    id: 's',
    title: 'old',
    createdAt: 1,
    updatedAt: 1,
    headSeq: 1,
    nextInputSeq: 1,
    source: 'native',
    rev: 1,
  })
  await old.events.add({ sessionId: 's', seq: 1, at: 1, type: 'session/created', data: { title: 'old' } })
  old.close()
  const before = await storedTables(dbName, V4)
  expect(before.verno).toBe(4)
  expect(Object.keys(before.tables)).not.toContain('syncState')

  const after = await storedTables(dbName)
  // Today's version: version 6 after 5 renames chunk rows only, and this database has none.
  expect(after.verno).toBe(SCHEMA_VERSION)
  for (const [name, rows] of Object.entries(before.tables)) expect(after.tables[name], name).toEqual(rows)
  expect(after.tables.syncState).toEqual([])
  expect(after.tables.syncOutbox).toEqual([])

  const db = openDb(dbName, options)
  try {
    const first = await startSyncState(db, 's', 'http://127.0.0.1:1', () => 'dev-1')
    expect(first).toMatchObject({ deviceId: 'dev-1', epoch: 0, offset: '-1', canonicalSeq: 0 })
    // A second engine taking over the same device's sync takes the next epoch and keeps the cursor.
    const second = await startSyncState(db, 's', 'http://127.0.0.1:1', () => 'unused')
    expect(second).toMatchObject({ deviceId: 'dev-1', epoch: 1, offset: '-1' })
    const view = await readSyncView(db, 's')
    expect(view.row?.headSeq).toBe(1)
    expect(view.events.map((e) => e.type)).toEqual(['session/created'])
    expect(view.outbox).toEqual([])
  } finally {
    db.close()
  }
})
