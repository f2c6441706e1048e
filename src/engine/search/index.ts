/**
 * The engine's full-text index (docs/decisions/0015): one index per session, held as compact
 * postings (./postings.ts) cut into segments of at most SEGMENT_DOCS rows so a write rewrites
 * one segment, persisted in the `search` table and checked against the session row before use:
 *
 * - a native session's index is synced through a head seq; rows that had not settled then (still
 *   streaming, a tool call waiting for its result) are remembered, and catching up re-reads the
 *   rows from the oldest of them on, never the whole session;
 * - an imported session's index is synced to the session row's `rev`: a re-import changes it,
 *   and the index is rebuilt from the new rows;
 * - an index stored under another INDEX_VERSION is rebuilt; a deleted session's parts are dropped.
 *
 * Commits hand their rows over (`onRows`): a loaded index takes them as they settle, and a
 * session whose index is not loaded (or is busy) is synced in the background shortly after, so
 * every session this engine writes stays indexed whether or not anyone searched it. Builds and
 * catch-ups read and index BUILD_PAGE rows at a time and yield between pages, so other calls are
 * answered during a long build; while the engine writes they read WRITE_PAGE rows at a time and
 * none ahead, so a write's transaction is not queued behind a long read. Persisting waits for a quiet PERSIST_DELAY and is batched; whatever was
 * stored last is a consistent earlier state, so a reload catches up from it instead of rebuilding.
 *
 * This module answers searches and wires three parts that each keep their own state: the
 * registry of loaded indexes (./registry.ts), the follower of commits (./follower.ts) and the
 * persister (./persister.ts). Their timers come from one `Clock`; what fails in the background
 * (a followed sync, a write, a build together, dropping a deleted session's index) goes to
 * `onError`, the engine's one hook for such failures.
 */
import { parseOrThrow } from '../../schema/errors'
import type { SessionMessage } from '../../schema/messages'
import { type SearchHit, SearchOptions, SearchQuery } from '../../schema/search'
import type { SessionlineDb } from '../../store/db'
import { deleteSearchParts, rowsById, sessionRow, sessionRowsFor } from '../../store/search'
import { type BackgroundErrorListener, type Clock, reportingTo, systemClock } from '../background'
import { createFollower } from './follower'
import { mapConcurrently } from './paging'
import { createPersister } from './persister'
import { SessionPostings, TopK, Vocabulary } from './postings'
import { compileQuery } from './query'
import { createIndexRegistry, type IndexRegistry } from './registry'
import { applyRows } from './session-index'
import { snippetOf } from './snippet'

export { SEGMENT_DOCS } from './postings'
export { INDEX_VERSION } from './session-index'

/** How long after a change an index is written (changes meanwhile join the same write). */
export const PERSIST_DELAY = 1000
/** A write waits for quiet at most this many PERSIST_DELAYs. */
export const PERSIST_MAX_DELAYS = 5
/** How long after a commit to a session whose index is not loaded that index is synced. */
export const FOLLOW_DELAY = 200
/** Rows read and indexed between two yields of a build or catch-up. */
export const BUILD_PAGE = 2000
/**
 * Rows a build or catch-up reads at a time while the engine writes (a write began within the
 * last WRITE_QUIET ms). A readwrite transaction waits for every read transaction over its tables
 * created before it, so a write issued during a build waits for the page being read: 2,000 rows
 * kept an admit waiting tens of ms (issue 28, `admit-under-load`). Pages this small cost the
 * build more round trips, paid only while someone writes.
 */
export const WRITE_PAGE = 50
/** How long after a write began a build keeps to WRITE_PAGE. */
export const WRITE_QUIET = 250
/**
 * Sessions a search syncs at once. Storage answers one read at a time while the worker turns
 * the rows of another into objects and indexes them: with reads of several sessions in flight
 * storage always has the next one, so a build of many sessions costs about the longer of
 * reading and indexing, not their sum (one session after the other, each paid for its first
 * read and its stored-index lookup with the worker idle).
 */
