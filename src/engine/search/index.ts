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
 * answered during a long build. Persisting waits for a quiet PERSIST_DELAY and is batched; whatever was
 * stored last is a consistent earlier state, so a reload catches up from it instead of rebuilding.
 */
import { parseOrThrow } from '../../schema/errors'
import type { SessionMessage } from '../../schema/messages'
import { type SearchHit, SearchOptions, SearchQuery } from '../../schema/search'
import type { SearchPartRow, SessionlineDb, SessionRow } from '../../store/db'
import {
  deleteSearchParts,
  readSearchParts,
  rowsById,
  rowsInKeyOrder,
  rowsToIndex,
  searchHeads,
  sessionRow,
  sessionRowsFor,
  writeSearchParts,
} from '../../store/search'
import { isSettled } from './documents'
import { SessionPostings, type StoredSegment, TopK, Vocabulary } from './postings'
import { compileQuery } from './query'
import { snippetOf } from './snippet'

export { SEGMENT_DOCS } from './postings'

/** Bumped whenever the tokenizer, the fields or the stored layout change: old indexes are rebuilt. */
export const INDEX_VERSION = 2
/** How long after a change an index is written (changes meanwhile join the same write). */
export const PERSIST_DELAY = 1000
/** A write waits for quiet at most this many PERSIST_DELAYs. */
export const PERSIST_MAX_DELAYS = 5
/** How long after a commit to a session whose index is not loaded that index is synced. */
export const FOLLOW_DELAY = 200
/** Rows read and indexed between two yields of a build or catch-up. */
export const BUILD_PAGE = 2000
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

interface SessionIndex {
  sessionId: string
  source: SessionRow['source']
  /** Native: the head seq the index is synced through. */
  headSeq: number
  /** Imported: the session row's rev the index was built from. */
  rev: number
  postings: SessionPostings
  /** Rows seen but not settled yet, by id → seq. */
  open: Map<string, number>
  /** The meta (head, rev, open rows, segment count) changed since the last write. */
  metaDirty: boolean
}

interface Meta {
  headSeq: number
  rev: number
  source: SessionRow['source']
  open: [string, number][]
  segments: number
}

export interface SearchIndexOptions {
  db: SessionlineDb
  onEvent?: (event: SearchIndexEvent) => void
  /** Persisting is deferred by this many ms (tests pass 0). */
  persistDelay?: number
  /** Rows per page of a build (tests pass a few, to see a build yield). */
  buildPage?: number
  /** Sessions synced at once by a search (SYNC_CONCURRENCY; 1: one after the other). */
  syncConcurrency?: number
  /** BUILD_TOGETHER_SHARE (tests pass 0 to build together always, 2 never). */
  buildTogetherShare?: number
}

export type SearchIndex = ReturnType<typeof createSearchIndex>

const isSynced = (index: SessionIndex, row: SessionRow) =>
  index.source === row.source &&
  (row.source === 'native' ? index.headSeq === row.headSeq : index.rev === row.rev)

const nextTask = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

