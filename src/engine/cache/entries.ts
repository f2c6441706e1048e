/**
 * The entries of the session cache and their lifetime (TanStack Query's QueryCache is the
 * model): a call pins its session's entry while it runs (`use`), a watcher keeps it while it
 * listens, and only an entry nobody holds or watches is evicted, IDLE_EVICT_MS after it became
 * idle, or at once, oldest first, when more than MAX_IDLE_SESSIONS are idle.
 */
import type { createLiveProjections } from '../../core/live-projection'
import type { usage } from '../../core/usage'
import { SessionlineError } from '../../schema/errors'
import type { SessionRow } from '../../store/db'
import { type Clock, type ReportFailure, systemClock } from '../background'
import { Entry } from './entry'

export type { Snapshot } from './entry'
export { Entry }

/** Sessions whose fold state stays cached while no call holds them and nobody watches them. */
const MAX_IDLE_SESSIONS = 64
/** How long an entry nobody holds or watches stays cached (TanStack Query's `gcTime`). */
export const IDLE_EVICT_MS = 30_000

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

export const notFound = (sessionId: string) =>
  new SessionlineError('not_found', `no session ${JSON.stringify(sessionId)}`, { sessionId })

export interface EntryHooks {
  /** The entry's feed gained its first listener. */
  watched(entry: Entry): void
  /** The entry's feed lost its last listener. */
  unwatched(entry: Entry): void
}

/** What the entries are made with. */
export interface EntriesOptions {
  batch: (task: () => void) => void
  hooks: EntryHooks
  /** Told of a catch-up that failed. */
  report: ReportFailure
  /** Idle timers (default: the system's). */
  clock?: Clock
}

export type Entries = ReturnType<typeof createEntries>

/** The cache's entries, none yet. */
export function createEntries({ batch, hooks, report, clock = systemClock }: EntriesOptions) {
  const entries = new Map<string, Entry>()
  const context = {
    batch,
    clock,
    gcTime: IDLE_EVICT_MS,
    report,
    watched: hooks.watched,
    unwatched: hooks.unwatched,
    remove: (entry: Entry) => {
      if (entries.get(entry.id) === entry) entries.delete(entry.id)
    },
  }

  /** The entry of a session, created when missing; most recently used last (Map order). */
  function entryOf(sessionId: string): Entry {
    const entry = entries.get(sessionId)
    if (entry) {
      entries.delete(sessionId)
      entries.set(sessionId, entry)
      return entry
    }
    const created = new Entry(sessionId, context)
    entries.set(sessionId, created)
    evictIdle()
    return created
  }

  /**
   * Runs `run` with the session's entry pinned: no eviction can orphan it while the call awaits,
   * so a listener it adds or a state it publishes lands on the entry every later call uses.
   */
  async function use<T>(sessionId: string, run: (entry: Entry) => Promise<T>): Promise<T> {
    const entry = entryOf(sessionId)
    entry.hold()
    try {
      return await run(entry)
    } finally {
      entry.release()
    }
  }

  /** Beyond MAX_IDLE_SESSIONS idle entries, forgets the least recently used idle ones first. */
  function evictIdle(): void {
    let idle = 0
    for (const entry of entries.values()) if (entry.isIdle) idle++
    for (const [id, entry] of entries) {
      if (idle <= MAX_IDLE_SESSIONS) return
      if (!entry.isIdle) continue
      entry.dispose()
      entries.delete(id)
      idle--
    }
  }

  /** Forgets `entry` now (the session is gone). */
  function forget(entry: Entry): void {
    entry.dispose()
    if (entries.get(entry.id) === entry) entries.delete(entry.id)
  }

  /** Drops every entry and its timer (the engine closed). */
  function clear(): void {
    for (const entry of entries.values()) {
      entry.dispose()
      entry.feed.clear()
    }
    entries.clear()
  }

  return { entries: entries as ReadonlyMap<string, Entry>, use, forget, clear }
}
