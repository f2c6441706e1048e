/**
 * Writes changed search indexes to the `search` table: after a quiet `delay`, and at the latest
 * `maxDelays` delays after the first unsaved change, so a burst of commits (a seed, an agent's
 * busy turn) is written once, not once a second while it lasts. Writes run one after the other on
 * one chain. Whatever was stored last is a consistent earlier state, so a failed write is
 * reported and the next load catches up from what is there.
 */
import type { SearchPartRow, SessionlineDb } from '../../store/db'
import { writeSearchParts } from '../../store/search'
import type { Clock, ReportFailure } from '../background'
import { nextTask } from './paging'
import { INDEX_VERSION, metaOf, type SessionIndex } from './session-index'

/** Where and when to write, and what to tell. */
export interface PersisterOptions {
  db: SessionlineDb
  /** Quiet time before a write. */
  delay: number
  /** A write waits for quiet at most this many delays. */
  maxDelays: number
  clock: Clock
  /** The index to write for a session (none: it was forgotten; nothing is written). */
  indexOf: (sessionId: string) => SessionIndex | undefined
  /** Resolves when no search runs: a write yields to searches between segments. */
  searchesDone: () => Promise<void>
  /** A session's index was written, holding `rows` rows, starting at `since` (by the clock). */
  onPersisted: (sessionId: string, rows: number, since: number) => void
  report: ReportFailure
}

/** Writes changed indexes; `close` writes the rest. */
export interface Persister {
  /** The session's index changed: write it after the next quiet delay. */
  schedule(sessionId: string): void
  /** Writes every index changed since its last write, now. */
  flush(): Promise<void>
  /** The session's index must not be written again; resolves once no write of it runs. */
  forget(sessionId: string): Promise<void>
  /** Writes what is unsaved and starts no timer after. */
  close(): Promise<void>
}

/** A persister with nothing unsaved yet. */
export function createPersister(options: PersisterOptions): Persister {
  const { db, delay, maxDelays, clock, indexOf, searchesDone, onPersisted, report } = options
  const unsaved = new Set<string>()
  let cancelTimer: (() => void) | undefined
  let firstUnsavedAt: number | undefined
  let writing: Promise<void> = Promise.resolve()
  let closed = false

  function schedule(sessionId: string): void {
    unsaved.add(sessionId)
    if (closed) return
    const now = clock.now()
    firstUnsavedAt ??= now
    if (cancelTimer !== undefined) {
      if (now - firstUnsavedAt >= delay * maxDelays) return
      cancelTimer()
    }
    cancelTimer = clock.after(delay, () => {
      cancelTimer = undefined
      void flush()
    })
  }

  async function write(index: SessionIndex): Promise<void> {
    const since = clock.now()
    // What the stored segments are synced to is taken first: rows indexed while they are being
    // stored are either in them or newer than this head (and caught up on load).
    const meta = metaOf(index)
    const parts: SearchPartRow[] = []
    for (const at of index.postings.takeDirty()) {
      // Queries go first, whole.
      await nextTask()
      await searchesDone()
      const data = index.postings.store(at)
      parts.push({ sessionId: index.sessionId, part: at + 1, version: INDEX_VERSION, data })
    }
    parts.push({ sessionId: index.sessionId, part: 0, version: INDEX_VERSION, data: meta })
    index.metaDirty = false
    await writeSearchParts(db, index.sessionId, parts, meta.segments + 1)
    onPersisted(index.sessionId, index.postings.size, since)
  }

  function flush(): Promise<void> {
    cancelTimer?.()
    cancelTimer = undefined
    firstUnsavedAt = undefined
    writing = writing.then(async () => {
      const ids = [...unsaved]
      unsaved.clear()
      for (const id of ids) {
        const index = indexOf(id)
        if (index) await write(index).catch((error: unknown) => report(error, 'search index: writing', id))
      }
    })
    return writing
  }

  return {
    schedule,
    flush,
    async forget(sessionId) {
      unsaved.delete(sessionId)
      await writing
    },
    async close() {
      await flush()
      closed = true
    },
  }
}
