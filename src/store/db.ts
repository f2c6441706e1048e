/**
 * The IndexedDB database of sessionline (docs/architecture.md §3), declared with Dexie. This is the only
 * module that imports `dexie`: the rest of the store speaks in these row types and helpers.
 *
 * @example
 *   const db = openDb('sessionline', { indexedDB, IDBKeyRange }) // fake-indexeddb in Node
 *   await db.sessions.get(id)
 */
import Dexie, { type EntityTable, type Table } from 'dexie'
import type { LaggingRow } from '../core/materialize'
import type { ClaimFold } from '../core/sync-claim'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionInfo } from '../schema/session'
import type { SyncBatch } from '../schema/sync'
import { SCHEMA_VERSIONS, type SchemaVersion } from './migrations'
import type { ReadHint } from './read-hint'

/** A session as stored: its public info plus `rev`, bumped by every write to the session. */
export interface SessionRow extends SessionInfo {
  /** Monotonic write counter: a reader whose cache holds the same `rev` is up to date. */
  rev: number
  /**
   * Streaming rows whose stored version lags the log (docs/decisions/0021): a reader patches
   * them with the deltas logged after their `through`. Absent: every stored row is current.
   */
  lagging?: LaggingRow[]
  /**
   * How often session sync rewrote this session's log past its canonical prefix
   * (docs/decisions/0036); a cache made before the last rewrite cannot be moved forward.
   */
  rebased?: number
  /** What a first read on the page needs besides this row, as of one write (see `ReadHint`). */
  readHint?: ReadHint
}

/** What a session row shows outside the engine: everything but its write counter, lag marks and hint. */
export const sessionInfo = ({
  rev: _rev,
  lagging: _lagging,
  rebased: _rebased,
  readHint: _readHint,
  ...rest
}: SessionRow): SessionInfo => rest

/** Cached fold state of one projection, consistent with the log through `throughSeq`. */
export interface ProjectionRow<S = unknown> {
  sessionId: string
  name: string
  version: number
  throughSeq: number
  state: S
}

/**
 * One part of a session's persisted search index: part 0 says what the index is synced to,
 * parts 1… hold serialized index segments (see src/engine/search/).
 */
export interface SearchPartRow {
  sessionId: string
  part: number
  /** Version of the index format and tokenizer; another version is rebuilt from the rows. */
  version: number
  data: unknown
}

/** The bytes of one attachment, stored once per content. */
export interface AttachmentRow {
  /** SHA-256 of the bytes, lowercase hex. */
  id: string
  size: number
  /** The bytes, with the media type they were first admitted with. */
  data: Blob
}

/**
 * That session `sessionId` references attachment `attachmentId` (one row however often it does):
 * the bytes' reference count is the number of these rows, read through the `attachmentId` index.
 */
export interface AttachmentRefRow {
  sessionId: string
  attachmentId: string
}

/** Where one synced session stands with its stream (docs/decisions/0036). */
export interface SyncStateRow {
  sessionId: string
  /** The server's base URL. */
  url: string
  /** This device's producer id on the stream. */
  deviceId: string
  /** The producer epoch of the engine that pushes now; each engine that starts syncing takes the next. */
  epoch: number
  /** The producer seq the next batch sent in this epoch takes. */
  nextProducerSeq: number
  /** The stream offset read through (`-1`: nothing read yet). */
  offset: string
  /** Events 1..canonicalSeq of the local log are the stream's canonical log; those after are this device's. */
  canonicalSeq: number
  /** `${device}/${batchId}` of every batch in the canonical log. */
  seen: string[]
  /** Stream messages skipped as unfoldable, and why the last one was. */
  skipped: number
  lastSkip?: string
  /** The runner claim folded from the stream through `offset` (docs/decisions/0036, amendment). */
  claim?: ClaimFold
  /**
   * How outbox batches were sent and acknowledged since the outbox was last written, by batch id
   * (they override the row's own `sent`/`acked`). Kept here so recording a send or an
   * acknowledgement writes this small row, not the batch's events again; a pull folds them
   * into the outbox rows it writes. Absent in rows written before it existed.
   */
  sends?: Record<string, SendMark>
}

/** How one outbox batch was last sent, and whether the server acknowledged it. */
export interface SendMark {
  /** The producer epoch and seq it was last sent with. */
  sent: { epoch: number; seq: number }
  /** The server acknowledged it under `sent`. */
  acked?: boolean
}

/** A batch of this device's events not yet confirmed by the stream, in local log order. */
export interface SyncOutboxRow {
  sessionId: string
  /** The local seqs its events hold now (a rebase moves them). */
  fromSeq: number
  toSeq: number
  batch: SyncBatch
  /** The producer epoch and seq it was last sent with. */
  sent?: { epoch: number; seq: number }
  /** The server acknowledged it under `sent`. */
  acked?: boolean
}

export type SessionlineDb = Dexie & {
  sessions: EntityTable<SessionRow, 'id'>
  events: Table<StoredEvent, [string, number]>
  inputs: EntityTable<InputReceipt, 'id'>
  messages: EntityTable<SessionMessage, 'id'>
  projections: Table<ProjectionRow, [string, string]>
  search: Table<SearchPartRow, [string, number]>
  attachments: EntityTable<AttachmentRow, 'id'>
  attachmentRefs: Table<AttachmentRefRow, [string, string]>
  syncState: EntityTable<SyncStateRow, 'sessionId'>
  syncOutbox: Table<SyncOutboxRow, [string, number]>
}

