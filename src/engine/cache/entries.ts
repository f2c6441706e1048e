/**
 * The entries of the session cache and their lifetime (TanStack Query's QueryCache is the
 * model): a call pins its session's entry while it runs (`use`), a watcher keeps it while it
 * listens, and only an entry nobody holds or watches is evicted, IDLE_EVICT_MS after it became
 * idle, or at once, oldest first, when more than MAX_IDLE_SESSIONS are idle.
 */
import type { Folds } from '../../core/folds'
import type { createLiveProjections } from '../../core/live-projection'
import type { usage } from '../../core/usage'
import { SessionlineError } from '../../schema/errors'
import type { InputReceipt } from '../../schema/inputs'
import type { SessionRow } from '../../store/db'
import { createLiveBuffer, type LiveBuffer } from '../live'
import type { ChangeViews } from '../types'
import { createFeed, type SessionFeed } from '../watch'

/** Sessions whose fold state stays cached while no call holds them and nobody watches them. */
const MAX_IDLE_SESSIONS = 64
/** How long an entry nobody holds or watches stays cached (TanStack Query's `gcTime`). */
export const IDLE_EVICT_MS = 30_000

/** What the engine last published for a session; immutable, replaced whole on every change. */
export interface Snapshot {
  row: SessionRow
  folds: Folds
  /** Pending receipts in admission order (identity kept while unchanged). */
  pending: readonly InputReceipt[]
}

/**
 * Whether two rows of one session id belong to the same session: one deleted and created again
 * with that id (in another tab, say) starts its `rev` over, and only its `createdAt` tells the
 * two apart (a recreation within the same millisecond as the first creation would not be seen).
 * A log that session sync rewrote past its canonical prefix (`rebased`) is another log too.
 */
export const sameIncarnation = (a: SessionRow, b: SessionRow): boolean =>
  a.createdAt === b.createdAt && a.rebased === b.rebased

/** Whether `row` is the version `cached` was made from: the same session at the same `rev`. */
export const sameVersion = (cached: SessionRow, row: SessionRow): boolean =>
  cached.rev === row.rev && sameIncarnation(cached, row)

export type LiveViews = ReturnType<typeof createLiveProjections<{ usage: typeof usage }>>

export interface Entry {
  readonly id: string
  snap?: Snapshot
  loading?: Promise<Snapshot>
  readonly feed: SessionFeed
  readonly live: LiveBuffer
  views?: LiveViews
  stopViews?: () => void
  /** Views that passed the gate during the current `advance`. */
  collecting?: Partial<ChangeViews>
  catchUp: Promise<void>
  /** A catch-up queued behind `catchUp` that has not started: a call made meanwhile joins it. */
  queuedCatchUp?: Promise<void>
  /** A watch's first load in progress (see `watch` and `page` in engine.ts). */
  opening?: Promise<void>
  /** The runner was asked to recover this session (once per entry, when it loads unfinished). */
  recovered: boolean
  /** The open turn the runner was last asked to inherit after another engine's commits. */
  inheritedTurn?: number
  /** Calls running on this entry (`use`): while any holds it, it is never evicted. */
  holders: number
  /** Evicts the entry once it has been idle (no holder, no listener) for IDLE_EVICT_MS. */
  idleTimer?: ReturnType<typeof setTimeout>
  /** The session was deleted (here or by another engine). */
  deleted?: boolean
}

export const notFound = (sessionId: string) =>
  new SessionlineError('not_found', `no session ${JSON.stringify(sessionId)}`, { sessionId })

export interface EntryHooks {
  /** The entry's feed gained its first listener. */
  watched(entry: Entry): void
  /** The entry's feed lost its last listener. */
  unwatched(entry: Entry): void
}

export type Entries = ReturnType<typeof createEntries>

export function createEntries(batch: (task: () => void) => void, hooks: EntryHooks) {
  const entries = new Map<string, Entry>()

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
          hooks.watched(created)
        },
        onLast: () => {
          hooks.unwatched(created)
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

  /** Forgets `entry` now (the session is gone). */
  function forget(entry: Entry): void {
    stopIdle(entry)
    if (entries.get(entry.id) === entry) entries.delete(entry.id)
  }

  /** Drops every entry and its timer (the engine closed). */
  function clear(): void {
    for (const entry of entries.values()) {
      stopIdle(entry)
      entry.feed.clear()
    }
    entries.clear()
  }

  return { entries, use, forget, clear }
}
