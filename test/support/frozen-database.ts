/**
 * Loads a frozen database (test/store/fixtures/v1-database.json and v5-database.json: the layout and every row an older
 * release wrote) into an IndexedDB, exactly as that release left it: same IndexedDB version, same
 * object stores and indexes, same rows. Plain IndexedDB, no Dexie and no Node API, so a browser
 * test can load the same file into a real browser's IndexedDB and open it with today's engine.
 *
 * @example
 *   const fixture = parseFrozenDatabase(JSON.parse(readFileSync(v1DatabaseUrl, 'utf8')))
 *   await loadFrozenDatabase(fixture, indexedDB, 'old-db') // fake-indexeddb in Node, the page's in a browser
 *   const engine = createEngine({ dbName: 'old-db', indexedDB, IDBKeyRange })
 */

/** Where the version 1 fixture lives (a file URL in Node, an asset URL under Vite). */
export const v1DatabaseUrl = new URL('../store/fixtures/v1-database.json', import.meta.url)
/** The version 5 fixture: chunk rows named as before schema version 6 (test/store/fixtures/README.md). */
export const v5DatabaseUrl = new URL('../store/fixtures/v5-database.json', import.meta.url)

export interface FrozenIndex {
  name: string
  keyPath: string | string[]
  unique: boolean
  multiEntry: boolean
}

export interface FrozenStore {
  name: string
  keyPath: string | string[]
  autoIncrement: boolean
  indexes: FrozenIndex[]
}

export const FROZEN_TABLES = ['sessions', 'events', 'inputs', 'messages', 'projections'] as const
export type FrozenTable = (typeof FROZEN_TABLES)[number]

type Row = Record<string, unknown>

/** What the fixture's writer served for one session, read back by a cold engine of its release. */
export interface ServedSession {
  info: Row
  page: { ids: string[]; baseSeq: number; headSeq: number; hasOlder: boolean }
  pageWithInactive: { ids: string[]; baseSeq: number; headSeq: number; hasOlder: boolean }
  pending: Row[]
  turnOutline: Row[]
  usage: Row
}

export interface FrozenDatabase {
  writtenBy: {
    /** The commit whose code wrote the rows. */
    commit: string
    /** Its first schema version, as it declared it (Dexie store specs). */
    schema: { version: number; why: string; stores: Record<string, string> }
    /** What IndexedDB held for that version: Dexie stores version n as IndexedDB version 10·n. */
    layout: { version: number; stores: FrozenStore[] }
  }
  /** Key paths (from the table's array) of members stored as `undefined`, which JSON cannot keep. */
  undefinedMembers: Record<FrozenTable, (string | number)[][]>
  tables: Record<FrozenTable, Row[]>
  served: { sessions: Row[]; bySession: Record<string, ServedSession> }
}

/** Checks the shape a loader relies on (the file is ours; this catches a truncated or wrong file). */
export function parseFrozenDatabase(json: unknown): FrozenDatabase {
  const f = json as Partial<FrozenDatabase> | null
  const ok =
    typeof f === 'object' &&
    f !== null &&
    typeof f.writtenBy?.commit === 'string' &&
    Number.isInteger(f.writtenBy.layout?.version) &&
    Array.isArray(f.writtenBy.layout?.stores) &&
    FROZEN_TABLES.every((t) => Array.isArray(f.tables?.[t]) && Array.isArray(f.undefinedMembers?.[t])) &&
    Array.isArray(f.served?.sessions)
  if (!ok) throw new Error('not a frozen database fixture')
  return f as FrozenDatabase
}

/** The rows of `table` as IndexedDB held them: members JSON dropped are put back as `undefined`. */
export function frozenRows(fixture: FrozenDatabase, table: FrozenTable): Row[] {
  const rows = structuredClone(fixture.tables[table])
  for (const path of fixture.undefinedMembers[table]) {
    let target: unknown = rows
    for (const key of path.slice(0, -1)) target = (target as Record<string | number, unknown>)[key]
    ;(target as Record<string | number, unknown>)[path.at(-1) as string | number] = undefined
  }
  return rows
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error)
  })
}

/**
 * Creates database `name` (which must not exist yet) at the fixture's IndexedDB version with its
 * stores and indexes, and writes every row in one transaction. Resolves once it is committed and
 * the connection is closed, so an engine can open (and upgrade) it next.
 */
export async function loadFrozenDatabase(
  fixture: FrozenDatabase,
  indexedDB: IDBFactory,
  name: string,
): Promise<void> {
  const { layout } = fixture.writtenBy
  const open = indexedDB.open(name, layout.version)
  open.onupgradeneeded = (event) => {
    if (event.oldVersion !== 0) throw new Error(`database ${name} already exists`)
    for (const spec of layout.stores) {
      const store = open.result.createObjectStore(spec.name, {
        keyPath: spec.keyPath,
        autoIncrement: spec.autoIncrement,
      })
      for (const index of spec.indexes)
        store.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry })
    }
  }
  const db = await request(open)
  try {
    const tx = db.transaction([...FROZEN_TABLES], 'readwrite')
    const done = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve()
      tx.onerror = () => reject(tx.error)
      tx.onabort = () => reject(tx.error ?? new Error('aborted'))
    })
    for (const table of FROZEN_TABLES) {
      const store = tx.objectStore(table)
      for (const row of frozenRows(fixture, table)) store.add(row)
    }
    await done
  } finally {
    db.close()
  }
}
