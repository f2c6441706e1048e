/**
 * The engine's methods over whole sessions: create, get, list and delete. A session is created
 * with its `session/created` event and fold state in one transaction, and cached at once; a
 * deleted one stops syncing first and is dropped from the cache, the search index and peers' caches.
 *
 * @example
 *   const sessions = createSessionMethods({ db, now, cache, notes, history, searchIndex, stopSync, noteSessions })
 *   const engine = { createSession: guard('createSession', sessions.createSession), … }
 */
import { nanoid } from 'nanoid'
import { initFolds, stampAndFold } from '../core/folds'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { CreateSessionRequest } from '../schema/session'
import { type SessionlineDb, type SessionRow, sessionInfo } from '../store/db'
import { deleteSessionData, getSessionRow, inRead, inWrite } from '../store/transactions'
import { readHintAfter } from './cache/load'
import type { Notes } from './notes'
import { notFound, type SessionCache, type Snapshot } from './session-cache'
import type { Engine } from './types'

export interface SessionMethodsDeps {
  db: SessionlineDb
  now: () => number
  cache: Pick<SessionCache, 'use' | 'setSnapshot' | 'putFolds' | 'entries' | 'removeEntry'>
  notes: Notes
  /** What else keeps per-session state, told when a session is deleted. */
  history: { forget(sessionId: string): void }
  searchIndex: { forget(sessionId: string): Promise<void> }
  /** Stops the session's sync, if it syncs (sessionline/sync); resolves at once otherwise. */
  stopSync(sessionId: string): Promise<void>
  /** Keeps the note outside IndexedDB in step with whether the database holds sessions. */
  noteSessions(): void
}

type SessionMethod = 'createSession' | 'getSession' | 'listSessions' | 'deleteSession'

const sessionIdOf = (value: unknown) => parseOrThrow(Id, value, 'session id')

export function createSessionMethods({
  db,
  now,
  cache,
  notes,
  history,
  searchIndex,
  stopSync,
  noteSessions,
}: SessionMethodsDeps): Pick<Engine, SessionMethod> {
  return {
    async createSession(request = {}) {
      const { id = nanoid(), title = '' } = parseOrThrow(
        CreateSessionRequest,
        request,
        'createSession request',
      )
      const at = now()
      const created = { type: 'session/created', data: { title } } as const
      const snap = await inWrite(db, async () => {
        if (await getSessionRow(db, id)) {
          throw new SessionlineError('conflict', `a session ${JSON.stringify(id)} already exists`, {
            sessionId: id,
          })
        }
        const folded = stampAndFold(initFolds(), [created], id, 1, at)
        const row: SessionRow = {
          id,
          title,
          createdAt: at,
          updatedAt: at,
          headSeq: 1,
          nextInputSeq: 1,
          source: 'native',
          rev: 1,
        }
        const snap: Snapshot = { row, folds: folded.folds, pending: [] }
        row.readHint = readHintAfter(row, snap)
        await Promise.all([
          db.sessions.add(row),
          db.events.bulkAdd(folded.stored),
          cache.putFolds(id, 1, folded.folds),
        ])
        return snap
      })
      await cache.use(id, async (entry) => {
        if (!entry.snap) cache.setSnapshot(entry, snap)
      })
      noteSessions()
      return sessionInfo(snap.row)
    },

    async getSession(sessionId) {
      const row = await inRead(db, () => getSessionRow(db, sessionIdOf(sessionId)))
      return row && sessionInfo(row)
    },

    async listSessions() {
      const rows = await db.sessions.orderBy('updatedAt').reverse().toArray()
      return rows.map(sessionInfo)
    },

    async deleteSession(sessionId) {
      const id = sessionIdOf(sessionId)
      // A sync still running would pull the session back from its stream.
      await stopSync(id)
      await inWrite(db, async () => {
        if (!(await getSessionRow(db, id))) throw notFound(id)
        await deleteSessionData(db, id)
      })
      notes.post({ sessionId: id, rev: Number.MAX_SAFE_INTEGER, deleted: true })
      history.forget(id)
      const entry = cache.entries.get(id)
      if (entry) cache.removeEntry(entry)
      await searchIndex.forget(id)
      noteSessions()
    },
  }
}
