/**
 * The engine (DESIGN.md §3–§6): the inbox, the event log and its projections over one Dexie
 * database. Every write is one readwrite transaction that allocates seqs from the session row;
 * per session the engine caches the fold state it last published (`Snapshot`) and reuses it
 * inside a transaction only when the row's `rev` proves nobody wrote since.
 *
 * @example
 *   import { indexedDB, IDBKeyRange } from 'fake-indexeddb'
 *   const engine = createEngine({ dbName: 'test-1', indexedDB, IDBKeyRange })
 *   const { id } = await engine.createSession({ title: 'Demo' })
 *   await engine.admit(id, { text: 'hello' })
 *   await engine.promote(id, 'settled')
 */
import { nanoid } from 'nanoid'
import { z } from 'zod'
import { selectForPromotion } from '../core/pending'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { SessionEvent } from '../schema/events'
import { AdmitRequest, EditRequest, type InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { ProviderConfig } from '../schema/provider'
import {
  EventsRequest,
  LoadThroughRequest,
  type MessagePage,
  PageRequest,
  PromoteMode,
} from '../schema/requests'
import { CreateSessionRequest } from '../schema/session'
import {
  type DbOptions,
  openDb,
  type SessionlineDb,
  type SessionRow,
  sessionInfo,
  toSessionlineError,
} from '../store/db'
import { type ImportedWrite, importFilesInto, importTranscriptInto } from '../store/imported'
import {
  deleteSessionData,
  eventsBetween,
  getSessionRow,
  inRead,
  inRowsRead,
  inWrite,
  rowsAbove,
  rowsBelow,
  rowsFrom,
} from '../store/transactions'
import { createBatcher, type Scheduler } from './batch'
import { createWriter, type Plan } from './commit'
import { initFolds, stampAndFold, turnStateOf } from './fold'
import { createNotes } from './notes'
import type { ModelProvider, Tools } from './provider'
import { createRunner } from './runner'
import { createSearchIndex, type SearchIndexEvent } from './search/index'
import { createSessionCache, notFound, type Snapshot, sameReceipt } from './session-cache'
import type { Engine, ProjectionName, ProjectionViews, RunnerHost, Unsubscribe } from './types'

export interface EngineOptions extends DbOptions {
  /** IndexedDB database name (default `'sessionline'`); engines on one name share sessions. */
  dbName?: string
  /** Clock for `at`, `admittedAt`, `createdAt`… (tests inject one). */
  now?: () => number
  /** Model provider of the built-in runner (default: none, host-driven). */
  provider?: ProviderConfig | ModelProvider
  tools?: Tools
  /** When batched streaming previews are flushed (default: 16 ms after the first one). */
  schedule?: Scheduler
  /** Tell other engines on this database about commits (default: when BroadcastChannel exists). */
  broadcast?: boolean
  /** Told what the search index did per session (loaded, caught up, rebuilt, persisted); diagnostics. */
  onSearchIndex?: (event: SearchIndexEvent) => void
}

const SessionEvents = z.array(SessionEvent).max(10_000)
const ProjectionNameSchema = z.enum(['turnOutline', 'usage', 'pending'])

export function createEngine(options: EngineOptions = {}): Engine {
  return createEngineWithHost(options).engine
}

/** The engine and the host its runner drives it through (tests drive the host directly). */
export function createEngineWithHost(options: EngineOptions = {}): { engine: Engine; host: RunnerHost } {
  const dbName = options.dbName ?? 'sessionline'
  const now = options.now ?? Date.now
  const db: SessionlineDb = openDb(dbName, { indexedDB: options.indexedDB, IDBKeyRange: options.IDBKeyRange })
  const inputListeners = new Set<(sessionId: string) => void>()
  // Notes reach the cache once it exists; none can arrive before (the channel opens lazily).
  const notes = createNotes(dbName, (note) => cache.onNote(note), options.broadcast ?? true)
  let closed = false
  const cache = createSessionCache({
    db,
    now,
    batch: createBatcher(options.schedule),
    notes,
    isClosed: () => closed,
    // Not awaited: recovery appends through the public API.
    recover: (sessionId) => {
      runner.recover(sessionId).catch(() => undefined)
    },
  })
  const {
    entries,
    entryOf,
    loaded,
    fresh,
    setSnapshot,
    viewsOf,
    requestPreview,
    removeEntry,
    catchUp,
    putFolds,
  } = cache
  const searchIndex = createSearchIndex({ db, onEvent: options.onSearchIndex })
  const { commit, planEvents, bump } = createWriter({ db, cache, notes, onRows: searchIndex.onRows })

  // --- the public surface ------------------------------------------------------------------

  function guard<A extends unknown[], R>(operation: string, run: (...args: A) => Promise<R>) {
    return async (...args: A): Promise<R> => {
      if (closed) throw new SessionlineError('storage_unavailable', `${operation}: the engine is closed`)
      try {
        return await run(...args)
      } catch (error) {
        throw toSessionlineError(error, operation)
      }
    }
  }

  const sessionIdOf = (value: unknown) => parseOrThrow(Id, value, 'session id')

  const engine: Engine = {
    createSession: guard('createSession', async (request = {}) => {
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
        await Promise.all([
          db.sessions.add(row),
          db.events.bulkAdd(folded.stored),
          putFolds(id, 1, folded.folds),
        ])
        return { row, folds: folded.folds, pending: [] } satisfies Snapshot
      })
      const entry = entryOf(id)
      if (!entry.snap) setSnapshot(entry, snap)
      return sessionInfo(snap.row)
    }),

    getSession: guard('getSession', async (sessionId) => {
      const row = await inRead(db, () => getSessionRow(db, sessionIdOf(sessionId)))
      return row && sessionInfo(row)
    }),

    listSessions: guard('listSessions', async () => {
      const rows = await db.sessions.orderBy('updatedAt').reverse().toArray()
      return rows.map(sessionInfo)
    }),

    deleteSession: guard('deleteSession', async (sessionId) => {
      const id = sessionIdOf(sessionId)
      await inWrite(db, async () => {
        if (!(await getSessionRow(db, id))) throw notFound(id)
        await deleteSessionData(db, id)
      })
      notes.post({ sessionId: id, rev: Number.MAX_SAFE_INTEGER, deleted: true })
      const entry = entries.get(id)
      if (entry) removeEntry(entry)
      await searchIndex.forget(id)
    }),

    admit: guard('admit', async (sessionId, request) => {
      const id = sessionIdOf(sessionId)
      const parsed = parseOrThrow(AdmitRequest, request, 'admit request')
      const inputId = parsed.id ?? nanoid()
      let created = false
      const receipt = await commit<InputReceipt, [InputReceipt | undefined, SessionMessage | undefined]>(id, {
        scope: 'inbox',
        prefetch: () => Promise.all([db.inputs.get(inputId), db.messages.get(inputId)]),
        // A new id: no row has it (read), and no input (the receipt is added, not put: an
        // existing one aborts the guess, and the careful path answers the retry or conflict).
        expect: () => ({
          prefetched: [undefined, undefined],
          prefetch: () => Promise.all([undefined, db.messages.get(inputId)]),
          holds: ([, row]) => !row,
        }),
        plan: async (base, [existing, row]): Promise<Plan<InputReceipt>> => {
          created = false
          if (existing) {
            const same =
              existing.sessionId === id &&
              existing.text === parsed.text &&
              existing.delivery === parsed.delivery
            if (same) return { value: existing }
            throw new SessionlineError(
              'conflict',
              `input ${JSON.stringify(inputId)} was admitted with another payload`,
              {
                inputId,
              },
            )
          }
          if (row) {
            throw new SessionlineError(
              'conflict',
              `id ${JSON.stringify(inputId)} is already a transcript row`,
              { inputId },
            )
          }
          const at = now()
          const receipt: InputReceipt = {
            id: inputId,
            sessionId: id,
            seq: base.row.nextInputSeq,
            delivery: parsed.delivery,
            text: parsed.text,
            status: 'pending',
            admittedAt: at,
          }
          created = true
          return {
            value: receipt,
            inputs: [receipt],
            newInputs: true,
            next: {
              row: bump(base.row, at, { nextInputSeq: base.row.nextInputSeq + 1 }),
              folds: base.folds,
              pending: [...base.pending, receipt],
            },
          }
        },
      })
      if (created) notifyInput(id)
      return receipt
    }),

    cancel: guard('cancel', async (sessionId, inputId) => {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      return commit<InputReceipt, InputReceipt | undefined>(id, {
        scope: 'inbox',
        prefetch: () => db.inputs.get(input),
        expect: (cached) => expectPending(cached, input),
        plan: async (base, stored): Promise<Plan<InputReceipt>> => {
          const receipt = pendingReceipt(id, input, stored)
          const at = now()
          const cancelled: InputReceipt = { ...receipt, status: 'cancelled', updatedAt: at }
          return {
            value: cancelled,
            inputs: [cancelled],
            next: {
              row: bump(base.row, at),
              folds: base.folds,
              pending: base.pending.filter((r) => r.id !== input),
            },
          }
        },
      })
    }),

    edit: guard('edit', async (sessionId, inputId, request) => {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { text } = parseOrThrow(EditRequest, request, 'edit request')
      let changed = false
      const edited = await commit<InputReceipt, InputReceipt | undefined>(id, {
        scope: 'inbox',
        prefetch: () => db.inputs.get(input),
        expect: (cached) => expectPending(cached, input),
        plan: async (base, stored): Promise<Plan<InputReceipt>> => {
          changed = false
          const receipt = pendingReceipt(id, input, stored)
          if (receipt.text === text) return { value: receipt }
          changed = true
          const at = now()
          const next: InputReceipt = { ...receipt, text, updatedAt: at }
          return {
            value: next,
            inputs: [next],
            next: {
              row: bump(base.row, at),
              folds: base.folds,
              pending: base.pending.map((r) => (r.id === input ? next : r)),
            },
          }
        },
      })
      if (changed) notifyInput(id)
      return edited
    }),

    pending: guard('pending', async (sessionId) => {
      const entry = await fresh(sessionIdOf(sessionId))
      return [...(entry.snap?.pending ?? [])]
    }),

    promote: guard('promote', async (sessionId, mode) => {
      const id = sessionIdOf(sessionId)
      const how = parseOrThrow(PromoteMode, mode, 'promote mode')
      return commit(id, {
        expect: alwaysCurrent,
        plan: async (base): Promise<Plan<SessionMessage[]>> => {
          const turn = base.folds.transcript
          if (how === 'checkpoint' && turn.openTurn === null) {
            throw new SessionlineError('invalid_state', 'promote checkpoint needs an open turn', {
              sessionId: id,
            })
          }
          if (how === 'settled' && turn.openTurn !== null) {
            throw new SessionlineError(
              'invalid_state',
              `promote settled needs no open turn (turn ${turn.openTurn} is open)`,
              {
                sessionId: id,
                openTurn: turn.openTurn,
              },
            )
          }
          const chosen = selectForPromotion(base.pending, how)
          if (chosen.length === 0) return { value: [] }
          const events: SessionEvent[] =
            how === 'settled' ? [{ type: 'turn/start', data: { turn: turn.lastTurn + 1 } }] : []
          for (const r of chosen) {
            events.push({
              type: 'user/message',
              data: { inputId: r.id, text: r.text, delivery: r.delivery, source: 'user' },
            })
          }
          const at = now()
          const { folded, headSeq, created } = planEvents(id, base, events, at)
          const seqOf = new Map(
            folded.stored.flatMap((e) => (e.type === 'user/message' ? [[e.data.inputId, e.seq]] : [])),
          )
          const promoted = chosen.map(
            (r): InputReceipt => ({ ...r, status: 'promoted', promotedSeq: seqOf.get(r.id), updatedAt: at }),
          )
          const taken = new Set(chosen.map((r) => r.id))
          return {
            value: folded.rows.filter((row) => taken.has(row.id)),
            events: folded.stored,
            rows: folded.rows,
            created,
            inputs: promoted,
            next: {
              row: bump(base.row, at, { headSeq }),
              folds: folded.folds,
              pending: base.pending.filter((r) => !taken.has(r.id)),
            },
          }
        },
      })
    }),

    append: guard('append', async (sessionId, events) => {
      const id = sessionIdOf(sessionId)
      const parsed = parseOrThrow(SessionEvents, events, 'events', ['events'])
      const created = parsed.findIndex((e) => e.type === 'session/created')
      if (created >= 0) {
        throw new SessionlineError(
          'invalid_state',
          `events[${created}]: session/created is written by createSession only`,
          {
            index: created,
            type: 'session/created',
          },
        )
      }
      if (parsed.length === 0) {
        const entry = await fresh(id)
        return { headSeq: entry.snap?.row.headSeq ?? 0 }
      }
      return commit(id, {
        expect: alwaysCurrent,
        plan: async (base): Promise<Plan<{ headSeq: number }>> => {
          const at = now()
          const { folded, headSeq, created } = planEvents(id, base, parsed, at)
          return {
            value: { headSeq },
            events: folded.stored,
            rows: folded.rows,
            created,
            next: { row: bump(base.row, at, { headSeq }), folds: folded.folds, pending: base.pending },
          }
        },
      })
    }),

    events: guard('events', async (sessionId, request = {}) => {
      const id = sessionIdOf(sessionId)
      const { afterSeq, limit } = parseOrThrow(EventsRequest, request, 'events request')
      return inRead(db, async () => {
        const [row, events] = await Promise.all([
          getSessionRow(db, id),
          eventsBetween(db, id, afterSeq, undefined, limit),
        ])
        if (!row) throw notFound(id)
        return events
      })
    }),

    page: guard('page', async (sessionId, request = {}) => {
      const id = sessionIdOf(sessionId)
      const { beforeSeq, afterSeq, limit, includeInactive } = parseOrThrow(
        PageRequest,
        request,
        'page request',
      )
      if (afterSeq !== undefined) {
        return inRowsRead(db, async (): Promise<MessagePage> => {
          const [row, { rows, hasNewer }, below] = await Promise.all([
            getSessionRow(db, id),
            rowsAbove(db, id, afterSeq, beforeSeq, limit, includeInactive),
            rowsBelow(db, id, afterSeq + 1, 0, includeInactive),
          ])
          if (!row) throw notFound(id)
          return {
            messages: rows,
            baseSeq: rows[0]?.seq ?? 0,
            headSeq: row.headSeq,
            hasOlder: below.hasOlder,
            hasNewer,
          }
        })
      }
      return inRowsRead(db, async (): Promise<MessagePage> => {
        const [row, { rows, hasOlder }] = await Promise.all([
          getSessionRow(db, id),
          rowsBelow(db, id, beforeSeq, limit, includeInactive),
        ])
        if (!row) throw notFound(id)
        return { messages: rows, baseSeq: rows[0]?.seq ?? 0, headSeq: row.headSeq, hasOlder }
      })
    }),

    loadThrough: guard('loadThrough', async (sessionId, request) => {
      const id = sessionIdOf(sessionId)
      const { seq, beforeSeq, pageSize, includeInactive } = parseOrThrow(
        LoadThroughRequest,
        request,
        'loadThrough request',
      )
      return inRowsRead(db, async (): Promise<MessagePage> => {
        const [row, from] = await Promise.all([
          getSessionRow(db, id),
          rowsFrom(db, id, seq, beforeSeq, includeInactive),
        ])
        if (!row) throw notFound(id)
        // Fill the last page the way paging by `pageSize` would have, so the window ends on a page boundary.
        const fill = (pageSize - (from.length % pageSize)) % pageSize
        const below = from[0]?.seq ?? Math.max(1, Math.min(seq, beforeSeq ?? seq))
        const older = await rowsBelow(db, id, below, fill, includeInactive)
        const messages = [...older.rows, ...from]
        return { messages, baseSeq: messages[0]?.seq ?? 0, headSeq: row.headSeq, hasOlder: older.hasOlder }
      })
    }),

    projection: guard('projection', async <N extends ProjectionName>(sessionId: string, name: N) => {
      const which = parseOrThrow(ProjectionNameSchema, name, 'projection name')
      const entry = await fresh(sessionIdOf(sessionId))
      const view = which === 'pending' ? entry.snap?.pending : viewsOf(entry)[which].getView()
      return view as ProjectionViews[N]
    }) as Engine['projection'],

    watch: guard('watch', async (sessionId, listener) => {
      const id = sessionIdOf(sessionId)
      if (typeof listener !== 'function')
        throw new SessionlineError('invalid_input', 'watch needs a listener function')
      const entry = await loaded(id)
      const unsubscribe = entry.feed.add(listener)
      // While nobody watched, other engines' notes were ignored: publish whatever the cache missed.
      void catchUp(entry)
      return unsubscribe
    }),

    configure: guard('configure', (request) => runner.configure(request)),
    interrupt: guard('interrupt', async (sessionId) => runner.interrupt(sessionIdOf(sessionId))),

    importTranscript: guard('importTranscript', async (request) => {
      const written = await importTranscriptInto(db, request, now)
      await importedChanged(written)
      return written.session
    }),
    importFiles: guard('importFiles', (files, onProgress) =>
      importFilesInto(db, files, { now, onProgress, onWritten: (written) => void importedChanged(written) }),
    ),

    search: guard('search', (query, request) => searchIndex.search(query, request)),

    close: async () => {
      if (closed) return
      try {
        await runner.close()
        await searchIndex.close()
      } finally {
        closed = true
        notes.close()
        for (const entry of entries.values()) entry.feed.clear()
        entries.clear()
        db.close()
      }
    },
  }

  /** Log writes read nothing but the session row: a current `rev` is all they need. */
  const alwaysCurrent = () => ({ prefetched: undefined, holds: () => true })

  /** A cancel or edit can be planned from the cache when the input is pending there. */
  function expectPending(cached: Snapshot, inputId: string) {
    const receipt = cached.pending.find((r) => r.id === inputId)
    if (!receipt) return undefined
    return {
      prefetched: receipt as InputReceipt | undefined,
      holds: (stored: InputReceipt | undefined) => stored !== undefined && sameReceipt(stored, receipt),
    }
  }

  /** The receipt `inputId` of `sessionId` (as read inside the transaction), which must still be pending. */
  function pendingReceipt(
    sessionId: string,
    inputId: string,
    receipt: InputReceipt | undefined,
  ): InputReceipt {
    if (!receipt || receipt.sessionId !== sessionId) {
      throw new SessionlineError(
        'not_found',
        `no input ${JSON.stringify(inputId)} in session ${JSON.stringify(sessionId)}`,
        {
          sessionId,
          inputId,
        },
      )
    }
    if (receipt.status !== 'pending') {
      throw new SessionlineError(
        'invalid_state',
        `input ${JSON.stringify(inputId)} is ${receipt.status}, not pending`,
        {
          inputId,
          status: receipt.status,
        },
      )
    }
    return receipt
  }

  /** An import rewrote a session outside the log: cached views reload it, peers are told. */
  async function importedChanged(written: ImportedWrite): Promise<void> {
    const sessionId = written.session.id
    notes.post({ sessionId, rev: written.rev })
    // The rows were replaced: the old index must not answer for them (it is rebuilt on demand).
    if (written.status === 'updated') await searchIndex.forget(sessionId)
    const entry = entries.get(sessionId)
    if (entry?.snap) await catchUp(entry)
  }

  function notifyInput(sessionId: string): void {
    for (const listener of [...inputListeners]) {
      try {
        listener(sessionId)
      } catch {
        // A listener's failure is its own; the input is durable either way.
      }
    }
  }

  const host: RunnerHost = {
    engine,
    async turnState(sessionId) {
      const entry = await fresh(sessionId)
      return turnStateOf((entry.snap as Snapshot).folds.transcript)
    },
    publishLive(sessionId, events) {
      const entry = entries.get(sessionId)
      if (!entry?.snap || closed) return
      entry.live.add(events)
      if (entry.feed.size > 0) requestPreview(entry)
    },
    onInput(listener): Unsubscribe {
      inputListeners.add(listener)
      return () => {
        inputListeners.delete(listener)
      }
    },
    now,
  }
  const runner = createRunner(host, { provider: options.provider, tools: options.tools, lockScope: dbName })
  return { engine, host }
}
