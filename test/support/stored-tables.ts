/**
 * Every row of every table of a database, read back through a fresh connection declaring
 * `versions` (today's schema unless given), with the version it opened at: what a migration
 * test compares before and after an upgrade.
 *
 * @example
 *   const before = await storedTables(dbName, SCHEMA_VERSIONS.filter((v) => v.version <= 4))
 *   const after = await storedTables(dbName) // opening it upgraded it
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { openDb } from '../../src/store/db'
import { SCHEMA_VERSIONS, type SchemaVersion } from '../../src/store/migrations'

export async function storedTables(
  dbName: string,
  versions: readonly SchemaVersion[] = SCHEMA_VERSIONS,
): Promise<{ verno: number; tables: Record<string, unknown[]> }> {
  const db = openDb(dbName, { indexedDB, IDBKeyRange }, versions)
  try {
    await db.open()
    const tables: Record<string, unknown[]> = {}
    for (const table of db.tables) tables[table.name] = await table.toArray()
    return { verno: db.verno, tables }
  } finally {
    db.close()
  }
}
