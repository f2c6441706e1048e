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
import { builtInProjections, createLiveProjections } from '../core/live-projection'
import { selectForPromotion } from '../core/pending'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { SessionEvent, type StoredEvent } from '../schema/events'
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
import { CreateSessionRequest, type SessionInfo } from '../schema/session'
import {
  type DbOptions,
  openDb,
  type ProjectionRow,
  type SessionlineDb,
  type SessionRow,
  toSessionlineError,
} from '../store/db'
import { type ImportedWrite, importFilesInto, importTranscriptInto } from '../store/imported'
import {
  deleteSessionData,
  eventsBetween,
  getSessionRow,
  inInboxWrite,
  inRead,
  inRowsRead,
  inWrite,
  pendingReceipts,
  projectionStates,
  putProjectionStates,
  receiptsFrom,
  rowsBelow,
  rowsFrom,
} from '../store/transactions'
import { createBatcher, type Scheduler } from './batch'
import {
  CACHED_FOLDS,
  FOLD_NAMES,
  type Folds,
  foldEvents,
  initFolds,
  stampAndFold,
  turnStateOf,
} from './fold'
import { createLiveBuffer, type LiveBuffer } from './live'
import type { ModelProvider, Tools } from './provider'
import { createRunner } from './runner'
import type { Engine, ProjectionName, ProjectionViews, RunnerHost, SessionChange, Unsubscribe } from './types'
import { createFeed, type SessionFeed } from './watch'

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
}

/** Events read per transaction when a projection is rebuilt from the log. */
export const REBUILD_BATCH = 5000
/** Sessions whose fold state stays cached while nobody watches them. */
const MAX_CACHED_SESSIONS = 64
/** Beyond this many new events, a watcher is told to reload (`reset`) instead of being sent rows. */
const CATCH_UP_EVENTS = 2000

/** What the engine last published for a session; immutable, replaced whole on every change. */
interface Snapshot {
  row: SessionRow
  folds: Folds
  /** Pending receipts in admission order (identity kept while unchanged). */
  pending: readonly InputReceipt[]
}

type LiveViews = ReturnType<typeof createLiveProjections<typeof builtInProjections>>

interface Entry {
  readonly id: string
  snap?: Snapshot
  loading?: Promise<Snapshot>
  readonly feed: SessionFeed
  readonly live: LiveBuffer
  views?: LiveViews
  stopViews?: () => void
  /** Views that passed the gate during the current `advance`. */
  collecting?: Partial<ProjectionViews>
  catchUp: Promise<void>
  recovered: boolean
  /** The session was deleted (here or by another engine). */
  deleted?: boolean
}

/** The result of a write's plan: what to store and publish; no `next` means nothing to write. */
interface Plan<T> {
  value: T
  next?: Snapshot
  events?: StoredEvent[]
  rows?: SessionMessage[]
  /** Ids of the rows these events create (stored with `add`, never over another row). */
  created?: readonly string[]
  inputs?: InputReceipt[]
  /** The receipts are new: stored with `add`, so an input that exists after all aborts the write. */
  newInputs?: boolean
}

/** One write: its plan, the reads it needs, and what those reads find when the cache is current. */
interface WriteSpec<T, P> {
  /** `inbox` writes (admit, cancel, edit) never touch the log and lock fewer tables. */
  scope?: 'log' | 'inbox'
  /** Reads the plan needs besides the session row; issued together with it. */
  prefetch?: () => Promise<P>
  /** Pure but for `now()`: same inputs, same plan. Throws to refuse the write. */
  plan: (base: Snapshot, prefetched: P) => Promise<Plan<T>>
  /** What `prefetch` should find if the cache is current, and how to tell it did; none: no guessing. */
  expect?: (cached: Snapshot) => Expectation<P> | undefined
}

interface Expectation<P> {
  prefetched: P
  /** The reads a guess needs, when fewer than the careful path's (default: `prefetch`). */
  prefetch?: () => Promise<P>
  holds: (actual: P) => boolean
}

