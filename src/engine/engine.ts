/**
 * The engine (docs/architecture.md §3–§6): the inbox, the event log and its projections over one Dexie
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
import { initFolds, stampAndFold, turnStateOf } from '../core/folds'
import { compactableIds, headOf, nodeOf } from '../core/history-tree'
import { type IdOwner, rowIdsCreated } from '../core/ids'
import { DEFAULT_MATERIALIZE, type MaterializePolicy } from '../core/materialize'
import { ApprovalAnswer, RevokeToolApproval } from '../schema/approvals'
import { AttachmentId, type AttachmentLimits } from '../schema/attachments'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { AppendEvents } from '../schema/events'
import {
  CompactionBudget,
  CompactRequest,
  ForkRequest,
  ReorderRequest,
  ResendRequest,
  SetDeliveryRequest,
} from '../schema/history'
import { ImportRequest } from '../schema/import'
import { AdmitRequest, EditRequest, type InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import { ExportRequest } from '../schema/portability'
import type { ProviderConfig } from '../schema/provider'
import {
  DEFAULT_OUTLINE_SLICE,
  EventsRequest,
  LoadThroughRequest,
  type MessagePage,
  OutlineRequest,
  PageRequest,
  PromoteMode,
  WatchOptions,
} from '../schema/requests'
import { CreateSessionRequest, type SessionInfo } from '../schema/session'
import { SyncOptions, type SyncStatus } from '../schema/sync'
import { changeApprovals, rememberedApprovals } from '../store/approvals'
import { readAttachment, storeAttachments } from '../store/attachments'
import { type ConnectionOptions, openConnection } from '../store/connection'
import { type SessionlineDb, type SessionRow, sessionInfo, toSessionlineError } from '../store/db'
import type { ImportedWrite } from '../store/imported'
import {
  deleteSessionData,
  eventsBetween,
  getReceipt,
  getSessionRow,
  idOwners,
  inRead,
  inRowsRead,
  inWrite,
  rowOwner,
  rowsAbove,
  rowsBelow,
  rowsFrom,
} from '../store/transactions'
import { DEFAULT_ATTACHMENT_LIMITS, prepareAttachments } from './attachments'
import type { BackgroundErrorListener } from './background'
import { createBatcher, type Scheduler } from './batch'
import { currentRows } from './cache/load'
import { outlineRange } from './cache/outline'
import { createHistory } from './history'
import { importFilesInto, importTranscriptInto } from './importing'
import { createNotes, isStopNote } from './notes'
import type { ModelProvider, Tools } from './provider'
import { createRunner } from './runner'
import { createSearchIndex, type SearchIndexEvent } from './search/index'
import { createSessionCache, notFound, type Snapshot, sameReceipt } from './session-cache'
import { exportSessionFrom, importSessionline, sessionlineBytes } from './session-files'
import { cacheMarker, type SiteMarker } from './site-marker'
import { persistStorage, storageReport } from './storage'
import type {
  Engine,
  ProjectionName,
  ProjectionViews,
  RunnerHost,
  SessionSync,
  SyncDriver,
  Unsubscribe,
} from './types'
import { createWritePath } from './write-path'

export interface EngineOptions extends ConnectionOptions {
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
  /**
   * Told of every failure no call awaits: a turn the built-in runner ended in error, and
   * background work that failed (a search index sync or write, a cached session's catch-up with
   * another tab's commits; each is retried later or rebuilt from the log).
   * Default: a console warning.
   */
  onError?: BackgroundErrorListener
  /**
   * How far a streaming row may lag the log in the `messages` table before it is rewritten
   * (docs/decisions/0021; default: by 256 K characters or its stored text, a delta counting 64 at least). Readers always see the row
   * whole; tests set small values to cross the boundaries often.
   */
  materialize?: Partial<MaterializePolicy>
  /**
   * Limits on the files an input may carry (README, "Attachments, export and storage"):
   * `maxFileBytes` (default MAX_ATTACHMENT_BYTES), `maxInputBytes` (default
   * MAX_INPUT_ATTACHMENT_BYTES) and the accepted `mediaTypes` (default: any).
   */
  attachments?: Partial<AttachmentLimits>
  /**
   * The note outside IndexedDB that tells a database the browser emptied (`storage().evicted`;
   * src/engine/site-marker.ts). Default: a Cache API entry where there is one (not in memory
   * mode); `false`: no note.
   */
  marker?: SiteMarker | false
  /**
   * Compaction by token budget: before a turn whose context is estimated above `contextTokens`
   * (the last step's reported usage where known, else four characters a token), the built-in
   * runner compacts with a summary the provider writes, keeping about `keepTokens` of the newest
   * context (docs/decisions/0033, amendment). Default: none.
   */
  compaction?: CompactionBudget
  /**
   * Session sync through a Durable Streams server: `createSessionSync()` of `sessionline/sync`
   * (docs/decisions/0036). Default: none (`sync` is `invalid_state`).
   */
  sync?: SessionSync
}

