/**
 * The engine's connection to its database, and everything that can happen to it: the open
 * (IndexedDB missing or refused), a newer version opened in another tab (`versionchange`), an
 * upgrade of ours blocked by an older tab, the database deleted from under us (site data
 * cleared, `indexedDB.deleteDatabase`), and a strict flush. Failures become one
 * `SessionlineError('storage_unavailable')` whose `details.reason` says which.
 *
 * @example
 *   const connection = openConnection('sessionline', { storage: 'indexeddb', durability: 'relaxed' })
 *   connection.onLost((error) => tellWatchers(error))
 *   await connection.ready() // before every call
 *   await connection.flush()
 */
import { SessionlineError, type StorageLoss } from '../schema/errors'
import { type DbOptions, namesOf, openDb, type SessionlineDb } from './db'
import { SCHEMA_VERSION } from './migrations'

/** Where the database lives: the browser's IndexedDB, or memory (gone with the worker). */
export type StorageKind = 'indexeddb' | 'memory'
/** IndexedDB's transaction durability: `strict` waits for the disk, `relaxed` for the OS. */
export type Durability = 'relaxed' | 'strict'

export interface ConnectionOptions extends DbOptions {
  /** `'indexeddb'` (default) or `'memory'`: an in-memory IndexedDB, loaded on first use. */
  storage?: StorageKind
  /** Durability of every write transaction (default `'relaxed'`); `flush()` is always strict. */
  durability?: Durability
}

export interface Connection {
  readonly db: SessionlineDb
  /** Resolves once the database is open; rejects `storage_unavailable` when it cannot be. */
  ready(): Promise<void>
  /** The error every call gets since the connection was lost for good, if it was. */
  readonly lost: SessionlineError | undefined
  /** Called once, when the connection is lost for good. */
  onLost(listener: (error: SessionlineError, reason: StorageLoss) => void): void
  /** One strict transaction: everything committed before it is on disk when it resolves. */
  flush(): Promise<void>
  close(): void
}

const TABLES = ['sessions', 'events', 'inputs', 'messages', 'projections'] as const
/** A projection key no session can have (ids are non-empty): flush writes and deletes it. */
const FLUSH_KEY = ['', 'flush'] as const

type Backend = Required<DbOptions>

/** Waits between the probes after an unexpected close (see `probe`). */
const PROBE_DELAYS_MS = [100, 500, 2000]

/**
 * An IDBFactory and key-range class that forward to a backend loaded later. Dexie takes both
 * when it is built but calls them only once open, and `ready()` waits for the load first.
 */
function deferredBackend(load: () => Promise<Backend>) {
  let backend: Backend | undefined
  const loading = load().then((loaded) => {
    backend = loaded
  })
  const need = (): Backend => {
    if (!backend) throw new DOMException('the in-memory database is still loading', 'InvalidStateError')
    return backend
  }
  type Factory = IDBFactory & Record<string, (...args: never[]) => unknown>
  const factory = {
    open: (name: string, version?: number) => need().indexedDB.open(name, version),
    deleteDatabase: (name: string) => (need().indexedDB as Factory).deleteDatabase(name),
    cmp: (a: unknown, b: unknown) => (need().indexedDB as Factory).cmp(a, b),
    databases: () => (need().indexedDB as Factory).databases(),
  }
  type Range = Record<string, (...args: unknown[]) => unknown>
  const range =
    (name: string) =>
    (...args: unknown[]) =>
      (need().IDBKeyRange as unknown as Range)[name]!(...args)
  const keyRange = {
    bound: range('bound'),
    lowerBound: range('lowerBound'),
    upperBound: range('upperBound'),
    only: range('only'),
  }
  return { options: { indexedDB: factory, IDBKeyRange: keyRange } as Backend, loading }
}

/** One in-memory IndexedDB per realm (a worker), so engines on one name share it as they would IndexedDB. */
let memory: Promise<Backend> | undefined
const memoryBackend = (): Promise<Backend> => {
  memory ??= import('fake-indexeddb').then(({ IDBFactory, IDBKeyRange }) => ({
    indexedDB: new IDBFactory(),
    IDBKeyRange,
  }))
  return memory
}

