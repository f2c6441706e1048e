/**
 * The engine's per-session cache: the fold state it last published (`Snapshot`), loaded from
 * stored projection state on first touch, moved forward by local commits, and caught up from
 * the database when another engine (another tab or worker) wrote. It composes four parts, one
 * job each: entries and their pinning (cache/entries), cold load and rebuild (cache/load),
 * cross-tab catch-up (cache/catch-up) and publishing through the identity gate (cache/publish).
 */
import type { SessionlineDb } from '../store/db'
import { createCatchUp } from './cache/catch-up'
import { createEntries, type Entry, notFound, type Snapshot } from './cache/entries'
import { createLoader } from './cache/load'
import { createOutlineReader } from './cache/outline'
import { createPublisher } from './cache/publish'
import type { Notes } from './notes'

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
}

export type SessionCache = ReturnType<typeof createSessionCache>

export function createSessionCache(deps: SessionCacheDeps) {
  const { db, now, batch, notes } = deps
  const entries = createEntries(batch, {
    watched(entry) {
      notes.listen()
      publisher.watchViews(entry)
    },
    unwatched(entry) {
      entry.stopViews?.()
      entry.stopViews = undefined
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
    entry.loading ??= loader.loadSnapshot(entry.id)
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
    const unfinished = snap.folds.transcript.openTurn !== null || snap.pending.length > 0
    if (unfinished && !entry.recovered) {
      entry.recovered = true
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
    if (turn === null || turn === entry.inheritedTurn) return
    entry.inheritedTurn = turn
    entry.recovered = true
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