export const SYNC_CONCURRENCY = 3
/**
 * A search that must build the indexes of sessions holding at least this share of all
 * sessions' events (and of more than one session) reads the rows table once in key order
 * instead of session by session.
 */
export const BUILD_TOGETHER_SHARE = 0.5

/** What happened to one session's index; diagnostics and benchmarks watch these. */
export interface SearchIndexEvent {
  /** `indexing`: a build or catch-up indexed a page of rows and will read more. */
  kind: 'loaded' | 'caught-up' | 'rebuilt' | 'indexing' | 'persisted'
  sessionId: string
  /** Rows read and indexed so far (loaded: rows the stored index holds). */
  rows: number
  ms: number
  /**
   * Builds and catch-ups (`indexing`, `caught-up`, `rebuilt`) so far: of `ms`, how long was
   * spent waiting for rows from storage and how long indexing them (the rest: yields to other
   * calls).
   */
  readMs?: number
  indexMs?: number
  /** `rebuilt`: read session by session (`session`), or with others from the rows table in key order (`table`). */
  read?: 'session' | 'table'
}

export interface SearchIndexOptions {
  db: SessionlineDb
  onEvent?: (event: SearchIndexEvent) => void
  /** Told of every failure of background work (default: a console warning). */
  onError?: BackgroundErrorListener
  /** Timers and durations (tests pass a manual clock). */
  clock?: Clock
  /** Persisting is deferred by this many ms (tests pass 0). */
  persistDelay?: number
  /** Rows per page of a build (tests pass a few, to see a build yield). */
  buildPage?: number
  /** Rows per page of a build while the engine writes (WRITE_PAGE; see `noteWrite`). */
  writePage?: number
  /** Sessions synced at once by a search (SYNC_CONCURRENCY; 1: one after the other). */
  syncConcurrency?: number
  /** BUILD_TOGETHER_SHARE (tests pass 0 to build together always, 2 never). */
  buildTogetherShare?: number
}

export type SearchIndex = ReturnType<typeof createSearchIndex>

/** Counts searches running; a write of the index waits between segments until there are none. */
function createSearchGate() {
  let searching = 0
  let idleWaiters: (() => void)[] = []
  return {
    async during<T>(search: () => Promise<T>): Promise<T> {
      searching++
      try {
        return await search()
      } finally {
        if (--searching === 0) {
          const waiters = idleWaiters
          idleWaiters = []
          for (const wake of waiters) wake()
        }
      }
    },
    done: () =>
      searching === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve)),
  }
}

