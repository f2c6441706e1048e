/**
 * The engine's per-session cache: the fold state it last published (`Snapshot`), loaded from
 * stored projection state on first touch (rebuilt from the log once when a fold's version
 * changed), moved forward by local commits, and caught up from the database when another
 * engine (another tab or worker) wrote. It also owns each session's change feed.
 */

import { CACHED_FOLDS, FOLD_NAMES, type FoldName, type Folds, foldEvents, initFolds } from '../core/folds'
import { builtInProjections, createLiveProjections } from '../core/live-projection'
import { SessionlineError } from '../schema/errors'
import type { StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import { type ProjectionRow, type SessionlineDb, type SessionRow, sessionInfo } from '../store/db'
import { importedFoldStates } from '../store/imported'
import {
  eventsBetween,
  getReceipts,
  getSessionRow,
  inRead,
  inWrite,
  pendingReceipts,
  projectionStates,
  putProjectionStates,
  receiptsFrom,
} from '../store/transactions'
import { createLiveBuffer, type LiveBuffer } from './live'
import type { CommitNote, Notes } from './notes'
import type { ProjectionViews, SessionChange } from './types'
import { createFeed, type SessionFeed } from './watch'

/** Events read per transaction when a projection is rebuilt from the log. */
export const REBUILD_BATCH = 5000
/** Sessions whose fold state stays cached while no call holds them and nobody watches them. */
const MAX_IDLE_SESSIONS = 64
/** How long an entry nobody holds or watches stays cached (TanStack Query's `gcTime`). */
export const IDLE_EVICT_MS = 30_000
/** Beyond this many new events, a watcher is told to reload (`reset`) instead of being sent rows. */
const CATCH_UP_EVENTS = 2000

/** What the engine last published for a session; immutable, replaced whole on every change. */
export interface Snapshot {
  row: SessionRow
  folds: Folds
  /** Pending receipts in admission order (identity kept while unchanged). */
  pending: readonly InputReceipt[]
}

type LiveViews = ReturnType<typeof createLiveProjections<typeof builtInProjections>>

export interface Entry {
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
  /** Calls running on this entry (`use`): while any holds it, it is never evicted. */
  holders: number
  /** Evicts the entry once it has been idle (no holder, no listener) for IDLE_EVICT_MS. */
  idleTimer?: ReturnType<typeof setTimeout>
  /** The session was deleted (here or by another engine). */
  deleted?: boolean
}

export const notFound = (sessionId: string) =>
  new SessionlineError('not_found', `no session ${JSON.stringify(sessionId)}`, { sessionId })
/** One version of one receipt: every change bumps `revision`. */
export const sameReceipt = (a: InputReceipt, b: InputReceipt) =>
  a.id === b.id && a.revision === b.revision && a.status === b.status && a.text === b.text

export interface SessionCacheDeps {
  db: SessionlineDb
  now: () => number
  /** Runs batched work (live previews) on the next tick. */
  batch: (task: () => void) => void
  /** Commit notes to and from other engines on the same database. */
  notes: Notes
  isClosed(): boolean
  /** Asked once per session whose loaded state has a turn open (the runner decides what to do). */
  recover(sessionId: string): void
}

export type SessionCache = ReturnType<typeof createSessionCache>

export function createSessionCache(deps: SessionCacheDeps) {
  const { db, now, batch, notes } = deps
  const entries = new Map<string, Entry>()

  // --- per-session cache -------------------------------------------------------------------

  /** The entry of a session, created when missing; most recently used last (Map order). */
  function entryOf(sessionId: string): Entry {
    let entry = entries.get(sessionId)
    if (entry) {
      entries.delete(sessionId)
      entries.set(sessionId, entry)
      return entry
    }
    const created: Entry = {
      id: sessionId,
      live: createLiveBuffer(),
      catchUp: Promise.resolve(),
      recovered: false,
      holders: 0,
      feed: createFeed(batch, {
        onFirst: () => {
          stopIdle(created)
          notes.listen()
          watchViews(created)
        },
        onLast: () => {
          created.stopViews?.()
          created.stopViews = undefined
          becameIdle(created)
        },
      }),
    }
    entry = created
    entries.set(sessionId, entry)
    evictIdle()
    return entry
  }

  /**
   * Runs `run` with the session's entry pinned: no eviction can orphan it while the call awaits,
   * so a listener it adds or a state it publishes lands on the entry every later call uses.
   */
  async function use<T>(sessionId: string, run: (entry: Entry) => Promise<T>): Promise<T> {
    const entry = entryOf(sessionId)
    entry.holders++
    stopIdle(entry)
    try {
      return await run(entry)
    } finally {
      entry.holders--
      becameIdle(entry)
    }
  }

  const isIdle = (entry: Entry) => entry.holders === 0 && entry.feed.size === 0 && !entry.loading

  function stopIdle(entry: Entry): void {
    if (entry.idleTimer === undefined) return
    clearTimeout(entry.idleTimer)
    entry.idleTimer = undefined
  }

  /** An entry nobody holds or watches: forgotten after IDLE_EVICT_MS (at once if it holds no state). */
  function becameIdle(entry: Entry): void {
    if (!isIdle(entry) || entries.get(entry.id) !== entry) return
    if (!entry.snap) {
      entries.delete(entry.id)
      return
    }
    stopIdle(entry)
    const timer = setTimeout(() => {
      entry.idleTimer = undefined
      if (isIdle(entry) && entries.get(entry.id) === entry) entries.delete(entry.id)
    }, IDLE_EVICT_MS)
    // Node: an idle cache must not keep the process alive.
    ;(timer as { unref?: () => void }).unref?.()
    entry.idleTimer = timer
  }

  /** Beyond MAX_IDLE_SESSIONS idle entries, forgets the least recently used idle ones first. */
  function evictIdle(): void {
    let idle = 0
    for (const entry of entries.values()) if (isIdle(entry)) idle++
    for (const [id, entry] of entries) {
      if (idle <= MAX_IDLE_SESSIONS) return
      if (!isIdle(entry)) continue
      stopIdle(entry)
      entries.delete(id)
      idle--
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

  /** Loads the state of a held entry (see `use`) unless it has one. */
  async function load(entry: Entry): Promise<Entry> {
    if (entry.snap) return entry
    entry.loading ??= loadSnapshot(entry.id)
    try {
      const snap = await entry.loading
      if (!entry.snap) setSnapshot(entry, snap)
    } finally {
      entry.loading = undefined
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
        if (!deps.isClosed()) deps.recover(entry.id)
      })
    }
  }

  /** Fold states from cached projection rows, or undefined when one is missing or outdated. */
  function foldsFrom(rows: ReadonlyMap<string, ProjectionRow>): Folds | undefined {
    const states: Partial<Record<FoldName, unknown>> = {}
    for (const name of FOLD_NAMES) {
      const row = rows.get(name)
      if (!row || row.version !== CACHED_FOLDS[name].version) return undefined
      states[name] = row.state
    }
    // Every fold is present, each stored by `putFolds` under the version its code still has.
    return states as Folds
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
    const rebuilt =
      stored.row.source === 'native'
        ? await rebuild(sessionId, stored.cached)
        : await rebuildImported(sessionId)
    notes.post({ sessionId, rev: rebuilt.row.rev })
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
      // Imported sessions hold rows that no event produced; only a native log can rewrite them.
      if (transcriptStale && row.source === 'native') {
        await db.messages
          .where('[sessionId+seq]')
          .between([sessionId, 0], [sessionId, Number.POSITIVE_INFINITY])
          .delete()
        return storeRebuilt(row, folded.folds, db.messages.bulkPut([...rows.values()]))
      }
      return storeRebuilt(row, folded.folds)
    })
  }

  /** An imported session has no log (docs/decisions/0005): its folds are derived from its rows. */
  async function rebuildImported(sessionId: string): Promise<Snapshot> {
    return inWrite(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      const rows = await db.messages
        .where('[sessionId+seq]')
        .between([sessionId, 0], [sessionId, Number.POSITIVE_INFINITY])
        .toArray()
      return storeRebuilt(row, importedFoldStates(rows))
    })
  }

  /**
   * Inside a rebuild's transaction: stores the rebuilt folds (and `rows`, a write already
   * issued) under a new `rev`, so a peer holding the old state reloads it.
   */
  async function storeRebuilt(row: SessionRow, folds: Folds, rows?: Promise<unknown>): Promise<Snapshot> {
    const next: SessionRow = { ...row, rev: row.rev + 1 }
    await Promise.all([db.sessions.put(next), putFolds(row.id, row.headSeq, folds), rows])
    return { row: next, folds, pending: await pendingReceipts(db, row.id) }
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
      session: sessionInfo(next.row),
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
    stopIdle(entry)
    if (entries.get(entry.id) === entry) entries.delete(entry.id)
  }

  /** Brings the cache up to what the database holds, publishing the difference (serialized per session). */
  function catchUp(entry: Entry): Promise<void> {
    entry.catchUp = entry.catchUp.then(() => runCatchUp(entry)).catch(() => undefined)
    return entry.catchUp
  }

  async function runCatchUp(entry: Entry): Promise<void> {
    const id = entry.id
    for (let attempt = 0; attempt < 8 && !deps.isClosed(); attempt++) {
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
        const settled = left.length > 0 ? await getReceipts(db, left) : []
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

  /** A note from another engine: watched sessions catch up from the database. */
  function onNote(note: CommitNote): void {
    const entry = entries.get(note?.sessionId)
    if (!entry?.snap || deps.isClosed()) return
    if (note.deleted) removeEntry(entry)
    else if (note.rev > entry.snap.row.rev && entry.feed.size > 0) void catchUp(entry)
  }

  /** Loads a held entry and brings it up to date with the database (one read when nothing changed). */
  async function loadCurrent(entry: Entry): Promise<Entry> {
    const cached = entry.snap !== undefined
    await load(entry)
    // A snapshot this call just read is as fresh as a second read would be.
    if (cached) await catchUp(entry)
    if (entry.deleted || !entry.snap) throw notFound(entry.id)
    return entry
  }

  /** Drops every entry and its timer (the engine closed). */
  function clear(): void {
    for (const entry of entries.values()) {
      stopIdle(entry)
      entry.feed.clear()
    }
    entries.clear()
  }

  return {
    onNote,
    entries,
    use,
    load,
    loadCurrent,
    clear,
    setSnapshot,
    viewsOf,
    advance,
    requestPreview,
    removeEntry,
    catchUp,
    snapshotInTx,
    inboxInTx,
    putFolds,
  }
}
