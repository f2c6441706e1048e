import { turnStateOf } from '../core/folds'
import { DEFAULT_MATERIALIZE, type MaterializePolicy } from '../core/materialize'
import { RevokeToolApproval } from '../schema/approvals'
import { AttachmentId, type AttachmentLimits } from '../schema/attachments'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { CompactionBudget } from '../schema/history'
import { ImportRequest } from '../schema/import'
import { ExportRequest } from '../schema/portability'
import type { ProviderConfig } from '../schema/provider'
import { EventsRequest, WatchOptions } from '../schema/requests'
import type { SessionInfo } from '../schema/session'
import { SyncOptions } from '../schema/sync'
import { changeApprovals, rememberedApprovals } from '../store/approvals'
import { readAttachment } from '../store/attachments'
import { type ConnectionOptions, openConnection } from '../store/connection'
import { type SessionlineDb, toSessionlineError } from '../store/db'
import type { ImportedWrite } from '../store/imported'
import { eventsBetween, getSessionRow, inRead } from '../store/transactions'
import { DEFAULT_ATTACHMENT_LIMITS } from './attachments'
import type { BackgroundErrorListener } from './background'
import { createBatcher, type Scheduler } from './batch'
import { createCommandTable } from './commands'
import { createHistory } from './history'
import { createHistoryMethods } from './history-methods'
import { importFilesInto, importTranscriptInto } from './importing'
import { createNotes, isStopNote } from './notes'
import type { ModelProvider, Tools } from './provider'
import { createReads } from './reads'
import { createRunner } from './runner'
import { createRunnerSignals } from './runner-signals'
import { createSearchIndex, type SearchIndexEvent } from './search/index'
import { createSessionCache, notFound, type SessionCache, type Snapshot } from './session-cache'
import { exportSessionFrom, importSessionline, sessionlineBytes } from './session-files'
import { createSessionMethods } from './session-methods'
import { cacheMarker, type SiteMarker } from './site-marker'
import { persistStorage, storageReport } from './storage'
import { createSyncLink } from './sync-link'
import type { Engine, Runner, RunnerHost, SessionSync, SyncDriver } from './types'
import { createWriteMethods } from './write-methods'
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

/**
 * A part that can exist only after the parts that reach it: the runner and the sync plug-in
 * drive the finished engine (they take it as they are created), and the session cache hears the
 * notes channel it is built on. Declared before its first use, bound once, and loud when reached
 * before it is bound (a part that may be absent, like sync, is bound as `undefined`).
 */