export function createSearchIndex(options: SearchIndexOptions) {
  const { db, onEvent } = options
  const clock = options.clock ?? systemClock
  const report = reportingTo(options.onError)
  const syncConcurrency = options.syncConcurrency ?? SYNC_CONCURRENCY
  const vocabulary = new Vocabulary()
  const gate = createSearchGate()
  let closed = false
  let lastWriteAt = Number.NEGATIVE_INFINITY
  const buildPage = options.buildPage ?? BUILD_PAGE
  const writePage = Math.min(options.writePage ?? WRITE_PAGE, buildPage)
  const writing = () => clock.now() - lastWriteAt < WRITE_QUIET
  /** Rows to read next: fewer while the engine writes, so its writes wait less for a page. */
  const pageSize = () => (writing() ? writePage : buildPage)

  const emit = (
    kind: SearchIndexEvent['kind'],
    sessionId: string,
    rows: number,
    since: number,
    phases?: { readMs: number; indexMs: number; read?: 'session' | 'table' },
  ) => onEvent?.({ kind, sessionId, rows, ms: clock.now() - since, ...phases })

  const persister = createPersister({
    db,
    delay: options.persistDelay ?? PERSIST_DELAY,
    maxDelays: PERSIST_MAX_DELAYS,
    clock,
    indexOf: (sessionId) => registry.loaded(sessionId),
    searchesDone: gate.done,
    onPersisted: (sessionId, rows, since) => emit('persisted', sessionId, rows, since),
    report,
  })
  const registry: IndexRegistry = createIndexRegistry({
    db,
    vocabulary,
    pageSize,
    readAhead: () => !writing(),
    buildTogetherShare: options.buildTogetherShare ?? BUILD_TOGETHER_SHARE,
    now: () => clock.now(),
    emit,
    onChanged: persister.schedule,
    isClosed: () => closed,
    report,
  })
  const follower = createFollower({
    delay: FOLLOW_DELAY,
    clock,
    // Derived data: a sync that fails is reported, and retried by the next search or commit.
    sync: async (sessionId) => {
      const row = await sessionRow(db, sessionId)
      if (row) await registry.sync(row)
    },
    report,
  })

  async function runSearch(query: unknown, request: unknown): Promise<SearchHit[]> {
    const text = parseOrThrow(SearchQuery, query, 'search query')
    const { sessionId, limit, includeInactive } = parseOrThrow(SearchOptions, request, 'search options')
    const words = compileQuery(text)
    if (words.length === 0) return []
    const rows = await sessionRowsFor(db, sessionId)
    if (sessionId === undefined) dropMissing(new Set(rows.map((r) => r.id)))
    await registry.buildTogether(rows)
    const indexes = await mapConcurrently(rows, syncConcurrency, registry.sync)
    // Expanded once against the shared vocabulary, then scored session by session.
    const expansions = words.map((word) => vocabulary.expand(word))
    const top = new TopK(limit)
    for (const index of indexes) index.postings.search(expansions, top, includeInactive)
    const best = top.sorted()
    const stored = await rowsById(
      db,
      best.map((hit) => hit.id),
    )
    const hits: SearchHit[] = []
    for (const [i, hit] of best.entries()) {
      const row = stored[i]
      // A row deleted since the index was read is no hit.
      if (!row || row.sessionId !== hit.sessionId) continue
      const { snippet, ranges } = snippetOf(row, new Set(SessionPostings.matchedTerms(expansions, hit)))
      hits.push({
        sessionId: row.sessionId,
        messageId: row.id,
        seq: row.seq,
        turn: row.turn,
        role: row.role,
        snippet,
        ranges,
        score: hit.score,
      })
    }
    return hits
  }

  /** Forgets indexes (loaded and stored) of sessions that no longer exist. */
  function dropMissing(existing: ReadonlySet<string>): void {
    for (const id of registry.loadedIds()) {
      if (!existing.has(id)) forget(id).catch((error: unknown) => report(error, 'search index: dropping', id))
    }
  }

  /** A session was deleted or replaced (re-import): its index goes, memory and storage. */
  async function forget(sessionId: string): Promise<void> {
    registry.forget(sessionId)
    await persister.forget(sessionId)
    await deleteSearchParts(db, sessionId)
  }

  return {
    search: (query: unknown, request: unknown = {}): Promise<SearchHit[]> =>
      gate.during(() => runSearch(query, request)),
    /**
     * A commit's rows: a loaded index synced through `fromHead` takes them and moves to `toHead`;
     * any other (not loaded, being synced, behind) is synced in the background shortly after.
     */
    onRows(sessionId: string, rows: readonly SessionMessage[], fromHead: number, toHead: number): void {
      if (closed) return
      const index = registry.loaded(sessionId)
      if (!index || registry.isBusy(sessionId) || index.source !== 'native' || index.headSeq !== fromHead) {
        follower.follow(sessionId)
        return
      }
      if (rows.length > 0) applyRows(index, rows)
      index.headSeq = toHead
      index.metaDirty = true
      persister.schedule(sessionId)
    },
    forget,
    /**
     * A write is starting: builds and catch-ups read small pages for WRITE_QUIET from now, so the
     * write's transaction is not queued behind a long read.
     */
    noteWrite(): void {
      lastWriteAt = clock.now()
    },
    /**
     * Syncs a session's index in the background soon (an import or re-import replaced its rows),
     * so the next search finds it built.
     */
    refresh(sessionId: string): void {
      follower.follow(sessionId)
    },
    flush: () => persister.flush(),
    async close(): Promise<void> {
      await follower.close()
      await registry.settle()
      await persister.close()
      closed = true
    },
  }
}