/** Thrown inside a speculative write to abort it when the cache proved to be behind. */
const STALE: unique symbol = Symbol('stale cache')

/** The note engines on one database exchange after each commit (docs/decisions/0006). */
interface CommitNote {
  sessionId: string
  rev: number
  deleted?: boolean
}

const SessionEvents = z.array(SessionEvent).max(10_000)
const ProjectionNameSchema = z.enum(['turnOutline', 'usage', 'pending'])

const info = ({ rev: _rev, ...rest }: SessionRow): SessionInfo => rest
const notFound = (sessionId: string) =>
  new SessionlineError('not_found', `no session ${JSON.stringify(sessionId)}`, { sessionId })
const sameReceipt = (a: InputReceipt, b: InputReceipt) =>
  a.id === b.id && a.status === b.status && a.text === b.text && a.updatedAt === b.updatedAt

/** Names of a failure and, for a bulk write, of each failed item. */
const failureNames = (error: unknown): unknown[] =>
  ((error as { failures?: unknown[] }).failures ?? [error]).map((f) => (f as { name?: unknown })?.name)
const isConstraintError = (error: unknown) => failureNames(error).includes('ConstraintError')

/** Ids of the rows `events` create (user and assistant messages). */
function createdRowIds(events: readonly SessionEvent[]): string[] {
  const ids: string[] = []
  for (const e of events) {
    if (e.type === 'user/message') ids.push(e.data.inputId)
    else if (e.type === 'assistant/start') ids.push(e.data.messageId)
  }
  return ids
}

export function createEngine(options: EngineOptions = {}): Engine {
  return createEngineWithHost(options).engine
}