const ProjectionNameSchema = z.enum(['turnOutline', 'usage', 'pending'])

export function createEngine(options: EngineOptions = {}): Engine {
  return createEngineWithHost(options).engine
}

/** The engine and the host its runner drives it through (tests drive the host directly). */
export function createEngineWithHost(options: EngineOptions = {}): { engine: Engine; host: RunnerHost } {
  const dbName = options.dbName ?? 'sessionline'
  const now = options.now ?? Date.now
  // Checked before anything opens: a bad budget is the caller's mistake, not a runtime state.
  const compaction =
    options.compaction === undefined
      ? undefined
      : parseOrThrow(CompactionBudget, options.compaction, 'compaction budget', ['compaction'])
  const attachmentLimits: AttachmentLimits = { ...DEFAULT_ATTACHMENT_LIMITS, ...options.attachments }
  const marker =
    options.marker === false
      ? undefined
      : (options.marker ?? (options.storage === 'memory' ? undefined : cacheMarker(dbName)))
  const connection = openConnection(dbName, options)
  const db: SessionlineDb = connection.db
  // Opened at once, so a database that cannot be opened is known before the first call needs it.
  connection.ready().catch(() => undefined)
  /**
   * Read once, as the engine opens: whether the note says sessions were kept and the database has
   * none. Every later change of the note waits for this reading.
   */
  const noted = (async () => {
    if (!marker) return { held: false, evicted: false }
    await connection.ready()
    const held = await marker.held()
    return { held, evicted: held && (await db.sessions.count()) === 0 }
  })().catch(() => ({ held: false, evicted: false }))
  /** Keeps the note in step with whether the database holds sessions (never fails a call). */
  function noteSessions(): void {
    if (!marker) return
    void noted
      .then(async (note) => {
        const held = (await db.sessions.count()) > 0
        if (held === note.held) return
        note.held = held
        await marker.set(held)
      })
      .catch(() => undefined)
  }
  const inputListeners = new Set<(sessionId: string) => void>()
  const stopListeners = new Set<(sessionId: string, turn: number) => void>()
  // Notes reach the cache once it exists; none can arrive before (the channel opens lazily).
  const notes = createNotes(
    dbName,
    (note) => {
      if (!isStopNote(note)) return cache.onNote(note)
      for (const listener of [...stopListeners]) listener(note.sessionId, note.stopTurn)
    },
    options.broadcast ?? true,
  )
  let closed = false
  const cache = createSessionCache({
    db,
    now,
    batch: createBatcher(options.schedule),
    notes,
    isClosed: () => closed,
    ...(options.onError ? { onError: options.onError } : {}),
    // Not awaited: recovery appends through the public API.
    recover: (sessionId) => {
      runner.recover(sessionId).catch(() => undefined)
    },
  })
  const {
    entries,
    use,
    load,
    loadCurrent,
    setSnapshot,
    viewsOf,
    outline,
    requestPreview,
    removeEntry,
    catchUp,
    putFolds,
  } = cache
  const searchIndex = createSearchIndex({ db, onEvent: options.onSearchIndex, onError: options.onError })
  const { write } = createWritePath({
    // Called inside a transaction, long after `history` below exists.
    siblingsJoined: (row) => history.siblingsJoined(row),
    db,
    cache,
    notes,
    now,
    onRows: searchIndex.onRows,
    materialize: { ...DEFAULT_MATERIALIZE, ...options.materialize },
  })
  const history = createHistory({
    db,
    cache,
    notes,
    now,
    materialize: { ...DEFAULT_MATERIALIZE, ...options.materialize },
    interrupt: (sessionId) => runner.stopTurn(sessionId),
    onRows: searchIndex.onRows,
  })
  // Upgraded in another tab, or deleted: every watcher hears why its feed ends (see `halted`).
  connection.onLost((error, reason) => {
    for (const entry of [...entries.values()]) {
      entry.feed.push({
        sessionId: entry.id,
        durable: true,
        headSeq: entry.snap?.row.headSeq ?? 0,
        rows: [],
        inputs: [],
        views: {},
        halted: { reason, message: error.message },
      })
      entry.feed.clear()
    }
  })

  // --- the public surface ------------------------------------------------------------------

  /**
   * Every public call: refused once closed, run once the database is open, failing with a
   * `SessionlineError`. An `early` call starts at once and awaits `connection.ready()` itself:
   * what it does before its first await happens in call order (see `watch`).
   */
  function guard<A extends unknown[], R>(
    operation: string,
    run: (...args: A) => Promise<R>,
    { early = false }: { early?: boolean } = {},
  ) {
    return async (...args: A): Promise<R> => {
      if (closed) throw new SessionlineError('storage_unavailable', `${operation}: the engine is closed`)
      try {
        if (!early) await connection.ready()
        return await run(...args)
      } catch (error) {
        // Once the connection is lost for good, that is the one reason every call fails.
        throw connection.lost ?? toSessionlineError(error, operation)
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
      await use(id, async (entry) => {
        if (!entry.snap) setSnapshot(entry, snap)
      })
      noteSessions()
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
      // A sync still running would pull the session back from its stream.
      await syncer?.unsync(id)
      await inWrite(db, async () => {
        if (!(await getSessionRow(db, id))) throw notFound(id)
        await deleteSessionData(db, id)
      })
      notes.post({ sessionId: id, rev: Number.MAX_SAFE_INTEGER, deleted: true })
      history.forget(id)
      const entry = entries.get(id)
      if (entry) removeEntry(entry)
      await searchIndex.forget(id)
      noteSessions()
    }),

    admit: guard('admit', async (sessionId, request) => {
      const id = sessionIdOf(sessionId)
      const parsed = parseOrThrow(AdmitRequest, request, 'admit request')
      // Hashed before the write: awaiting crypto inside its transaction would commit it early.
      const files = parsed.attachments?.length
        ? await prepareAttachments(parsed.attachments, attachmentLimits)
        : undefined
      const input = {
        id: parsed.id ?? nanoid(),
        text: parsed.text,
        delivery: parsed.delivery,
        ...(files && { attachments: files.parts }),
      }
      const { answer, wrote } = await write<'admit', [InputReceipt | undefined, IdOwner | undefined]>(id, {
        scope: 'inbox',
        ...(files && { alsoStore: () => storeAttachments(db, id, files.stored) }),
        keys: [input.id],
        readFacts: () => Promise.all([getReceipt(db, input.id), rowOwner(db, input.id)]),
        command: ([stored, owner]) => ({ type: 'admit', input, stored, rowOwner: owner }),
        // A new id: no row has it (read), and no input (the receipt is added, not put: an
        // existing one aborts the guess, and the careful path answers the retry or conflict).
        expect: () => ({
          facts: [undefined, undefined],
          readFacts: () => Promise.all([undefined, rowOwner(db, input.id)]),
          holds: ([, owner]) => !owner,
        }),
      })
      // New input wakes the runner; a replay of a stored receipt is not new.
      if (wrote) notifyInput(id)
      return answer
    }),

    cancel: guard('cancel', async (sessionId, inputId) => {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { answer } = await write<'cancel', InputReceipt | undefined>(id, {
        scope: 'inbox',
        keys: [input],
        readFacts: () => getReceipt(db, input),
        command: (stored) => ({ type: 'cancel', inputId: input, stored }),
        expect: (cached) => expectPending(cached, input),
      })
      return answer
    }),

    edit: guard('edit', async (sessionId, inputId, request) => {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { text } = parseOrThrow(EditRequest, request, 'edit request')
      // Not news for the runner: an edit (like a cancel) never restarts a stopped session.
      const { answer } = await write<'edit', InputReceipt | undefined>(id, {
        scope: 'inbox',
        keys: [input],
        readFacts: () => getReceipt(db, input),
        command: (stored) => ({ type: 'edit', inputId: input, text, stored }),
        expect: (cached) => expectPending(cached, input),
      })
      return answer
    }),

    attachment: guard('attachment', async (attachmentId) => {
      const key = parseOrThrow(AttachmentId, attachmentId, 'attachment id')
      return db.transaction('r', [db.attachments], () => readAttachment(db, key))
    }),

    reorder: guard('reorder', async (sessionId, inputId, request) => {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { before } = parseOrThrow(ReorderRequest, request, 'reorder request')
      const { answer } = await write<'reorder', (InputReceipt | undefined)[]>(id, {
        scope: 'inbox',
        keys: before === null ? [input] : [input, before],
        readFacts: () =>
          Promise.all([getReceipt(db, input), before === null ? undefined : getReceipt(db, before)]),
        command: ([stored, storedBefore]) => ({
          type: 'reorder',
          inputId: input,
          before,
          stored,
          storedBefore,
        }),
      })
      return answer
    }),

    setDelivery: guard('setDelivery', async (sessionId, inputId, delivery) => {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const how = parseOrThrow(SetDeliveryRequest, delivery, 'delivery')
      const { answer, wrote } = await write<'setDelivery', InputReceipt | undefined>(id, {
        scope: 'inbox',
        keys: [input],
        readFacts: () => getReceipt(db, input),
        command: (stored) => ({ type: 'setDelivery', inputId: input, delivery: how, stored }),
        expect: (cached) => expectPending(cached, input),
      })
      // A queued input turned steer may be taken into the running turn: the runner looks again.
      if (wrote) notifyInput(id)
      return answer
    }),

    pending: guard('pending', (sessionId) =>
      use(sessionIdOf(sessionId), async (entry) => {
        await loadCurrent(entry)
        return [...(entry.snap?.pending ?? [])]
      }),
    ),

    promote: guard('promote', async (sessionId, mode) => {
      const id = sessionIdOf(sessionId)
      const how = parseOrThrow(PromoteMode, mode, 'promote mode')
      const { answer } = await write<'promote'>(id, {
        command: () => ({ type: 'promote', mode: how }),
        expect: alwaysCurrent,
      })
      return answer
    }),

    append: guard('append', async (sessionId, events) => {
      const id = sessionIdOf(sessionId)
      const parsed = parseOrThrow(AppendEvents, events, 'events', ['events'])
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
        return use(id, async (entry) => {
          await loadCurrent(entry)
          return { headSeq: entry.snap?.row.headSeq ?? 0 }
        })
      }
      // Ids this append gives rows to must be free in every session (core/ids); who owns them is
      // read inside the write transaction, together with the session row.
      const ids = rowIdsCreated(parsed)
      const { answer } = await write<'append', (IdOwner | undefined)[]>(id, {
        keys: ids,
        readFacts: () => idOwners(db, ids),
        command: (owners) => ({ type: 'append', events: parsed, owners }),
        expect: () => ({ facts: ids.map(() => undefined), holds: (owners) => owners.every((o) => !o) }),
      })
      return answer
    }),

    // History verbs (docs/decisions/0033): one transaction each, through engine/history.
    rewind: guard('rewind', async (sessionId, messageId) => {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      return history.verb<'rewind'>(id, async () => ({
        type: 'rewind',
        messageId: message,
        row: await db.messages.get(message),
      }))
    }),

    resend: guard('resend', async (sessionId, messageId, request) => {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      const parsed = parseOrThrow(ResendRequest, request, 'resend request')
      const input = { id: parsed.id ?? nanoid(), text: parsed.text }
      const receipt = await history.verb<'resend'>(id, async () => {
        const [stored, owner] = await Promise.all([getReceipt(db, input.id), rowOwner(db, input.id)])
        return { type: 'resend', messageId: message, input, stored, rowOwner: owner }
      })
      // The turn it opened waits for an answer: a built-in runner takes it (a replay opened none).
      notifyInput(id)
      return receipt
    }),

    regenerate: guard('regenerate', async (sessionId, messageId) => {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      await history.verb<'regenerate'>(id, () => ({ type: 'regenerate', messageId: message }))
      notifyInput(id)
    }),

    switchBranch: guard('switchBranch', async (sessionId, messageId) => {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      await history.switchBranch(id, message)
    }),

    branches: guard('branches', async (sessionId, messageId) => {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      return history.branches(id, message)
    }),

    compact: guard('compact', async (sessionId, request = {}) => {
      const id = sessionIdOf(sessionId)
      const { throughSeq, summary, id: givenId } = parseOrThrow(CompactRequest, request, 'compact request')
      const summaryId = givenId ?? nanoid()
      if (summary === undefined) {
        // The provider writes it, outside any transaction, for the head read here; the commit
        // below is refused (`conflict`) when the head moved meanwhile, so a compaction that is
        // aborted, fails or is overtaken never changes the context (docs/decisions/0033).
        if ((await host.turnState(id)).openTurn !== null) await runner.stopTurn(id)
        const source = await history.compactionSource(id, throughSeq)
        const written = await runner.summarize(id, source.rows)
        return history.verb<'compact'>(id, async () => {
          const [owner] = await idOwners(db, [summaryId])
          return {
            type: 'compact',
            summary: written.usage
              ? { id: summaryId, ...written, usage: written.usage }
              : { id: summaryId, text: written.text },
            throughId: source.throughId,
            expectedHead: source.expectedHead,
            owner,
          }
        })
      }
      return history.verb<'compact'>(id, async ({ tree }) => {
        // The last row of the compactable path at or below throughSeq (all of it by default).
        const candidates = compactableIds(tree).filter(
          (rowId) => throughSeq === undefined || nodeOf(tree, rowId)!.seq <= throughSeq,
        )
        const throughId = candidates[candidates.length - 1]
        if (throughId === undefined && headOf(tree) !== null) {
          throw new SessionlineError(
            'invalid_input',
            `no row at or below seq ${throughSeq} can be compacted: it lies before the path's last summary`,
            { throughSeq },
          )
        }
        const [owner] = await idOwners(db, [summaryId])
        return {
          type: 'compact',
          summary: { id: summaryId, text: summary },
          throughId,
          expectedHead: headOf(tree),
          owner,
        }
      })
    }),

    context: guard('context', async (sessionId) => history.context(sessionIdOf(sessionId))),

    fork: guard('fork', async (sessionId, request = {}) => {
      const id = sessionIdOf(sessionId)
      const { throughSeq, title, id: forkId } = parseOrThrow(ForkRequest, request, 'fork request')
      return history.fork(id, { throughSeq, title, id: forkId ?? nanoid() })
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
      await loadedBeforeRows(id)
      if (afterSeq !== undefined) {
        return withCurrentRows(
          await inRowsRead(db, async () => {
            const [row, { rows, hasNewer }, below] = await Promise.all([
              getSessionRow(db, id),
              rowsAbove(db, id, afterSeq, beforeSeq, limit, includeInactive),
              rowsBelow(db, id, afterSeq + 1, 0, includeInactive),
            ])
            if (!row) throw notFound(id)
            const page: MessagePage = {
              messages: rows,
              baseSeq: rows[0]?.seq ?? 0,
              headSeq: row.headSeq,
              hasOlder: below.hasOlder,
              hasNewer,
            }
            return { row, page }
          }),
        )
      }
      return withCurrentRows(
        await inRowsRead(db, async () => {
          const [row, { rows, hasOlder }] = await Promise.all([
            getSessionRow(db, id),
            rowsBelow(db, id, beforeSeq, limit, includeInactive),
          ])
          if (!row) throw notFound(id)
          const page: MessagePage = {
            messages: rows,
            baseSeq: rows[0]?.seq ?? 0,
            headSeq: row.headSeq,
            hasOlder,
          }
          return { row, page }
        }),
      )
    }),

    loadThrough: guard('loadThrough', async (sessionId, request) => {
      const id = sessionIdOf(sessionId)
      const { seq, beforeSeq, pageSize, includeInactive } = parseOrThrow(
        LoadThroughRequest,
        request,
        'loadThrough request',
      )
      // A view's first read is this one when it was asked to load through a seq as it opened.
      await loadedBeforeRows(id)
      return withCurrentRows(
        await inRowsRead(db, async () => {
          const [row, from] = await Promise.all([
            getSessionRow(db, id),
            rowsFrom(db, id, seq, beforeSeq, includeInactive),
          ])
          if (!row) throw notFound(id)
          // Fill the last page the way paging by `pageSize` would have, so the window ends on a page boundary.
          const fill = (pageSize - (from.length % pageSize)) % pageSize
          const below = from[0]?.seq ?? Math.max(1, Math.min(seq, beforeSeq ?? seq))
          // From seq 1 every row is in `from` already: nothing lies below it (the whole history).
          const older =
            seq <= 1 ? { rows: [], hasOlder: false } : await rowsBelow(db, id, below, fill, includeInactive)
          const messages = [...older.rows, ...from]
          const page: MessagePage = {
            messages,
            baseSeq: messages[0]?.seq ?? 0,
            headSeq: row.headSeq,
            hasOlder: older.hasOlder,
          }
          return { row, page }
        }),
      )
    }),

    projection: guard('projection', async <N extends ProjectionName>(sessionId: string, name: N) => {
      const which = parseOrThrow(ProjectionNameSchema, name, 'projection name')
      return use(sessionIdOf(sessionId), async (entry) => {
        await loadCurrent(entry)
        const snap = entry.snap!
        if (which === 'pending') return snap.pending as ProjectionViews[N]
        if (which === 'turnOutline') {
          const whole = await outline.whole(entry.id, snap)
          // A branched session's rail follows the head (docs/decisions/0033).
          return (
            snap.folds.branching.branched
              ? await history.markOutline(entry.id, whole, snap.folds.transcript.openTurn)
              : whole
          ) as ProjectionViews[N]
        }
        return viewsOf(entry).usage.getView() as ProjectionViews[N]
      })
    }) as Engine['projection'],

    outline: guard('outline', async (sessionId, request = {}) => {
      const id = sessionIdOf(sessionId)
      const range = parseOrThrow(OutlineRequest, request, 'outline request')
      return use(id, async (entry) => {
        await loadCurrent(entry)
        const snap = entry.snap!
        const { start, end } = outlineRange(
          snap.folds.turnOutline.entries.length,
          range,
          DEFAULT_OUTLINE_SLICE,
        )
        const slice = await outline.slice(entry.id, snap, start, end)
        if (!snap.folds.branching.branched) return slice
        const entries = await history.markOutline(entry.id, slice.entries, snap.folds.transcript.openTurn)
        return { ...slice, entries }
      })
    }),

    watch: guard(
      'watch',
      async (sessionId, listener, options) => {
        const id = sessionIdOf(sessionId)
        if (typeof listener !== 'function')
          throw new SessionlineError('invalid_input', 'watch needs a listener function')
        const how = parseOrThrow(WatchOptions, options ?? {}, 'watch options')
        // Held from lookup to listener: no call on another session can evict the entry in between.
        return use(id, async (entry) => {
          // Subscribed within the call, before anything is awaited: a view sends its reads right
          // behind its watch, in one round trip, and each of them starts after this (`page` waits
          // for `opening`), so it sees at least the state the changes delivered here continue from.
          const unsubscribe = entry.feed.add(listener, how)
          const opening = (async () => {
            await connection.ready()
            await load(entry)
          })()
          entry.opening = opening
          try {
            await opening
          } catch (error) {
            unsubscribe()
            throw error
          } finally {
            if (entry.opening === opening) entry.opening = undefined
          }
          // While nobody watched, other engines' notes were ignored: publish whatever the cache
          // missed (and what another engine committed while this load was reading).
          void catchUp(entry)
          // A synced session's status, so a view shows it before it next changes.
          void syncer
            ?.status(id)
            .then((status) => status && publishSync(id, status))
            .catch(() => undefined)
          return unsubscribe
        })
      },
      { early: true },
    ),

    configure: guard('configure', (request) => runner.configure(request)),
    interrupt: guard('interrupt', async (sessionId) => runner.interrupt(sessionIdOf(sessionId))),

    respondToApproval: guard('respondToApproval', async (sessionId, callId, answer) => {
      const id = sessionIdOf(sessionId)
      const call = parseOrThrow(Id, callId, 'call id')
      const { approved, reason, remember } = parseOrThrow(ApprovalAnswer, answer, 'approval answer')
      const { answer: written } = await write<'respond'>(id, {
        command: () => ({
          type: 'respond',
          callId: call,
          approved,
          remember,
          ...(reason === undefined ? {} : { reason }),
        }),
        expect: alwaysCurrent,
      })
      // The answer is the fact; the preference follows it (docs/decisions/0029): the call is
      // answered even if this write fails, and the tool then asks again next time.
      if (approved && remember !== 'call') {
        await changeApprovals(db, 'remember', written.tool, remember === 'session' ? id : undefined)
      }
    }),

    toolApprovals: guard('toolApprovals', async (sessionId) => {
      const id = sessionIdOf(sessionId)
      await connection.ready()
      return rememberedApprovals(db, id)
    }),

    revokeToolApproval: guard('revokeToolApproval', async (request) => {
      const { tool, sessionId } = parseOrThrow(RevokeToolApproval, request, 'revoke request')
      await connection.ready()
      await changeApprovals(db, 'forget', tool, sessionId)
    }),

    importTranscript: guard('importTranscript', async (request) => {
      const restored = await sessionlineBytes(
        parseOrThrow(ImportRequest, request, 'importTranscript request'),
      )
      if (restored) {
        const infos = await importSessionline(db, restored, putFolds)
        for (const info of infos) {
          notes.post({ sessionId: info.id, rev: 1 })
          searchIndex.refresh(info.id)
        }
        noteSessions()
        return infos[0] as SessionInfo
      }
      const written = await importTranscriptInto(db, request, now)
      await importedChanged(written)
      noteSessions()
      return written.session
    }),
    importFiles: guard('importFiles', async (files, onProgress) => {
      if (onProgress !== undefined && typeof onProgress !== 'function')
        throw new SessionlineError('invalid_input', 'importFiles: onProgress must be a function')
      const reports = await importFilesInto(db, files, {
        now,
        onProgress,
        onWritten: (written) => void importedChanged(written),
      })
      noteSessions()
      return reports
    }),

    exportSession: guard('exportSession', async (sessionId, request = {}) => {
      const id = sessionIdOf(sessionId)
      const { format } = parseOrThrow(ExportRequest, request, 'exportSession request')
      // Writes acknowledged before the export are in it: the read follows them.
      return exportSessionFrom(db, id, format)
    }),

    storage: guard('storage', async () => storageReport(db, (await noted).evicted)),
    persist: guard('persist', () => persistStorage()),

    flush: guard('flush', () => connection.flush()),

    search: guard('search', (query, request) => searchIndex.search(query, request)),

    sync: guard('sync', async (sessionId, options) =>
      syncDriver().sync(sessionIdOf(sessionId), parseOrThrow(SyncOptions, options, 'sync options')),
    ),
    unsync: guard('unsync', async (sessionId) => syncDriver().unsync(sessionIdOf(sessionId))),
    syncStatus: guard('syncStatus', async (sessionId) => syncer?.status(sessionIdOf(sessionId))),

    close: async () => {
      if (closed) return
      try {
        await syncer?.close()
        await runner.close()
        await searchIndex.close()
      } finally {
        closed = true
        notes.close()
        cache.clear()
        connection.close()
      }
    },
  }

  /** A page as readers must see it: streaming rows that lag in storage patched from the log. */
  /**
   * A rows read beside a watch that is still loading the session waits for it: read earlier, it
   * could miss a commit of another engine that the load then takes in without a change. (Read
   * beside the load instead, and again when it saw an older head, it was no faster; decision
   * 0025's amendment.)
   */
  const loadedBeforeRows = (id: string) => entries.get(id)?.opening?.catch(() => undefined)

  async function withCurrentRows({
    row,
    page,
  }: {
    row: SessionRow
    page: MessagePage
  }): Promise<MessagePage> {
    if (!row.lagging) return page
    return { ...page, messages: await currentRows(db, row, page.messages) }
  }

  /** Promotions read nothing but the session row: a current `rev` is all they need. */
  const alwaysCurrent = () => ({ facts: undefined, holds: () => true })

  /** A cancel or edit can be decided from the cache when the input is pending there. */
  function expectPending(cached: Snapshot, inputId: string) {
    const receipt = cached.pending.find((r) => r.id === inputId)
    if (!receipt) return undefined
    return {
      facts: receipt as InputReceipt | undefined,
      holds: (stored: InputReceipt | undefined) => stored !== undefined && sameReceipt(stored, receipt),
    }
  }

  /** An import rewrote a session outside the log: cached views reload it, peers are told. */
  async function importedChanged(written: ImportedWrite): Promise<void> {
    const sessionId = written.session.id
    notes.post({ sessionId, rev: written.rev })
    history.forget(sessionId)
    // The rows were replaced: the old index must not answer for them.
    if (written.status === 'updated') await searchIndex.forget(sessionId)
    // Built in the background from now on, so the first search does not pay for it.
    searchIndex.refresh(sessionId)
    const entry = entries.get(sessionId)
    if (entry?.snap) await catchUp(entry)
  }

  /** Sync rewrote or created a session's log: like a re-import, caches reload and peers are told. */
  async function logRewritten(sessionId: string): Promise<void> {
    const row = await getSessionRow(db, sessionId)
    if (row) notes.post({ sessionId, rev: row.rev })
    history.forget(sessionId)
    await searchIndex.forget(sessionId)
    searchIndex.refresh(sessionId)
    const entry = entries.get(sessionId)
    if (entry?.snap) await catchUp(entry)
    noteSessions()
  }

  /** Sync appended others' events after a session's log: like a commit of another engine. */
  async function logAppended(
    sessionId: string,
    rows: readonly SessionMessage[],
    fromHead: number,
    toHead: number,
  ): Promise<void> {
    const row = await getSessionRow(db, sessionId)
    if (row) notes.post({ sessionId, rev: row.rev })
    searchIndex.onRows(sessionId, rows, fromHead, toHead)
    const entry = entries.get(sessionId)
    if (entry?.snap) await catchUp(entry)
  }

  /** Sync promoted receipts (their rows arrived from another device): like another engine's commit. */
  async function inputsChanged(sessionId: string): Promise<void> {
    const row = await getSessionRow(db, sessionId)
    if (row) notes.post({ sessionId, rev: row.rev })
    const entry = entries.get(sessionId)
    if (entry?.snap) await catchUp(entry)
  }

  /** A sync status change, to the session's watchers (a change that carries nothing else). */
  function publishSync(sessionId: string, status: SyncStatus): void {
    const entry = entries.get(sessionId)
    if (!entry?.snap || closed || entry.feed.size === 0) return
    const headSeq = entry.snap.row.headSeq
    entry.feed.push({ sessionId, durable: true, headSeq, rows: [], inputs: [], views: {}, sync: status })
  }

  function syncDriver(): SyncDriver {
    if (syncer) return syncer
    throw new SessionlineError(
      'invalid_state',
      'this engine has no sync: create it with createEngine({ sync: createSessionSync() }) from sessionline/sync',
    )
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
    turnState: (sessionId) =>
      use(sessionId, async (entry) => {
        await loadCurrent(entry)
        return turnStateOf((entry.snap as Snapshot).folds.transcript)
      }),
    openRows: (sessionId) =>
      use(sessionId, async (entry) => {
        await loadCurrent(entry)
        return (entry.snap as Snapshot).folds.transcript.open
      }),
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
    requestStop(sessionId, turn) {
      if (!closed) notes.post({ sessionId, stopTurn: turn })
    },
    onStopRequest(listener): Unsubscribe {
      stopListeners.add(listener)
      notes.listen()
      return () => {
        stopListeners.delete(listener)
      }
    },
    now,
  }
  const syncer = options.sync?.attach({
    engine,
    db,
    now,
    putFolds,
    logRewritten,
    logAppended,
    publishStatus: publishSync,
    runsTurns: () => runner.runsTurns(),
    setRunnerGate: (sessionId, allow) => runner.setGate(sessionId, allow),
    inputsChanged,
  })
  const runner = createRunner(host, {
    provider: options.provider,
    tools: options.tools,
    lockScope: dbName,
    ...(options.onError ? { onError: options.onError } : {}),
    ...(compaction ? { compaction } : {}),
  })
  return { engine, host }
}
