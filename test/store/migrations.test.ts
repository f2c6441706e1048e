import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect, test } from 'vitest'
import { openDb, type SessionlineDb } from '../../src/store/db'
import { SCHEMA_VERSION, SCHEMA_VERSIONS } from '../../src/store/migrations'
import { freshDbName, inProcessEngine } from '../support/engines'

const options = { indexedDB, IDBKeyRange }
const TABLES = ['sessions', 'events', 'inputs', 'messages', 'projections'] as const

async function dump(db: SessionlineDb) {
  const out: Record<string, unknown[]> = {}
  for (const table of TABLES) out[table] = await db[table].toArray()
  return out
}

test('versions only grow and each says why it exists', () => {
  const numbers = SCHEMA_VERSIONS.map((v) => v.version)
  expect(numbers).toEqual([...numbers].sort((a, b) => a - b))
  expect(new Set(numbers).size).toBe(numbers.length)
  expect(SCHEMA_VERSIONS.every((v) => v.why.length > 0)).toBe(true)
  expect(SCHEMA_VERSION).toBe(numbers.at(-1))
})

test('a version 1 database upgrades in place and keeps serving its sessions', async () => {
  // Real data, written by today's engine…
  const source = freshDbName('mig-src')
  const writer = await inProcessEngine({ dbName: source })
  const { id } = await writer.engine.createSession({ id: 's', title: 'Old' })
  await writer.engine.admit(id, { id: 'a', text: 'promoted one' })
  await writer.engine.promote(id, 'settled')
  await writer.engine.admit(id, { id: 'b', text: 'still pending', delivery: 'queue' })
  await writer.engine.admit(id, { id: 'c', text: 'cancelled' })
  await writer.engine.cancel(id, 'c')
  const before = {
    page: await writer.engine.page(id),
    pending: await writer.engine.pending(id),
    outline: await writer.engine.projection(id, 'turnOutline'),
  }
  await writer.close()
  const src = openDb(source, options)
  const rows = await dump(src)
  src.close()

  // …copied into a database that only knows the first schema version.
  const dbName = freshDbName('mig')
  const v1 = openDb(dbName, options, SCHEMA_VERSIONS.slice(0, 1))
  await v1.transaction('rw', TABLES as unknown as string[], async () => {
    for (const table of TABLES) await v1.table(table).bulkAdd(rows[table] ?? [])
  })
  expect(v1.verno).toBe(1)
  expect(v1.inputs.schema.idxByName['[sessionId+status+seq]']).toBeUndefined()
  v1.close()

  const { engine, close } = await inProcessEngine({ dbName })
  try {
    expect(await engine.page(id)).toEqual(before.page)
    expect(await engine.pending(id)).toEqual(before.pending)
    expect(await engine.projection(id, 'turnOutline')).toEqual(before.outline)
    await engine.append(id, [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }])
    expect((await engine.promote(id, 'settled')).map((r) => r.id)).toEqual(['b'])
  } finally {
    await close()
  }

  const upgraded = openDb(dbName, options)
  await upgraded.open()
  expect(upgraded.verno).toBe(SCHEMA_VERSION)
  expect(upgraded.inputs.schema.idxByName['[sessionId+status+seq]']).toBeDefined()
  expect(await upgraded.inputs.count()).toBe(3)
  upgraded.close()
})