/** Any key-range factory (the DOM's or fake-indexeddb's); Dexie only calls it. */
type KeyRangeMaker = (...args: never) => unknown

export interface DbOptions {
  /** An `IDBFactory` (Node passes fake-indexeddb's). Defaults to the global one. */
  indexedDB?: { open: IDBFactory['open'] }
  /** The matching `IDBKeyRange` class. */
  IDBKeyRange?: { bound: KeyRangeMaker; lowerBound: KeyRangeMaker; upperBound: KeyRangeMaker }
}

/**
 * Declares `versions` on `db`: the last one's number with each table's newest spec, and before it
 * only the versions that have an upgrade function, each with the specs up to it. Dexie (3.0 and
 * later) upgrades a database from whatever version is installed by comparing the installed stores
 * and indexes with the declared ones, then runs the upgrade function of each declared version
 * above the installed one; a version with neither needs no declaration of its own. Declared one
 * by one, the five versions cost about 1 ms of every engine's start, as much as a cold read of
 * the tail (issue 28). Tests pass a prefix of SCHEMA_VERSIONS to build an old database.
 */
export function declareSchema(db: Dexie, versions: readonly SchemaVersion[] = SCHEMA_VERSIONS): void {
  const stores: Record<string, string> = {}
  versions.forEach((v, index) => {
    Object.assign(stores, v.stores)
    if (!v.upgrade && index < versions.length - 1) return
    const declared = db.version(v.version).stores({ ...stores })
    if (v.upgrade) declared.upgrade(v.upgrade)
  })
}

/** Dexie's own middleware that only serves liveQuery and table hooks, which sessionline never uses. */
const UNUSED_MIDDLEWARE = ['Observability', 'Cache', 'HooksMiddleware'] as const

export function openDb(
  name: string,
  options: DbOptions & { durability?: 'relaxed' | 'strict' } = {},
  versions?: readonly SchemaVersion[],
): SessionlineDb {
  const db = new Dexie(name, {
    // Dexie spreads its options over its defaults: an explicit `undefined` would erase the
    // browser's own IndexedDB ("IndexedDB API missing"), so pass only what was given.
    ...(options.indexedDB && { indexedDB: options.indexedDB }),
    ...(options.IDBKeyRange && { IDBKeyRange: options.IDBKeyRange }),
    // The engine keeps its own caches; Dexie's optimistic liveQuery cache only costs time here.
    cache: 'disabled',
    // Despite its name, Dexie hands this to every browser's `IDBDatabase.transaction`.
    ...(options.durability && { chromeTransactionDurability: options.durability }),
  }) as SessionlineDb
  // Nothing observes this database through Dexie (the engine publishes its own changes):
  // Dexie's liveQuery bookkeeping would compute the key ranges of every write and post them
  // to every tab and worker of the origin at each commit. Hooks are not used either.
  for (const name of UNUSED_MIDDLEWARE) db.unuse({ stack: 'dbcore', name })
  declareSchema(db, versions)
  return db
}

/** The lowest and highest keys of a compound index for one session. */
export const MIN_KEY = Dexie.minKey
export const MAX_KEY = Dexie.maxKey

/** Names (Dexie's and the DOM's) of failures that mean the database cannot be used right now. */
const UNAVAILABLE = new Set([
  'DatabaseClosedError',
  'OpenFailedError',
  'MissingAPIError',
  'VersionError',
  'UpgradeError',
  'InvalidStateError',
  'TransactionInactiveError',
  'AbortError',
  'UnknownError',
  'InvalidAccessError',
  'NoSuchDatabaseError',
  'PrematureCommitError',
  'SecurityError',
])

/**
 * Names of a failure and of what it wraps: Dexie's `inner`, an Error's `cause`, and each
 * failed item of a bulk write (`failures`), a few levels deep.
 */
export function namesOf(error: unknown, depth = 0): string[] {
  if (!error || typeof error !== 'object' || depth > 4) return []
  const named = error as { name?: unknown; inner?: unknown; cause?: unknown; failures?: unknown }
  const names = typeof named.name === 'string' ? [named.name] : []
  names.push(...namesOf(named.inner ?? named.cause, depth + 1))
  const failures = Array.isArray(named.failures)
    ? named.failures
    : named.failures && typeof named.failures === 'object'
      ? Object.values(named.failures)
      : []
  for (const failure of failures.slice(0, 8)) names.push(...namesOf(failure, depth + 1))
  return names
}

/**
 * Translates a storage failure into a `SessionlineError`; our own errors pass through. A
 * quota failure may arrive wrapped (Dexie's AbortError with the QuotaExceededError inside).
 */
export function toSessionlineError(error: unknown, operation: string): SessionlineError {
  if (isSessionlineError(error)) return error
  const names = namesOf(error)
  const message = error instanceof Error ? error.message : String(error)
  if (names.includes('QuotaExceededError')) {
    return new SessionlineError(
      'quota_exceeded',
      `${operation}: storage quota exceeded`,
      { names },
      { cause: error },
    )
  }
  if (names.some((n) => UNAVAILABLE.has(n))) {
    return new SessionlineError(
      'storage_unavailable',
      `${operation}: the database is unavailable (${message})`,
      { names },
      { cause: error },
    )
  }
  return new SessionlineError('internal', `${operation}: ${message}`, { names }, { cause: error })
}
