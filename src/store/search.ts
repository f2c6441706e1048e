/**
 * Storage of the search index (src/engine/search/): each session's index as numbered parts in
 * the `search` table, read and written in transactions of their own. The index is derived from
 * the rows and checked against the session row before use, so it never needs to share a
 * transaction with the writes it follows: a part that is behind is caught up, never trusted.
 */
import { MAX_KEY, MIN_KEY, type SearchPartRow, type SessionlineDb, type SessionRow } from './db'
import { rowsFrom } from './transactions'

/** Every stored part of one session's index, ascending by part. */
export function readSearchParts(db: SessionlineDb, sessionId: string): Promise<SearchPartRow[]> {
  return db.transaction('r', db.search, () =>
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
  return db.transaction('r', db.sessions, async () => {
    if (sessionId === undefined) return db.sessions.toArray()
    const row = await db.sessions.get(sessionId)
    return row ? [row] : []
  })
}

/** The session row and its readable rows (visible and inactive) with seq ≥ `fromSeq`, read together. */
export function rowsToIndex(db: SessionlineDb, sessionId: string, fromSeq: number) {
  return db.transaction('r', [db.sessions, db.messages], async () => {
    const [row, rows] = await Promise.all([
      db.sessions.get(sessionId),
      rowsFrom(db, sessionId, fromSeq, undefined, true),
    ])
    return { row, rows }
  })
}

/** Rows by id, in the order asked (undefined where gone). */
export function rowsById(db: SessionlineDb, ids: readonly string[]) {
  return db.transaction('r', db.messages, () => db.messages.bulkGet([...ids]))
}