/** `run` over `items` with at most `limit` running at once; results in the order of `items`. */
async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const at = next++
      out[at] = await run(items[at]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

/**
 * Reads pages one ahead of using them: while `use` indexes a page, the next (`following`) is
 * already being read. Between pages it tells `progress` and yields to other calls; `use`
 * answering false stops it. Answers how long was spent waiting for pages and using them.
 */
async function pipelined<P>(
  first: Promise<P>,
  following: (page: P) => Promise<P> | undefined,
  use: (page: P) => boolean,
  progress: (phases: { readMs: number; indexMs: number }) => void,
): Promise<{ readMs: number; indexMs: number }> {
  const phases = { readMs: 0, indexMs: 0 }
  let next: Promise<P> | undefined = first
  while (next !== undefined) {
    const waited = performance.now()
    const page: P = await next
    const got = performance.now()
    phases.readMs += got - waited
    next = following(page)
    const more = use(page)
    phases.indexMs += performance.now() - got
    if (!more) break
    if (next !== undefined) {
      progress(phases)
      await nextTask()
    }
  }
  return phases
}

export function createSearchIndex(options: SearchIndexOptions) {
  const { db, onEvent } = options
  const persistDelay = options.persistDelay ?? PERSIST_DELAY
  const buildPage = options.buildPage ?? BUILD_PAGE
  const syncConcurrency = options.syncConcurrency ?? SYNC_CONCURRENCY
  const buildTogetherShare = options.buildTogetherShare ?? BUILD_TOGETHER_SHARE
  const vocabulary = new Vocabulary()
  const loaded = new Map<string, SessionIndex>()
  const syncing = new Map<string, Promise<SessionIndex>>()
  /** Bumped by `forget`: a sync that started before must not bring the old index back. */
  const epochs = new Map<string, number>()
  const unsaved = new Set<string>()
  /** Sessions written while their index was not loaded or busy: synced in the background. */
  const following = new Set<string>()
  let followTimer: ReturnType<typeof setTimeout> | undefined
  let following$: Promise<void> = Promise.resolve()
  let timer: ReturnType<typeof setTimeout> | undefined
  let firstUnsavedAt: number | undefined
  let saving: Promise<void> = Promise.resolve()
  let closed = false
  /** Set by `close`: no more background syncs start. */
  let stopping = false
  /** Searches running now; a write of the index waits between segments until there are none. */
  let searching = 0
  let idleWaiters: (() => void)[] = []
  const searchesDone = () =>
    searching === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))

  const emit = (
    kind: SearchIndexEvent['kind'],
    sessionId: string,
    rows: number,
    since: number,
    phases?: { readMs: number; indexMs: number; read?: 'session' | 'table' },
  ) => onEvent?.({ kind, sessionId, rows, ms: performance.now() - since, ...phases })

  const emptyIndex = (row: SessionRow): SessionIndex => ({
    sessionId: row.id,
    source: row.source,
    headSeq: 0,
    rev: 0,
    postings: new SessionPostings(row.id, vocabulary),
    open: new Map(),
    metaDirty: true,
  })

  // --- keeping an index current -------------------------------------------------------------

  /** Indexes settled rows (replacing older versions), remembers unsettled ones, drops hidden ones. */
  function apply(index: SessionIndex, rows: readonly SessionMessage[]): void {
    for (const row of rows) applyRow(index, row)
  }

  function applyRow(index: SessionIndex, row: SessionMessage): void {
    const settled = isSettled(row)
    if (settled) index.open.delete(row.id)
    else index.open.set(row.id, row.seq)
    if (!settled || row.visibility === 'hidden') index.postings.discard(row.id)
    else index.postings.add(row)
    index.metaDirty = true
  }

  /** First seq a catch-up must re-read: the oldest unsettled row, else the first after the head. */
  function catchUpFrom(index: SessionIndex): number {
    let from = index.headSeq + 1
    for (const seq of index.open.values()) from = Math.min(from, seq)
    return from
  }

  /**
   * Reads and indexes the session's rows from `fromSeq` on, a page at a time, yielding between
   * pages. Answers the session row as it was when the first page was read (rows written later
   * and read anyway are indexed again at the next catch-up), undefined if the session is gone.
   */
  async function indexFrom(index: SessionIndex, fromSeq: number, since: number) {
    let first: SessionRow | undefined
    let rows = 0
    const read = (from: number) => rowsToIndex(db, index.sessionId, from, buildPage)
    const phases = await pipelined(
      read(fromSeq),
      (page) => (!page.row || page.nextSeq === undefined ? undefined : read(page.nextSeq)),
      (page) => {
        if (!page.row) {
          first = undefined
          return false
        }
        first ??= page.row
        apply(index, page.rows)
        rows += page.rows.length
        return true
      },
      (phases) => emit('indexing', index.sessionId, rows, since, phases),
    )
    return { row: first, rows, phases }
  }

  function load(parts: readonly SearchPartRow[], row: SessionRow): SessionIndex | undefined {
    const [head, ...rest] = parts
    if (head?.part !== 0 || parts.some((p) => p.version !== INDEX_VERSION)) return undefined
    const meta = head.data as Meta
    if (meta.source !== row.source || rest.length !== meta.segments) return undefined
    const index = emptyIndex(row)
    index.headSeq = meta.headSeq
    index.rev = meta.rev
    index.open = new Map(meta.open)
    index.metaDirty = false
    for (const [i, part] of rest.entries()) {
      if (part.part !== i + 1) return undefined
      index.postings.load(part.data as StoredSegment)
    }
    return index
  }

  async function syncSession(row: SessionRow): Promise<SessionIndex> {
    const sessionId = row.id
    const epoch = epochs.get(sessionId) ?? 0
    let index = loaded.get(sessionId)
    if (index && isSynced(index, row)) return index
    if (!index) {
      const since = performance.now()
      index = load(await readSearchParts(db, sessionId), row)
      if (index) emit('loaded', sessionId, index.postings.size, since)
      if (index && isSynced(index, row)) return keep(index, epoch)
    }
    const since = performance.now()
    if (index && row.source === 'native' && index.headSeq < row.headSeq) {
      const { row: current, rows, phases } = await indexFrom(index, catchUpFrom(index), since)
      if (current) {
        index.headSeq = current.headSeq
        index.rev = current.rev
        emit('caught-up', sessionId, rows, since, phases)
        return keep(index, epoch)
      }
    }
    const rebuilt = emptyIndex(row)
    const { row: current, rows, phases } = await indexFrom(rebuilt, 1, since)
    rebuilt.headSeq = current?.headSeq ?? row.headSeq
    rebuilt.rev = current?.rev ?? row.rev
    rebuilt.postings.markAllDirty()
    emit('rebuilt', sessionId, rows, since, { ...phases, read: 'session' })
    return keep(rebuilt, epoch)
  }

  /**
   * Builds, in one read of the rows table in key order, the indexes of the sessions in `rows`
   * that have neither a loaded index nor a stored one of this version, when they hold at least
   * `buildTogetherShare` of all sessions' events (a first search after a format change or a
   * lost index); otherwise leaves every session to `sync`. The sessions it builds are busy
   * meanwhile (`syncing`), so commits to them are followed up and their syncs wait for it.
   */
  async function buildTogether(rows: readonly SessionRow[]): Promise<void> {
    const candidates = rows.filter((row) => !loaded.has(row.id) && !syncing.has(row.id))
    if (candidates.length < 2) return
    const heads = await searchHeads(
      db,
      candidates.map((row) => row.id),
    )
    const stale = candidates.filter((_, i) => heads[i]?.version !== INDEX_VERSION)
    const events = (list: readonly SessionRow[]) => list.reduce((n, row) => n + row.headSeq, 0)
    if (stale.length < 2 || events(stale) < buildTogetherShare * events(rows)) return
    const built = readTogether(stale)
    for (const row of stale) {
      // A failed read leaves the session to its own sync, which follows this one.
      const settled = built
        .catch(() => undefined)
        .then(() => loaded.get(row.id) as SessionIndex)
        .finally(() => {
          if (syncing.get(row.id) === settled) syncing.delete(row.id)
        })
      syncing.set(row.id, settled)
    }
    await built.catch(() => undefined)
  }

  async function readTogether(stale: readonly SessionRow[]): Promise<void> {
    const since = performance.now()
    const building = new Map<string, { index: SessionIndex; epoch: number; rows: number }>()
    for (const row of stale) {
      building.set(row.id, { index: emptyIndex(row), epoch: epochs.get(row.id) ?? 0, rows: 0 })
    }
    let total = 0
    let touched = new Set<string>()
    const phases = await pipelined(
      rowsInKeyOrder(db, undefined, buildPage, true),
      (page) =>
        page.nextAfter === undefined ? undefined : rowsInKeyOrder(db, page.nextAfter, buildPage, false),
      (page) => {
        if (page.sessions) {
          // Synced to the session rows read with the first page: later commits are caught up.
          const current = new Map(page.sessions.map((row) => [row.id, row]))
          for (const [id, build] of building) {
            const row = current.get(id)
            if (!row || row.source !== build.index.source) building.delete(id)
            else {
              build.index.headSeq = row.headSeq
              build.index.rev = row.rev
            }
          }
        }
        touched = new Set()
        for (const row of page.rows) {
          const build = building.get(row.sessionId)
          if (build === undefined) continue
          applyRow(build.index, row)
          build.rows++
          total++
          touched.add(row.sessionId)
        }
        return true
      },
      () => {
        for (const id of touched) emit('indexing', id, building.get(id)!.rows, since)
      },
    )
    for (const [id, build] of building) {
      build.index.postings.markAllDirty()
      // The read's phases shared out by rows, so summing sessions' events gives the read's.
      const share = total === 0 ? 0 : build.rows / total
      emit('rebuilt', id, build.rows, since, {
        readMs: phases.readMs * share,
        indexMs: phases.indexMs * share,
        read: 'table',
      })
      keep(build.index, build.epoch)
    }
  }

  /** Makes `index` the session's loaded index and schedules its write, unless it was forgotten meanwhile. */
  function keep(index: SessionIndex, epoch: number): SessionIndex {
    if ((epochs.get(index.sessionId) ?? 0) !== epoch || closed) return index
    loaded.set(index.sessionId, index)
    if (index.metaDirty || index.postings.isDirty) schedulePersist(index.sessionId)
    return index
  }

  function sync(row: SessionRow): Promise<SessionIndex> {
    const running = syncing.get(row.id)
    // One sync per session at a time; a sync that ends behind `row` is followed by another.
    const next = (running ?? Promise.resolve(undefined)).then(() => syncSession(row))
    const settled = next.finally(() => {
      if (syncing.get(row.id) === settled) syncing.delete(row.id)
    })
    syncing.set(row.id, settled)
    return settled
  }

  // --- following commits of sessions whose index is not loaded --------------------------------

  function follow(sessionId: string): void {
    if (stopping) return
    following.add(sessionId)
    if (followTimer !== undefined) return
    followTimer = setTimeout(() => {
      followTimer = undefined
      following$ = following$.then(syncFollowed)
    }, FOLLOW_DELAY)
  }

  async function syncFollowed(): Promise<void> {
    const ids = [...following]
    following.clear()
    for (const id of ids) {
      if (stopping) return
      const row = await sessionRow(db, id).catch(() => undefined)
      // Derived data: a failed sync is retried by the next search or commit.
      if (row) await sync(row).catch(() => undefined)
    }
  }

  // --- persisting ----------------------------------------------------------------------------

  /**
   * Writes after `persistDelay` without changes, or at the latest PERSIST_MAX_DELAYS delays
   * after the first unsaved change: a burst of commits (a seed, an agent's busy turn) is
   * written once, not once a second while it lasts.
   */
  function schedulePersist(sessionId: string): void {
    unsaved.add(sessionId)
    if (closed) return
    const now = performance.now()
    firstUnsavedAt ??= now
    if (timer !== undefined) {
      if (now - firstUnsavedAt >= persistDelay * PERSIST_MAX_DELAYS) return
      clearTimeout(timer)
    }
    timer = setTimeout(() => {
      timer = undefined
      void flush()
    }, persistDelay)
  }

  async function persist(index: SessionIndex): Promise<void> {
    const since = performance.now()
    // What the stored segments are synced to is taken first: rows indexed while they are being
    // stored are either in them or newer than this head (and caught up on load).
    const meta: Meta = {
      headSeq: index.headSeq,
      rev: index.rev,
      source: index.source,
      open: [...index.open],
      segments: index.postings.segmentCount,
    }
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
    emit('persisted', index.sessionId, index.postings.size, since)
  }

  /** Writes every index changed since its last write. */
  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    firstUnsavedAt = undefined
    saving = saving.then(async () => {
      const ids = [...unsaved]
      unsaved.clear()
      for (const id of ids) {
        const index = loaded.get(id)
        // The index is derived data: a failed write leaves the last one, which is caught up on load.
        if (index) await persist(index).catch(() => undefined)
      }
    })
    return saving
  }

  // --- the public side -----------------------------------------------------------------------

  async function search(query: unknown, request: unknown = {}): Promise<SearchHit[]> {
    searching++
    try {
      return await runSearch(query, request)
    } finally {
      if (--searching === 0) {
        const waiters = idleWaiters
        idleWaiters = []
        for (const wake of waiters) wake()
      }
    }
  }

  async function runSearch(query: unknown, request: unknown): Promise<SearchHit[]> {
    const text = parseOrThrow(SearchQuery, query, 'search query')
    const { sessionId, limit, includeInactive } = parseOrThrow(SearchOptions, request, 'search options')
    const words = compileQuery(text)
    if (words.length === 0) return []
    const rows = await sessionRowsFor(db, sessionId)
    if (sessionId === undefined) dropMissing(new Set(rows.map((r) => r.id)))
    await buildTogether(rows)
    const indexes = await mapConcurrently(rows, syncConcurrency, sync)
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
    for (const id of loaded.keys()) if (!existing.has(id)) void forget(id)
  }

  /**
   * A commit's rows: a loaded index synced through `fromHead` takes them and moves to `toHead`;
   * any other (not loaded, being synced, behind) is synced in the background shortly after.
   */
  function onRows(
    sessionId: string,
    rows: readonly SessionMessage[],
    fromHead: number,
    toHead: number,
  ): void {
    if (closed) return
    const index = loaded.get(sessionId)
    if (!index || syncing.has(sessionId) || index.source !== 'native' || index.headSeq !== fromHead) {
      follow(sessionId)
      return
    }
    if (rows.length > 0) apply(index, rows)
    index.headSeq = toHead
    index.metaDirty = true
    schedulePersist(sessionId)
  }

  /** A session was deleted or replaced (re-import): its index goes, memory and storage. */
  async function forget(sessionId: string): Promise<void> {
    epochs.set(sessionId, (epochs.get(sessionId) ?? 0) + 1)
    loaded.delete(sessionId)
    unsaved.delete(sessionId)
    await saving
    await deleteSearchParts(db, sessionId)
  }

  /**
   * Syncs a session's index in the background soon (an import or re-import replaced its rows),
   * so the next search finds it built.
   */
  function refresh(sessionId: string): void {
    follow(sessionId)
  }

  async function close(): Promise<void> {
    if (followTimer !== undefined) clearTimeout(followTimer)
    followTimer = undefined
    following.clear()
    stopping = true
    await following$
    await Promise.all([...syncing.values()].map((s) => s.catch(() => undefined)))
    await flush()
    closed = true
  }

  return { search, onRows, forget, refresh, flush, close }
}
