/**
 * The engine's per-session cache: the fold state it last published (`Snapshot`), loaded from
 * stored projection state on first touch, moved forward by local commits, and caught up from
 * the database when another engine (another tab or worker) wrote. It composes four parts, one
 * job each: entries and their pinning (cache/entries), cold load and rebuild (cache/load),
 * cross-tab catch-up (cache/catch-up) and publishing through the identity gate (cache/publish).
 * Each entry owns its lifecycle (cache/entry): pinning, idle eviction, its feed and its catch-up
 * chain, behind methods; a catch-up that fails is told to `onError`, not dropped.
 */

import type { SessionlineDb } from '../store/db'
import { type BackgroundErrorListener, type Clock, reportingTo } from './background'
import { createCatchUp } from './cache/catch-up'
import { createEntries, type Entry, notFound, type Snapshot } from './cache/entries'
import { createLoader, type Loader } from './cache/load'
import { createOutlineReader } from './cache/outline'
import { type Change, createPublisher, type Publisher } from './cache/publish'
import type { CommitNote, Notes } from './notes'

export { sameReceipt } from './cache/catch-up'
export type { Entry, Snapshot } from './cache/entries'
export { IDLE_EVICT_MS, notFound, sameIncarnation, sameVersion } from './cache/entries'
export { REBUILD_BATCH } from './cache/load'

export interface SessionCacheDeps {
  db: SessionlineDb
  now: () => number
  /** Runs batched work (live previews) on the next tick. */
  batch: (task: () => void) => void
  /** Commit notes to and from other engines on the same database. */
  notes: Notes
  isClosed(): boolean
  /**
   * Asked once per session whose loaded state has a turn open or input pending: a runner that is
   * gone may have left either (the runner decides what to do).
   */
  recover(sessionId: string): void
  /** Told of background failures (a catch-up that failed); default: a console warning. */
  onError?: BackgroundErrorListener
  /** Idle-eviction timers (tests pass a manual clock). */
  clock?: Clock
}

/** The engine's per-session cache, as the engine, the write path and history use it. */
export interface SessionCache {
  /** A commit note from another engine: a watched session catches up, a deleted one goes. */
  onNote(note: CommitNote): void
  /** The cached entries by session id, least recently used first. */
  readonly entries: ReadonlyMap<string, Entry>
  /** Runs `run` with the session's entry pinned (never evicted while it runs). */
  use<T>(sessionId: string, run: (entry: Entry) => Promise<T>): Promise<T>
  /** Loads a held entry's state unless it has one. */
  load(entry: Entry): Promise<Entry>
  /** Loads a held entry and catches it up with the database; `not_found` if the session is gone. */
  loadCurrent(entry: Entry): Promise<Entry>
  /** Drops every entry (the engine closed). */
  clear(): void
  /** Publishes a state read outside the cache (the first load of an entry). */
  setSnapshot(entry: Entry, snap: Snapshot): void
  viewsOf: Publisher['viewsOf']
  outline: ReturnType<typeof createOutlineReader>
  /** Moves the entry to `next` and tells its watchers `change`. */
  advance(entry: Entry, next: Snapshot, change: Change): void
  requestPreview(entry: Entry): void
  /** The session is gone: its watchers hear so and the entry leaves. */
  removeEntry(entry: Entry): void
  /** Brings the entry up to what the database holds; never rejects (failures go to `onError`). */
  catchUp(entry: Entry): Promise<void>
  snapshotInTx: Loader['snapshotInTx']
  inboxInTx: Loader['inboxInTx']
  putFolds: Loader['putFolds']
}

export function createSessionCache(deps: SessionCacheDeps): SessionCache {
  const { db, now, batch, notes } = deps
  const entries = createEntries({
    batch,
    report: reportingTo(deps.onError),
    ...(deps.clock ? { clock: deps.clock } : {}),
    hooks: {
      watched(entry) {
        notes.listen()
        publisher.watchViews(entry)
      },
      unwatched: (entry) => publisher.unwatchViews(entry),
    },
  })
  const publisher = createPublisher(entries, now)
  const loader = createLoader(db, notes)
  const { catchUp, onNote } = createCatchUp({
    db,
    entries,
    loader,
    publisher,
    isClosed: deps.isClosed,
    caughtUp: inheritOpenTurn,
  })
  const { watchViews } = publisher
  const outline = createOutlineReader(db)

  /** Loads the state of a held entry (see `use`) unless it has one. */
  async function load(entry: Entry): Promise<Entry> {
    if (entry.snap) return entry
    const snap = await entry.load(() => loader.loadSnapshot(entry.id))
    if (!entry.snap) setSnapshot(entry, snap)
    return entry
  }

  function setSnapshot(entry: Entry, snap: Snapshot): void {
    entry.publish(snap)
    if (entry.feed.size > 0 && !publisher.watchingViews(entry)) watchViews(entry)
    const unfinished = snap.folds.transcript.openTurn !== null || snap.pending.length > 0
    if (unfinished && entry.claimRecovery()) {
      // Not awaited: recovery appends through the public API, which needs this load to finish.
      queueMicrotask(() => {
        if (!deps.isClosed()) deps.recover(entry.id)
      })
    }
  }

  /**
   * After another engine's commits: a turn that opened there is run by a runner this engine does
   * not know, which may die with its tab. The runner is asked once per such turn to stand by as
   * its heir (it waits on the session's lock, then closes the turn if it is still open).
   */
  function inheritOpenTurn(entry: Entry): void {
    const turn = entry.snap?.folds.transcript.openTurn ?? null
    if (turn === null || !entry.claimInheritance(turn)) return
    queueMicrotask(() => {
      if (!deps.isClosed()) deps.recover(entry.id)
    })
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

  return {
    onNote,
    entries: entries.entries,
    use: entries.use,
    load,
    loadCurrent,
    clear: entries.clear,
    setSnapshot,
    viewsOf: publisher.viewsOf,
    outline,
    advance: publisher.advance,
    requestPreview: publisher.requestPreview,
    removeEntry: publisher.removeEntry,
    catchUp,
    snapshotInTx: loader.snapshotInTx,
    inboxInTx: loader.inboxInTx,
    putFolds: loader.putFolds,
  }
}
