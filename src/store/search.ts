/**
 * Storage of the search index (src/engine/search/): each session's index as numbered parts in
 * the `search` table, read and written in transactions of their own (reads answer early, 0026).
 * The index is derived from the rows and checked against the session row before use, so it
 * never needs to share a transaction with the writes it follows: a part that is behind is caught
 * up, never trusted.
 */

import { isReadable } from '../core/visibility'
import { MAX_KEY, MIN_KEY, type SearchPartRow, type SessionlineDb, type SessionRow } from './db'
import { answerRead, inRequests, storedRowsFrom } from './transactions'

/** Every stored part of one session's index, ascending by part. */
export function readSearchParts(db: SessionlineDb, sessionId: string): Promise<SearchPartRow[]> {
  return answerRead(db, [db.search], () =>
    db.search.where('[sessionId+part]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).toArray(),
  )
}

/** Stores `parts` and deletes the session's parts numbered `keepBelow` and up that are not among them. */
export function writeSearchParts(
  db: SessionlineDb,
  sessionId: string,
  parts: readonly SearchPartRow[],
  keepBelow: number,
): Promise<void> {
  return db.transaction('rw', db.search, async () => {
    await Promise.all([
      db.search.where('[sessionId+part]').between([sessionId, keepBelow], [sessionId, MAX_KEY]).delete(),
      db.search.bulkPut([...parts]),
    ])
  })
}

export function deleteSearchParts(db: SessionlineDb, sessionId: string): Promise<unknown> {
  return db.transaction('rw', db.search, () =>
    db.search.where('[sessionId+part]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete(),
  )
}

/** The session rows search looks at: one, or all. */
export function sessionRowsFor(db: SessionlineDb, sessionId?: string): Promise<SessionRow[]> {
  return answerRead(db, [db.sessions], async () => {
    if (sessionId === undefined) return db.sessions.toArray()
    const row = await db.sessions.get(sessionId)
    return row ? [row] : []
  })
}

/**
 * The session row and, read together with it, up to `limit` stored rows from `fromSeq` on (in
 * requests of `ROWS_PER_REQUEST`), of which the readable ones (visible and inactive) are
 * returned; `nextSeq` is where the next page starts, undefined after the last.
 */
export function rowsToIndex(db: SessionlineDb, sessionId: string, fromSeq: number, limit: number) {
  return answerRead(db, [db.sessions, db.messages], async () => {
    const [row, stored] = await Promise.all([
      db.sessions.get(sessionId),
      storedRowsFrom(db, sessionId, fromSeq, undefined, limit),
    ])
    const last = stored.at(-1)
    const nextSeq = stored.length === limit && last ? last.seq + 1 : undefined
    return { row, rows: stored.filter((r) => isReadable(r.visibility, true)), nextSeq }
  })
}

/**
 * Up to `limit` stored rows of any session in primary-key order, after `afterId` (from the
 * start without it; in requests of `ROWS_PER_REQUEST`), of which the readable ones are
 * returned; `nextAfter` is where the next page starts, undefined after the last. With
 * `sessions`, every session row is read in the same transaction. Reading the table in key order
 * costs storage less than reading it session by session through the `[sessionId+seq]` index
 * (each index entry is a second lookup).
 */
export function rowsInKeyOrder(
  db: SessionlineDb,
  afterId: string | undefined,
  limit: number,
  sessions: boolean,
) {
  return answerRead(db, [db.sessions, db.messages], async () => {
    const [rows, stored] = await Promise.all([
      sessions ? db.sessions.toArray() : undefined,
      inRequests(
        limit,
        (after: string | undefined, count) => {
          const from = after ?? afterId
          return (from === undefined ? db.messages.toCollection() : db.messages.where(':id').above(from))
            .limit(count)
            .toArray()
        },
        (row) => row.id,
      ),
    ])
    const last = stored.at(-1)
    const nextAfter = stored.length === limit && last ? last.id : undefined
    return { sessions: rows, rows: stored.filter((r) => isReadable(r.visibility, true)), nextAfter }
  })
}

/** The stored index heads (part 0) of `sessionIds`, in that order (undefined where none). */
export function searchHeads(db: SessionlineDb, sessionIds: readonly string[]) {
  return answerRead(db, [db.search], () =>
    db.search.bulkGet(sessionIds.map((id): [string, number] => [id, 0])),
  )
}

/** One session row. */
export function sessionRow(db: SessionlineDb, sessionId: string): Promise<SessionRow | undefined> {
  return answerRead(db, [db.sessions], () => db.sessions.get(sessionId))
}

/** Rows by id, in the order asked (undefined where gone). */
export function rowsById(db: SessionlineDb, ids: readonly string[]) {
  return answerRead(db, [db.messages], () => db.messages.bulkGet([...ids]))
}