const unavailable = (reason: string, message: string, cause?: unknown, details: object = {}) =>
  new SessionlineError('storage_unavailable', message, { reason, ...details }, { cause })

export function openConnection(name: string, options: ConnectionOptions = {}): Connection {
  const storage = options.storage ?? 'indexeddb'
  if (storage !== 'indexeddb' && storage !== 'memory')
    throw new SessionlineError(
      'invalid_input',
      `storage must be 'indexeddb' or 'memory', not ${String(storage)}`,
    )
  const durability = options.durability ?? 'relaxed'
  if (durability !== 'relaxed' && durability !== 'strict')
    throw new SessionlineError(
      'invalid_input',
      `durability must be 'relaxed' or 'strict', not ${String(durability)}`,
    )

  const deferred = storage === 'memory' ? deferredBackend(memoryBackend) : undefined
  const backend = deferred?.options ?? options
  const db = openDb(name, { indexedDB: backend.indexedDB, IDBKeyRange: backend.IDBKeyRange, durability })
  let lost: SessionlineError | undefined
  const lostListeners: ((error: SessionlineError, reason: StorageLoss) => void)[] = []
  /** The database existed (or was created by us) once: creating it again means it was deleted. */
  let everOpened = false
  let closedByUs = false
  let opening: Promise<void> | undefined
  let blocked: SessionlineError | undefined
  const waiting = new Set<(error: SessionlineError) => void>()

  function lose(reason: StorageLoss, message: string, cause?: unknown): SessionlineError {
    if (lost) return lost
    lost = unavailable(reason, message, cause)
    closedByUs = true
    db.close({ disableAutoOpen: true })
    for (const reject of [...waiting]) reject(lost)
    for (const listener of lostListeners.splice(0)) {
      try {
        listener(lost, reason)
      } catch {
        // A listener's failure is its own.
      }
    }
    return lost
  }

  // Added after Dexie's own handler, so it runs first; `false` stops Dexie's, which would close
  // and silently reopen (at our older version, or into a freshly created empty database).
  db.on('versionchange', (event: IDBVersionChangeEvent) => {
    if (event.newVersion === null || event.newVersion === 0) {
      lose(
        'database_deleted',
        `the database ${JSON.stringify(name)} was deleted by another connection; reload to start again`,
      )
    } else {
      lose(
        'upgraded',
        `the database ${JSON.stringify(name)} was upgraded by a newer version of the app in another tab; reload this one`,
      )
    }
    return false
  })
  db.on('blocked', (event: IDBVersionChangeEvent) => {
    blocked = unavailable(
      'blocked',
      `opening ${JSON.stringify(name)} (version ${event.newVersion}) waits for another tab that holds an older version open; close or reload it`,
      undefined,
      { oldVersion: event.oldVersion, newVersion: event.newVersion },
    )
    for (const reject of [...waiting]) reject(blocked)
  })
  // A reopen that creates the database means ours is gone (site data cleared while closed):
  // aborting the creation leaves no empty database behind, and the loss is reported.
  db.on('populate', () => {
    if (everOpened) throw lose('database_deleted', deletedMessage())
  })
  // The browser closed the connection (site data cleared, a storage failure). Probes open the
  // database beside Dexie: one that would have to create it shows ours is gone, aborts the
  // creation and reports the loss, so watchers hear it without waiting for the next call.
  // Chromium fires `close` before it removes the files, so a probe that still finds the
  // database is repeated a few times; past those, a call's reopen still finds out (`populate`).
  db.on('close', () => {
    if (!closedByUs && !lost) probe(0)
  })

  function probe(attempt: number): void {
    if (closedByUs || lost) return
    let request: IDBOpenDBRequest
    try {
      // Without an explicit factory Dexie uses the global one, and so does the probe.
      const factory = (backend.indexedDB ?? globalThis.indexedDB) as IDBFactory
      request = factory.open(name)
    } catch {
      return
    }
    request.onupgradeneeded = () => {
      request.transaction?.abort()
      lose('database_deleted', deletedMessage())
    }
    request.onsuccess = () => {
      request.result.close()
      const delay = PROBE_DELAYS_MS[attempt]
      if (delay === undefined) return
      const timer = setTimeout(() => probe(attempt + 1), delay) as { unref?: () => void }
      timer.unref?.()
    }
    request.onerror = (event) => event.preventDefault()
  }

  const deletedMessage = () =>
    `the database ${JSON.stringify(name)} was deleted (site data cleared?); reload to start again`

  function open(): Promise<void> {
    const run = async () => {
      await deferred?.loading
      try {
        await db.open()
      } catch (error) {
        throw lost ?? openFailure(error)
      }
      // Dexie opens a database a newer release upgraded when its tables are still there; this
      // release must not write rows in its older shapes into it.
      // (Dexie stores version v as 10·v, plus one for a schema it patched in place.)
      const installed = Math.floor(db.backendDB().version / 10)
      if (installed > SCHEMA_VERSION) {
        throw lose(
          'upgraded',
          `the database ${JSON.stringify(name)} is at version ${installed}, newer than this app's ${SCHEMA_VERSION}; reload to get the newer app`,
        )
      }
      everOpened = true
      blocked = undefined
    }
    const attempt = run()
    // A failed open is tried again by the next call (storage may come back); a good one stays.
    attempt.catch(() => {
      if (opening === attempt) opening = undefined
    })
    return attempt
  }

  function openFailure(error: unknown): SessionlineError {
    const names = namesOf(error)
    const message = error instanceof Error ? error.message : String(error)
    if (names.includes('VersionError')) {
      return unavailable(
        'upgraded',
        `the database ${JSON.stringify(name)} was upgraded by a newer version of the app; reload this one`,
        error,
        { names },
      )
    }
    if (names.includes('QuotaExceededError')) {
      return new SessionlineError(
        'quota_exceeded',
        'storage quota exceeded while opening the database',
        { names },
        { cause: error },
      )
    }
    return unavailable(
      'open_failed',
      `IndexedDB cannot be opened (${message}). Private browsing or disabled site data can cause this; ` +
        `createEngine({ storage: 'memory' }) keeps sessions in memory instead.`,
      error,
      { names },
    )
  }

  async function ready(): Promise<void> {
    if (lost) throw lost
    if (everOpened) return
    if (blocked) throw blocked
    opening ??= open()
    const current = opening
    // A blocked upgrade rejects the calls waiting for it at once instead of hanging them.
    await new Promise<void>((resolve, reject) => {
      const fail = (error: SessionlineError) => {
        waiting.delete(fail)
        reject(error)
      }
      waiting.add(fail)
      current.then(
        () => {
          waiting.delete(fail)
          resolve()
        },
        (error: unknown) => fail(error as SessionlineError),
      )
    })
  }

  async function flush(): Promise<void> {
    await ready()
    if (!db.isOpen()) await db.open()
    const idb = db.backendDB()
    await new Promise<void>((resolve, reject) => {
      // Readwrite transactions over the same stores run in the order they were created, so
      // this one commits after every write acknowledged before it; a strict commit returns only
      // once all outstanding changes are on disk (IndexedDB, "durability").
      const tx = idb.transaction([...TABLES], 'readwrite', { durability: 'strict' })
      const projections = tx.objectStore('projections')
      projections.put({ sessionId: FLUSH_KEY[0], name: FLUSH_KEY[1], version: 0, throughSeq: 0, state: null })
      projections.delete([...FLUSH_KEY])
      tx.oncomplete = () => resolve()
      tx.onabort = () => reject(tx.error ?? new DOMException('flush aborted', 'AbortError'))
    })
  }

  return {
    db,
    ready,
    get lost() {
      return lost
    },
    onLost(listener) {
      if (lost) return
      lostListeners.push(listener)
    },
    flush,
    close() {
      closedByUs = true
      db.close({ disableAutoOpen: true })
    },
  }
}
