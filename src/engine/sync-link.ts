/**
 * What the engine does for the sync plug-in (`createEngine({sync})`, docs/decisions/0036) when a
 * pull changes a session under it: a rewritten log is reloaded like a re-import, others' events
 * appended after the log and receipts promoted by rows that arrived are taken like another
 * engine's commit, and a status change goes to the session's watchers as a change of its own.
 *
 * @example
 *   const link = createSyncLink({ db, cache, notes, history, searchIndex, noteSessions, isClosed })
 *   const driver = options.sync?.attach({ engine, db, now, putFolds, ...link })
 */
import type { SessionMessage } from '../schema/messages'
import type { SyncStatus } from '../schema/sync'
import type { SessionlineDb } from '../store/db'
import { getSessionRow } from '../store/transactions'
import type { Notes } from './notes'
import type { SessionCache } from './session-cache'
import type { SyncHost } from './types'

export interface SyncLinkDeps {
  db: SessionlineDb
  cache: Pick<SessionCache, 'entries' | 'catchUp'>
  notes: Notes
  /** What else keeps per-session state, told when a session's log is rewritten. */
  history: { forget(sessionId: string): void }
  searchIndex: {
    forget(sessionId: string): Promise<void>
    refresh(sessionId: string): void
    onRows(sessionId: string, rows: readonly SessionMessage[], fromHead: number, toHead: number): void
  }
  /** Keeps the note outside IndexedDB in step with whether the database holds sessions. */
  noteSessions(): void
  isClosed(): boolean
}

export function createSyncLink({
  db,
  cache,
  notes,
  history,
  searchIndex,
  noteSessions,
  isClosed,
}: SyncLinkDeps): Pick<SyncHost, 'logRewritten' | 'logAppended' | 'inputsChanged' | 'publishStatus'> {
  return {
    /** Sync rewrote or created a session's log: like a re-import, caches reload and peers are told. */
    async logRewritten(sessionId: string): Promise<void> {
      const row = await getSessionRow(db, sessionId)
      if (row) notes.post({ sessionId, rev: row.rev })
      history.forget(sessionId)
      await searchIndex.forget(sessionId)
      searchIndex.refresh(sessionId)
      const entry = cache.entries.get(sessionId)
      if (entry?.snap) await cache.catchUp(entry)
      noteSessions()
    },

    /** Sync appended others' events after a session's log: like a commit of another engine. */
    async logAppended(
      sessionId: string,
      rows: readonly SessionMessage[],
      fromHead: number,
      toHead: number,
    ): Promise<void> {
      const row = await getSessionRow(db, sessionId)
      if (row) notes.post({ sessionId, rev: row.rev })
      searchIndex.onRows(sessionId, rows, fromHead, toHead)
      const entry = cache.entries.get(sessionId)
      if (entry?.snap) await cache.catchUp(entry)
    },

    /** Sync promoted receipts (their rows arrived from another device): like another engine's commit. */
    async inputsChanged(sessionId: string): Promise<void> {
      const row = await getSessionRow(db, sessionId)
      if (row) notes.post({ sessionId, rev: row.rev })
      const entry = cache.entries.get(sessionId)
      if (entry?.snap) await cache.catchUp(entry)
    },

    /** A sync status change, to the session's watchers (a change that carries nothing else). */
    publishStatus(sessionId: string, status: SyncStatus): void {
      const entry = cache.entries.get(sessionId)
      if (!entry?.snap || isClosed() || entry.feed.size === 0) return
      const headSeq = entry.snap.row.headSeq
      entry.feed.push({ sessionId, durable: true, headSeq, rows: [], inputs: [], views: {}, sync: status })
    },
  }
}
