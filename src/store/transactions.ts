/**
 * Reads and writes of one session, in the shapes the engine needs. Each function runs inside
 * whatever Dexie transaction is active (`inWrite`/`inRead` open one); none awaits anything
 * but IndexedDB, so a transaction never commits early.
 */
import type { StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import { MAX_KEY, MIN_KEY, type ProjectionRow, type SessionlineDb, type SessionRow } from './db'

/** Runs `scope` in one readwrite transaction over every table; it commits when `scope` settles. */
export function inWrite<T>(db: SessionlineDb, scope: () => Promise<T>): Promise<T> {
  return db.transaction('rw', [db.sessions, db.events, db.inputs, db.messages, db.projections], scope)
}

/** Runs `scope` in one readonly transaction: every read inside sees one consistent state. */
export function inRead<T>(db: SessionlineDb, scope: () => Promise<T>): Promise<T> {
  return db.transaction('r', [db.sessions, db.events, db.inputs, db.messages, db.projections], scope)
}

export const getSessionRow = (db: SessionlineDb, sessionId: string): Promise<SessionRow | undefined> =>
  db.sessions.get(sessionId)

/** Pending receipts of a session in admission order (the `[sessionId+status+seq]` index). */
export function pendingReceipts(db: SessionlineDb, sessionId: string): Promise<InputReceipt[]> {
  return db.inputs
    .where('[sessionId+status+seq]')
    .between([sessionId, 'pending', MIN_KEY], [sessionId, 'pending', MAX_KEY])
    .toArray()
}

/** Receipts with admission seq ≥ `fromSeq`, ascending. */
export function receiptsFrom(db: SessionlineDb, sessionId: string, fromSeq: number): Promise<InputReceipt[]> {
  return db.inputs.where('[sessionId+seq]').between([sessionId, fromSeq], [sessionId, MAX_KEY]).toArray()
}

/** Events with `afterSeq < seq ≤ throughSeq`, ascending, at most `limit`. */
export function eventsBetween(
  db: SessionlineDb,
  sessionId: string,
  afterSeq: number,
  throughSeq: number | typeof MAX_KEY = MAX_KEY,
  limit?: number,
): Promise<StoredEvent[]> {
  const range = db.events
    .where('[sessionId+seq]')
    .between([sessionId, afterSeq], [sessionId, throughSeq], false, true)
  return (limit === undefined ? range : range.limit(limit)).toArray()
}

export function projectionRows(
  db: SessionlineDb,
  sessionId: string,
  names: readonly string[],
): Promise<(ProjectionRow | undefined)[]> {
  return db.projections.bulkGet(names.map((name) => [sessionId, name] as [string, string]))
}

export interface RowWindow {
  /** Ascending by seq. */
  rows: SessionMessage[]
  /** Another readable row exists below the lowest returned. */
  hasOlder: boolean
}

const readable = (includeInactive: boolean) => (row: SessionMessage) =>
  row.visibility === 'visible' || (includeInactive && row.visibility === 'inactive')

/**
 * The newest `limit` readable rows with seq below `beforeSeq`, ascending. Reads newest first
 * with a cursor and stops one row past the page, which tells whether older rows exist.
 */
export async function rowsBelow(
  db: SessionlineDb,
  sessionId: string,
  beforeSeq: number | undefined,
  limit: number,
  includeInactive: boolean,
): Promise<RowWindow> {
  const upper = beforeSeq ?? MAX_KEY
  const newestFirst = await db.messages
    .where('[sessionId+seq]')
    .between([sessionId, MIN_KEY], [sessionId, upper], true, false)
    .reverse()
    .filter(readable(includeInactive))
    .limit(limit + 1)
    .toArray()
  const hasOlder = newestFirst.length > limit
  const rows = (hasOlder ? newestFirst.slice(0, limit) : newestFirst).reverse()
  return { rows, hasOlder }
}

/** Every readable row with `fromSeq ≤ seq < beforeSeq`, ascending. */
export function rowsFrom(
  db: SessionlineDb,
  sessionId: string,
  fromSeq: number,
  beforeSeq: number | undefined,
  includeInactive: boolean,
): Promise<SessionMessage[]> {
  return db.messages
    .where('[sessionId+seq]')
    .between([sessionId, fromSeq], [sessionId, beforeSeq ?? MAX_KEY], true, false)
    .filter(readable(includeInactive))
    .toArray()
}

/** Deletes a session and everything it owns. */
export async function deleteSessionData(db: SessionlineDb, sessionId: string): Promise<void> {
  const all = (table: 'events' | 'inputs' | 'messages') =>
    db[table].where('[sessionId+seq]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete()
  await Promise.all([
    db.sessions.delete(sessionId),
    all('events'),
    all('inputs'),
    all('messages'),
    db.projections.where('[sessionId+name]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete(),
  ])
}