function boundLater<T>(what: string) {
  let value: { bound: T } | undefined
  return {
    bind(bound: T): T {
      value = { bound }
      return bound
    },
    get(): T {
      if (value === undefined) throw new Error(`${what} is reached before it exists`)
      return value.bound
    },
  }
}

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
   * Whether the database held no session as the engine opened: counted in the first transaction
   * after the open, which no write of this engine can precede.
   */
  const emptyAtOpen = marker
    ? connection
        .ready()
        .then(() => db.sessions.count())
        .then((count) => count === 0)
    : undefined
  emptyAtOpen?.catch(() => undefined)
  let noted: Promise<{ held: boolean; evicted: boolean }> | undefined
  /**
   * The note as this engine found it: read once, when first asked (`storage()`, or a change of
   * the note, which waits for this reading). Read at every start, the Cache API's answer cost a
   * cold open about 1 ms of its first read (issue 28), for a note only `storage()` reports.
   */
  const note = () =>
    (noted ??= (async () => {
      if (!marker || !emptyAtOpen) return { held: false, evicted: false }
      const held = await marker.held()
      return { held, evicted: held && (await emptyAtOpen) }
    })().catch(() => ({ held: false, evicted: false })))
  /** Keeps the note in step with whether the database holds sessions (never fails a call). */
  function noteSessions(): void {
    if (!marker) return
    void note()
      .then(async (found) => {
        const held = (await db.sessions.count()) > 0
        if (held === found.held) return
        found.held = held
        await marker.set(held)
      })
      .catch(() => undefined)
  }
  const signals = createRunnerSignals()
  const runner = boundLater<Runner>('the runner')
  const syncLater = boundLater<SyncDriver | undefined>('the sync')
  const cacheLater = boundLater<SessionCache>('the session cache')
  // Notes reach the cache once it exists; none can arrive before (the channel opens lazily).
  const notes = createNotes(
    dbName,
    (note) => {
      if (!isStopNote(note)) return cacheLater.get().onNote(note)
      signals.stop(note.sessionId, note.stopTurn)
    },
    options.broadcast ?? true,
  )
  let closed = false
  const cache = cacheLater.bind(
    createSessionCache({
      db,
      now,
      batch: createBatcher(options.schedule),
      notes,
      isClosed: () => closed,
      ...(options.onError ? { onError: options.onError } : {}),
      // Not awaited: recovery appends through the public API.
      recover: (sessionId) => {
        runner
          .get()
          .recover(sessionId)
          .catch(() => undefined)
      },
    }),
  )
  const { entries, use, load, loadCurrent, requestPreview, catchUp, putFolds } = cache
  const searchIndex = createSearchIndex({ db, onEvent: options.onSearchIndex, onError: options.onError })
  const history = createHistory({
    db,
    cache,
    notes,
    now,
    materialize: { ...DEFAULT_MATERIALIZE, ...options.materialize },
    interrupt: (sessionId) => runner.get().stopTurn(sessionId),
    onRows: searchIndex.onRows,
  })
  const writePath = createWritePath({
    db,
    cache,
    notes,
    now,
    onRows: searchIndex.onRows,
    siblingsJoined: history.siblingsJoined,
    materialize: { ...DEFAULT_MATERIALIZE, ...options.materialize },
  })
  // A search build running meanwhile reads small pages, so this write's transaction is not
  // queued behind a long read (issue 28).
  const write: typeof writePath.write = (sessionId, spec) => {
    searchIndex.noteWrite()
    return writePath.write(sessionId, spec)
  }
  const commands = createCommandTable(db, write)
  const reads = createReads({ db, cache, history })
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

  const syncLink = createSyncLink({
    db,
    cache,
    notes,
    history,
    searchIndex,
    noteSessions,
    isClosed: () => closed,
  })

  function syncDriver(): SyncDriver {
    const driver = syncLater.get()
    if (driver) return driver
    throw new SessionlineError(
      'invalid_state',
      'this engine has no sync: create it with createEngine({ sync: createSessionSync() }) from sessionline/sync',
    )
  }

  /** The turn state of the session's fold (cached, no replay). */
  const turnState = (sessionId: string) =>
    use(sessionId, async (entry) => {
      await loadCurrent(entry)
      return turnStateOf((entry.snap as Snapshot).folds.transcript)
    })

  const sessions = createSessionMethods({
    db,
    now,
    cache,
    notes,
    history,
    searchIndex,
    stopSync: async (sessionId) => syncLater.get()?.unsync(sessionId),
    noteSessions,
  })
  const verbs = createHistoryMethods({ db, history, runner, turnState, notifyInput: signals.input })
  const writes = createWriteMethods({ db, cache, commands, attachmentLimits, notifyInput: signals.input })

  const engine: Engine = {
    createSession: guard('createSession', sessions.createSession),
    getSession: guard('getSession', sessions.getSession),
    listSessions: guard('listSessions', sessions.listSessions),
    deleteSession: guard('deleteSession', sessions.deleteSession),

    admit: guard('admit', writes.admit),
    cancel: guard('cancel', writes.cancel),
    edit: guard('edit', writes.edit),

    attachment: guard('attachment', async (attachmentId) => {
      const key = parseOrThrow(AttachmentId, attachmentId, 'attachment id')
      return db.transaction('r', [db.attachments], () => readAttachment(db, key))
    }),

    reorder: guard('reorder', writes.reorder),
    setDelivery: guard('setDelivery', writes.setDelivery),

    pending: guard('pending', (sessionId) =>
      use(sessionIdOf(sessionId), async (entry) => {
        await loadCurrent(entry)
        return [...(entry.snap?.pending ?? [])]
      }),
    ),

    promote: guard('promote', writes.promote),
    append: guard('append', writes.append),

    // History verbs (docs/decisions/0033): one transaction each, through engine/history.
    rewind: guard('rewind', verbs.rewind),
    resend: guard('resend', verbs.resend),
    regenerate: guard('regenerate', verbs.regenerate),
    switchBranch: guard('switchBranch', verbs.switchBranch),
    branches: guard('branches', verbs.branches),
    compact: guard('compact', verbs.compact),
    context: guard('context', verbs.context),
    fork: guard('fork', verbs.fork),

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

    page: guard('page', reads.page),
    loadThrough: guard('loadThrough', reads.loadThrough),
    firstRead: guard('firstRead', reads.firstRead),
    projection: guard('projection', reads.projection) as Engine['projection'],
    outline: guard('outline', reads.outline),

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
          void syncLater
            .get()
            ?.status(id)
            .then((status) => status && syncLink.publishStatus(id, status))
            .catch(() => undefined)
          return unsubscribe
        })
      },
      { early: true },
    ),

    configure: guard('configure', (request) => runner.get().configure(request)),
    interrupt: guard('interrupt', async (sessionId) => runner.get().interrupt(sessionIdOf(sessionId))),

    respondToApproval: guard('respondToApproval', writes.respondToApproval),

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

    storage: guard('storage', async () => storageReport(db, (await note()).evicted)),
    persist: guard('persist', () => persistStorage()),

    flush: guard('flush', () => connection.flush()),

    search: guard('search', (query, request) => searchIndex.search(query, request)),

    sync: guard('sync', async (sessionId, options) =>
      syncDriver().sync(sessionIdOf(sessionId), parseOrThrow(SyncOptions, options, 'sync options')),
    ),
    unsync: guard('unsync', async (sessionId) => syncDriver().unsync(sessionIdOf(sessionId))),
    syncStatus: guard('syncStatus', async (sessionId) => syncLater.get()?.status(sessionIdOf(sessionId))),

    close: async () => {
      if (closed) return
      try {
        await syncLater.get()?.close()
        await runner.get().close()
        await searchIndex.close()
      } finally {
        closed = true
        notes.close()
        cache.clear()
        connection.close()
      }
    },
  }

  const host: RunnerHost = {
    engine,
    turnState,
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
    onInput: signals.onInput,
    requestStop(sessionId, turn) {
      if (!closed) notes.post({ sessionId, stopTurn: turn })
    },
    onStopRequest(listener) {
      const unsubscribe = signals.onStop(listener)
      notes.listen()
      return unsubscribe
    },
    now,
  }
  syncLater.bind(
    options.sync?.attach({
      engine,
      db,
      now,
      putFolds,
      ...syncLink,
      runsTurns: () => runner.get().runsTurns(),
      setRunnerGate: (sessionId, allow) => runner.get().setGate(sessionId, allow),
    }),
  )
  runner.bind(
    createRunner(host, {
      provider: options.provider,
      tools: options.tools,
      lockScope: dbName,
      ...(options.onError ? { onError: options.onError } : {}),
      ...(compaction ? { compaction } : {}),
    }),
  )
  return { engine, host }
}
