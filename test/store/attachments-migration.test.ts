/**
 * Schema version 4 adds the attachment tables (docs/decisions/0031). A database written at
 * version 3, with sessions in it, opens with today's engine: nothing of it changes, the new
 * tables exist and start empty, and its sessions take attachments and delete completely.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import { openDb } from '../../src/store/db'
import { SCHEMA_VERSION, SCHEMA_VERSIONS } from '../../src/store/migrations'
import { freshDbName } from '../support/engines'
import { storedTables } from '../support/stored-tables'

const options = { indexedDB, IDBKeyRange }
const V3 = SCHEMA_VERSIONS.filter((v) => v.version <= 3)

test('a version 3 database upgrades to version 4 unchanged, with empty attachment tables that then work', async () => {
  expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(4)
  const dbName = freshDbName('v3')
  // Written at version 3: the engine's writes go through whatever schema the database has, so
  // the rows are written by a version 3 connection of our own (the layout differs only in tables).
  const old = openDb(dbName, options, V3)
  await old.open()
  await old.sessions.add({
    id: 's',
    title: 'old',
    createdAt: 1,
    updatedAt: 1,
    headSeq: 1,
    nextInputSeq: 2,
    source: 'native',
    rev: 2,
  })
  await old.events.add({ sessionId: 's', seq: 1, at: 1, type: 'session/created', data: { title: 'old' } })
  await old.inputs.add({
    id: 'i1',
    sessionId: 's',
    seq: 1,
    delivery: 'steer',
    text: 'kept',
    status: 'pending',
    admittedAt: 1,
    revision: 0,
  })
  old.close()
  const before = await storedTables(dbName, V3)
  expect(before.verno).toBe(3)
  expect(Object.keys(before.tables)).not.toContain('attachments')

  // Opened with today's schema: the upgrade itself changes no row and adds two empty tables.
  const after = await storedTables(dbName)
  expect(after.verno).toBe(SCHEMA_VERSION)
  for (const [name, rows] of Object.entries(before.tables)) expect(after.tables[name], name).toEqual(rows)
  expect(after.tables.attachments).toEqual([])
  expect(after.tables.attachmentRefs).toEqual([])

  const engine = createEngine({ dbName, ...options })
  try {
    expect((await engine.pending('s')).map((r) => r.text)).toEqual(['kept'])
    const data = new Blob([new Uint8Array([1, 2, 3])], { type: 'text/plain' })
    const receipt = await engine.admit('s', {
      text: 'with a file',
      attachments: [{ name: 'a.txt', mediaType: 'text/plain', data }],
    })
    expect(receipt.seq).toBe(2)
    const id = receipt.attachments?.[0]?.attachmentId ?? ''
    expect(await (await engine.attachment(id))?.text()).toBe('\u0001\u0002\u0003')
    await engine.deleteSession('s')
    for (const [name, rows] of Object.entries((await storedTables(dbName)).tables))
      expect(rows, name).toEqual([])
  } finally {
    await engine.close()
  }
})