/** The engine and the host its runner drives it through (tests drive the host directly). */
export function createEngineWithHost(options: EngineOptions = {}): { engine: Engine; host: RunnerHost } {
  const dbName = options.dbName ?? 'sessionline'
  const now = options.now ?? Date.now
  const db: SessionlineDb = openDb(dbName, { indexedDB: options.indexedDB, IDBKeyRange: options.IDBKeyRange })
  const batch = createBatcher(options.schedule)
  const entries = new Map<string, Entry>()
  const inputListeners = new Set<(sessionId: string) => void>()
  const useChannel = (options.broadcast ?? true) && typeof BroadcastChannel === 'function'
  const channel = useChannel ? new BroadcastChannel(`sessionline:${dbName}`) : undefined
  let closed = false

  // --- per-session cache -------------------------------------------------------------------

  function entryOf(sessionId: string): Entry {
    let entry = entries.get(sessionId)
    if (entry) {
      // Map order is recency order: the first entries are the least recently used.
      entries.delete(sessionId)
      entries.set(sessionId, entry)
    } else {
      evictIdle()
      const created: Entry = {
        id: sessionId,
        live: createLiveBuffer(),
        catchUp: Promise.resolve(),
        recovered: false,
        feed: createFeed(batch, {
          onFirst: () => watchViews(created),
          onLast: () => {
            created.stopViews?.()
            created.stopViews = undefined
          },
        }),
      }
      entry = created
      entries.set(sessionId, entry)
    }
    return entry
  }

  /** Forgets the least recently used sessions nobody watches, beyond MAX_CACHED_SESSIONS. */
  function evictIdle(): void {
    if (entries.size < MAX_CACHED_SESSIONS) return
    for (const [id, entry] of entries) {
      if (entries.size < MAX_CACHED_SESSIONS) return
      if (entry.feed.size === 0 && !entry.loading) entries.delete(id)
    }
  }

  /** Subscribes the identity gates of the built-in views while the session has watchers. */
  function watchViews(entry: Entry): void {
    if (!entry.snap) return
    const views = viewsOf(entry)
    const stops = (['turnOutline', 'usage'] as const).map((name) =>
      views[name].subscribe((view) => {
        if (entry.collecting) (entry.collecting as Record<string, unknown>)[name] = view
      }),
    )
    entry.stopViews = () => {
      for (const stop of stops) stop()
    }
  }

  function viewsOf(entry: Entry): LiveViews {
    const snap = entry.snap
    if (!snap) throw new SessionlineError('internal', `session ${entry.id} is not loaded`)
    entry.views ??= createLiveProjections(builtInProjections, {
      turnOutline: snap.folds.turnOutline,
      usage: snap.folds.usage,
    })
    return entry.views
  }

  async function loaded(sessionId: string): Promise<Entry> {
    const entry = entryOf(sessionId)
    if (entry.snap) return entry
    entry.loading ??= loadSnapshot(sessionId)
    try {
      const snap = await entry.loading
      if (!entry.snap) setSnapshot(entry, snap)
    } catch (error) {
      entry.loading = undefined
      if (entry.feed.size === 0) entries.delete(sessionId)
      throw error
    }
    return entry
  }

  function setSnapshot(entry: Entry, snap: Snapshot): void {
    entry.snap = snap
    entry.loading = undefined
    if (entry.feed.size > 0 && !entry.stopViews) watchViews(entry)
    if (snap.folds.transcript.openTurn !== null && !entry.recovered) {
      entry.recovered = true
      // Not awaited: recovery appends through the public API, which needs this load to finish.
      queueMicrotask(() => {
        if (!closed) runner.recover(entry.id).catch(() => undefined)
      })
    }
  }

  /** Fold states from cached projection rows, or undefined when one is missing or outdated. */
  function foldsFrom(rows: ReadonlyMap<string, ProjectionRow>): Folds | undefined {
    const folds = initFolds() as unknown as Record<string, unknown>
    for (const name of FOLD_NAMES) {
      const row = rows.get(name)
      if (!row || row.version !== CACHED_FOLDS[name].version) return undefined
      folds[name] = row.state
    }
    return folds as unknown as Folds
  }

  /** Stores the folds that differ from `previous` (all of them without it). */
  function putFolds(
    sessionId: string,
    throughSeq: number,
    folds: Folds,
    previous?: Folds,
  ): Promise<unknown> | undefined {
    const changed = FOLD_NAMES.filter((name) => folds[name] !== previous?.[name])
    if (changed.length === 0) return undefined
    return putProjectionStates(
      db,
      sessionId,
      throughSeq,
      changed.map((name) => ({
        name,
        version: CACHED_FOLDS[name].version,
        state: folds[name],
        previous: previous?.[name],
      })),
    )
  }

  /** Cold open: cached state when it is current, else one rebuild from the log. */
  async function loadSnapshot(sessionId: string): Promise<Snapshot> {
    const stored = await inRead(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) return undefined
      const [cached, pending] = await Promise.all([
        projectionStates(db, sessionId),
        pendingReceipts(db, sessionId),
      ])
      return { row, cached, pending }
    })
    if (!stored) throw notFound(sessionId)
    const folds = foldsFrom(stored.cached)
    if (folds) return { row: stored.row, folds, pending: stored.pending }
    const rebuilt = await rebuild(sessionId, stored.cached)
    channel?.postMessage({ sessionId, rev: rebuilt.row.rev } satisfies CommitNote)
    return rebuilt
  }

  /**
   * Replays the log in batches of REBUILD_BATCH events (one read transaction each), then writes
   * the states (and, when the transcript fold changed, the rows of a native session) in one
   * transaction that first folds whatever was appended meanwhile.
   */
  async function rebuild(sessionId: string, cached: ReadonlyMap<string, ProjectionRow>): Promise<Snapshot> {
    const transcriptStale = cached.get('transcript')?.version !== CACHED_FOLDS.transcript.version
    let folds = initFolds()
    const rows = new Map<string, SessionMessage>()
    let through = 0
    for (;;) {
      const events = await inRead(db, () => eventsBetween(db, sessionId, through, undefined, REBUILD_BATCH))
      const folded = foldEvents(folds, events)
      folds = folded.folds
      for (const row of folded.rows) rows.set(row.id, row)
      through = events.at(-1)?.seq ?? through
      if (events.length < REBUILD_BATCH) break
    }
    return inWrite(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      const rest = await eventsBetween(db, sessionId, through)
      const folded = foldEvents(folds, rest)
      for (const r of folded.rows) rows.set(r.id, r)
      const next: SessionRow = { ...row, rev: row.rev + 1 }
      const writes: Promise<unknown>[] = [db.sessions.put(next)]
      const states = putFolds(sessionId, row.headSeq, folded.folds)
      if (states) writes.push(states)
      // Imported sessions hold rows that no event produced; only a native log can rewrite them.
      if (transcriptStale && row.source === 'native') {
        await db.messages
          .where('[sessionId+seq]')
          .between([sessionId, 0], [sessionId, Number.POSITIVE_INFINITY])
          .delete()
        writes.push(db.messages.bulkPut([...rows.values()]))
      }
      await Promise.all(writes)
      return { row: next, folds: folded.folds, pending: await pendingReceipts(db, sessionId) }
    })
  }

  /** Inside a transaction: the session's state as stored (when the cache is behind). */
  async function snapshotInTx(sessionId: string, row: SessionRow): Promise<Snapshot> {
    const [cached, pending] = await Promise.all([
      projectionStates(db, sessionId),
      pendingReceipts(db, sessionId),
    ])
    let folds = foldsFrom(cached)
    if (!folds) {
      // Another engine of a different version wrote these; replaying inside the transaction
      // keeps this write correct, and the next cold open rebuilds the cache.
      folds = foldEvents(initFolds(), await eventsBetween(db, sessionId, 0)).folds
    }
    return { row, folds, pending }
  }

  /**
   * Inside an inbox write whose cache is behind: the pending receipts as stored. Inbox writes do
   * not touch the log, so the folds are carried over unread and the cache is caught up after.
   */
  async function inboxInTx(
    sessionId: string,
    row: SessionRow,
    cached: Snapshot | undefined,
  ): Promise<Snapshot> {
    return { row, folds: cached?.folds ?? initFolds(), pending: await pendingReceipts(db, sessionId) }
  }

  // --- publishing --------------------------------------------------------------------------

  /** Moves the cache from `base` to `next` and tells the watchers what changed. */
  function advance(
    entry: Entry,
    next: Snapshot,
    change: {
      events: readonly StoredEvent[]
      rows: readonly SessionMessage[]
      inputs: readonly InputReceipt[]
      reset?: boolean
    },
  ): void {
    const base = entry.snap
    entry.snap = next
    entry.live.settle(change.events)
    const views: Partial<ProjectionViews> = {}
    if (entry.views) {
      entry.collecting = views
      try {
        entry.views.turnOutline.reset(next.folds.turnOutline)
        entry.views.usage.reset(next.folds.usage)
      } finally {
        entry.collecting = undefined
      }
    }
    if (next.pending !== base?.pending) views.pending = next.pending
    const pushed: SessionChange = {
      sessionId: entry.id,
      durable: true,
      headSeq: next.row.headSeq,
      messages: change.rows,
      inputs: change.inputs,
      views,
      session: info(next.row),
    }
    if (change.reset) pushed.reset = true
    entry.feed.push(pushed)
    if (entry.live.size > 0) requestPreview(entry)
  }

  function requestPreview(entry: Entry): void {
    entry.feed.requestLive(() => {
      const snap = entry.snap
      if (!snap) return undefined
      const rows = entry.live.preview(snap.folds.transcript, entry.id, snap.row.headSeq, now())
      if (rows.length === 0) return undefined
      return {
        sessionId: entry.id,
        durable: false,
        headSeq: snap.row.headSeq,
        messages: rows,
        inputs: [],
        views: {},
      }
    })
  }

  function removeEntry(entry: Entry): void {
    entry.deleted = true
    entry.stopViews?.()
    entry.feed.push({
      sessionId: entry.id,
      durable: true,
      headSeq: 0,
      messages: [],
      inputs: [],
      views: {},
      deleted: true,
    })
    entry.feed.clear()
    if (entries.get(entry.id) === entry) entries.delete(entry.id)
  }

  /** Brings the cache up to what the database holds, publishing the difference (serialized per session). */
  function catchUp(entry: Entry): Promise<void> {
    entry.catchUp = entry.catchUp.then(() => runCatchUp(entry)).catch(() => undefined)
    return entry.catchUp
  }

  async function runCatchUp(entry: Entry): Promise<void> {
    const id = entry.id
    for (let attempt = 0; attempt < 8 && !closed; attempt++) {
      const base = entry.snap
      if (!base) return
      const read = await inRead(db, async () => {
        const row = await getSessionRow(db, id)
        if (!row || row.rev === base.row.rev) return { row }
        const gap = row.headSeq - base.row.headSeq
        // An imported session changes without events: reload its cached folds (a reset).
        const small = row.source === 'native' && gap >= 0 && gap <= CATCH_UP_EVENTS
        const [events, cached, pending, admitted] = await Promise.all([
          small && gap > 0 ? eventsBetween(db, id, base.row.headSeq, row.headSeq) : [],
          small ? undefined : projectionStates(db, id),
          pendingReceipts(db, id),
          receiptsFrom(db, id, base.row.nextInputSeq),
        ])
        const stillPending = new Set(pending.map((r) => r.id))
        const left = base.pending.filter((r) => !stillPending.has(r.id)).map((r) => r.id)
        const settled = left.length > 0 ? await db.inputs.bulkGet(left) : []
        return { row, events, cached, pending, changed: [...admitted, ...settled] }
      })
      if (entry.snap !== base) continue // a local commit moved the cache meanwhile: start again from it
      const { row } = read
      if (!row) return removeEntry(entry)
      if (!('events' in read) || read.events === undefined) return
      let folds: Folds | undefined
      let rows: SessionMessage[] = []
      const reset = read.cached !== undefined
      if (read.cached) folds = foldsFrom(read.cached) ?? (await loadSnapshot(id)).folds
      else ({ folds, rows } = foldEvents(base.folds, read.events))
      if (entry.snap !== base) continue
      const changed = new Map<string, InputReceipt>()
      for (const r of read.changed) if (r) changed.set(r.id, r)
      const before = new Map(base.pending.map((r) => [r.id, r]))
      for (const r of read.pending) {
        const old = before.get(r.id)
        if (!old || !sameReceipt(old, r)) changed.set(r.id, r)
      }
      const samePending =
        read.pending.length === base.pending.length &&
        read.pending.every((r, i) => sameReceipt(r, base.pending[i]!))
      advance(
        entry,
        { row, folds, pending: samePending ? base.pending : read.pending },
        { events: read.events, rows, inputs: [...changed.values()].sort((a, b) => a.seq - b.seq), reset },
      )
      return
    }
  }

  channel?.addEventListener('message', (message: MessageEvent<CommitNote>) => {
    const note = message.data
    const entry = entries.get(note?.sessionId)
    if (!entry?.snap || closed) return
    if (note.deleted) return removeEntry(entry)
    if (note.rev > entry.snap.row.rev && entry.feed.size > 0) void catchUp(entry)
  })

  /** Up to date with the database (one read transaction when nothing changed). */
  async function fresh(sessionId: string): Promise<Entry> {
    const cached = entries.get(sessionId)?.snap !== undefined
    const entry = await loaded(sessionId)
    // A snapshot this call just read is as fresh as a second read would be.
    if (cached) await catchUp(entry)
    if (entry.deleted || !entry.snap) throw notFound(sessionId)
    return entry
  }

  // --- writing -----------------------------------------------------------------------------

  /**
   * Runs one write: `plan` sees the session's state as of this transaction (the cache when the
   * row's `rev` proves it current) and returns what to store; a throw writes nothing.
   *
   * With a current cache, the write goes in one round trip: the plan is made from the cache and
   * what `expect` says the reads will find, and its writes are issued right behind the reads.
   * Requests of a transaction run in order, so the reads see the state before the writes; if
   * they show the cache was behind (or an input or row the plan did not expect), the
   * transaction is aborted, nothing is written, and the write runs again the careful way.
   */
  async function commit<T, P = undefined>(sessionId: string, spec: WriteSpec<T, P>): Promise<T> {
    const entry = await loaded(sessionId)
    const scope = spec.scope ?? 'log'
    const transaction = scope === 'inbox' ? inInboxWrite : inWrite
    const cached = entry.snap
    const guess = cached && spec.expect ? await speculate(spec, cached) : undefined
    if (cached && guess) {
      const out = await transaction(db, async () => {
        const reads = Promise.all([getSessionRow(db, sessionId), (guess.prefetch ?? spec.prefetch)?.()])
        const writes = guess.out.next ? persist(sessionId, cached, guess.out) : undefined
        // If we abort below, these fail with the abort; that failure is expected, not news.
        writes?.catch(() => undefined)
        const [row, prefetched] = await reads
        if (row?.rev !== cached.row.rev || !guess.holds(prefetched as P)) throw STALE
        await writes
        return guess.out
      }).catch((error: unknown) => {
        if (error === STALE) return undefined
        throw error
      })
      if (out) return published(entry, cached, out, true)
    }
    const { base, out, complete } = await transaction(db, async () => {
      // Every IndexedDB request is a round trip to the storage process: what the plan will need
      // is asked for together with the session row, not after it.
      const [row, prefetched] = await Promise.all([getSessionRow(db, sessionId), spec.prefetch?.()])
      if (!row) throw notFound(sessionId)
      const current = entry.snap
      const base =
        current && current.row.rev === row.rev
          ? current
          : scope === 'inbox'
            ? await inboxInTx(sessionId, row, current)
            : await snapshotInTx(sessionId, row)
      const out = await spec.plan(base, prefetched as P)
      if (out.next) await persist(sessionId, base, out)
      // An inbox write on a stale cache carried the folds over unread: its state is partial.
      return { base, out, complete: base === current || scope === 'log' }
    })
    return published(entry, base, out, complete)
  }

  /** The plan made from the cache and the expected reads, or undefined if it cannot be made. */
  async function speculate<T, P>(spec: WriteSpec<T, P>, cached: Snapshot) {
    const expected = spec.expect?.(cached)
    if (!expected) return undefined
    try {
      return {
        out: await spec.plan(cached, expected.prefetched),
        prefetch: expected.prefetch,
        holds: expected.holds,
      }
    } catch {
      // The careful path raises the error, if it still holds against the stored state.
      return undefined
    }
  }

  /** After a commit: tells peers, moves the cache and pushes the change; returns the write's value. */
  function published<T>(entry: Entry, base: Snapshot, out: Plan<T>, complete: boolean): T {
    const next = out.next
    if (!next) return out.value
    channel?.postMessage({ sessionId: entry.id, rev: next.row.rev } satisfies CommitNote)
    const change = { events: out.events ?? [], rows: out.rows ?? [], inputs: out.inputs ?? [] }
    const current = entry.snap
    if (current && current.row.rev === base.row.rev && complete) advance(entry, next, change)
    else if (current && current.row.rev < next.row.rev) {
      // The cache had missed another engine's commits: watchers get those and ours from the
      // database, in order; with nobody watching, a complete new state is all that matters.
      if (entry.feed.size > 0 || !complete) void catchUp(entry)
      else advance(entry, next, change)
    }
    return out.value
  }

  async function persist<T>(sessionId: string, base: Snapshot, out: Plan<T>): Promise<void> {
    const next = out.next as Snapshot
    const writes: Promise<unknown>[] = [db.sessions.put(next.row)]
    if (out.events?.length) writes.push(db.events.bulkAdd(out.events))
    if (out.rows?.length) {
      const created = new Set(out.created)
      const fresh = out.rows.filter((row) => created.has(row.id))
      const updated = fresh.length === 0 ? out.rows : out.rows.filter((row) => !created.has(row.id))
      if (fresh.length > 0)
        writes.push(db.messages.bulkAdd(fresh).catch((error: unknown) => rowIdTaken(error)))
      if (updated.length > 0) writes.push(db.messages.bulkPut(updated))
    }
    if (out.inputs?.length) {
      writes.push(
        out.newInputs
          ? db.inputs.bulkAdd(out.inputs).catch((error: unknown) => {
              // Only a write that guessed the id was new gets here: the careful path redoes it.
              throw isConstraintError(error) ? STALE : error
            })
          : db.inputs.bulkPut(out.inputs),
      )
    }
    const states = putFolds(sessionId, next.row.headSeq, next.folds, base.folds)
    if (states) writes.push(states)
    await Promise.all(writes)
  }

  /** A row `add` failed: the only constraint on rows is their id. */
  function rowIdTaken(error: unknown): never {
    if (!isConstraintError(error)) throw error
    const names = failureNames(error)
    throw new SessionlineError(
      'invalid_state',
      'a row with one of these ids already exists',
      { names },
      { cause: error },
    )
  }

  const bump = (row: SessionRow, at: number, changes: Partial<SessionRow> = {}): SessionRow => ({
    ...row,
    ...changes,
    updatedAt: at,
    rev: row.rev + 1,
  })

  /**
   * Stamps and folds events after `base` (append and promote). Rows they create are stored with
   * `add`, so the database itself refuses an id some row already has (see `persist`); an id of
   * one of this session's pending inputs is refused here, as promoting that input could then
   * never create its row. (Admit refuses ids that rows already use.)
   */
  function planEvents(sessionId: string, base: Snapshot, events: readonly SessionEvent[], at: number) {
    const folded = stampAndFold(base.folds, events, sessionId, base.row.headSeq + 1, at)
    const created = createdRowIds(folded.stored)
    const pendingIds = new Set(base.pending.map((r) => r.id))
    const clash = folded.stored.find((e) => e.type === 'assistant/start' && pendingIds.has(e.data.messageId))
    if (clash?.type === 'assistant/start') {
      throw new SessionlineError(
        'invalid_state',
        `id ${JSON.stringify(clash.data.messageId)} is a pending input's id`,
        {
          id: clash.data.messageId,
        },
      )
    }
    const headSeq = base.row.headSeq + events.length
    return { folded, headSeq, created }
  }

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
      return info(snap.row)
    }),

    getSession: guard('getSession', async (sessionId) => {
      const row = await inRead(db, () => getSessionRow(db, sessionIdOf(sessionId)))
      return row && info(row)
    }),

    listSessions: guard('listSessions', async () => {
      const rows = await db.sessions.orderBy('updatedAt').reverse().toArray()
      return rows.map(info)
    }),

    deleteSession: guard('deleteSession', async (sessionId) => {
      const id = sessionIdOf(sessionId)
      await inWrite(db, async () => {
        if (!(await getSessionRow(db, id))) throw notFound(id)
        await deleteSessionData(db, id)
      })
      channel?.postMessage({
        sessionId: id,
        rev: Number.MAX_SAFE_INTEGER,
        deleted: true,
      } satisfies CommitNote)
      const entry = entries.get(id)
      if (entry) removeEntry(entry)
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
      const { beforeSeq, limit, includeInactive } = parseOrThrow(PageRequest, request, 'page request')
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

    close: async () => {
      if (closed) return
      try {
        await runner.close()
      } finally {
        closed = true
        channel?.close()
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
    channel?.postMessage({ sessionId, rev: written.rev } satisfies CommitNote)
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
