/**
 * The engine's full-text index (docs/decisions/0015): one MiniSearch index per session, cut into
 * segments of at most SEGMENT_DOCS rows so a write rewrites one segment, persisted in the `search`
 * table and checked against the session row before every use:
 *
 * - a native session's index is synced through a head seq; rows that had not settled then (still
 *   streaming, a tool call waiting for its result) are remembered, and catching up re-reads the
 *   rows from the oldest of them on, never the whole session;
 * - an imported session's index is synced to the session row's `rev`: a re-import changes it,
 *   and the index is rebuilt from the new rows;
 * - an index stored under another INDEX_VERSION is rebuilt; a deleted session's parts are dropped.
 *
 * Commits hand their rows over (`onRows`) so a loaded index follows the log as rows settle;
 * indexes not loaded catch up at the next search. Persisting is deferred (PERSIST_DELAY) and
 * batched; whatever was stored last is a consistent earlier state, so a reload catches up from
 * it instead of rebuilding.
 */
import MiniSearch, { type Options, type SearchResult } from 'minisearch'
import { parseOrThrow } from '../../schema/errors'
import type { SessionMessage } from '../../schema/messages'
import { type SearchHit, SearchOptions, SearchQuery } from '../../schema/search'
import type { SearchPartRow, SessionlineDb, SessionRow } from '../../store/db'
import {
  deleteSearchParts,
  readSearchParts,
  rowsById,
  rowsToIndex,
  sessionRowsFor,
  writeSearchParts,
} from '../../store/search'
import { documentOf, FIELD_BOOST, isSettled, SEARCH_FIELDS, type SearchDocument } from './documents'
import { snippetOf } from './snippet'
import { indexTerms, queryTerms } from './terms'

/** Bumped whenever the tokenizer, the fields or the stored layout change: old indexes are rebuilt. */
export const INDEX_VERSION = 1
/** Rows per index segment. */
export const SEGMENT_DOCS = 4000
/** How long after a change an index is written (changes meanwhile join the same write). */
export const PERSIST_DELAY = 1000

/** What happened to one session's index; diagnostics and benchmarks watch these. */
export interface SearchIndexEvent {
  kind: 'loaded' | 'caught-up' | 'rebuilt' | 'persisted'
  sessionId: string
  /** Rows read and indexed (loaded: rows the stored index holds). */
  rows: number
  ms: number
}

const STORED_FIELDS = ['sessionId', 'seq', 'turn', 'role', 'visibility'] as const
const identity = (term: string) => term

const CJK_START = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

const MINI_OPTIONS: Options<SearchDocument> = {
  fields: [...SEARCH_FIELDS],
  storeFields: [...STORED_FIELDS],
  tokenize: (text: string) => indexTerms(text),
  // Terms arrive folded from our tokenizer.
  processTerm: identity,
  autoVacuum: false,
  searchOptions: { tokenize: (query: string) => queryTerms(query), processTerm: identity },
}

interface Segment {
  mini: MiniSearch<SearchDocument>
  ids: Set<string>
}

interface SessionIndex {
  sessionId: string
  source: SessionRow['source']
  /** Native: the head seq the index is synced through. */
  headSeq: number
  /** Imported: the session row's rev the index was built from. */
  rev: number
  segments: Segment[]
  /** Segment of each indexed row. */
  where: Map<string, number>
  /** Rows seen but not settled yet, by id → seq. */
  open: Map<string, number>
  dirty: Set<number>
  /** The segment list or the meta changed since the last write. */
  metaDirty: boolean
}

interface Meta {
  headSeq: number
  rev: number
  source: SessionRow['source']
  open: [string, number][]
  segments: number
}

interface StoredSegment {
  ids: string[]
  index: string
}

export interface SearchIndexOptions {
  db: SessionlineDb
  onEvent?: (event: SearchIndexEvent) => void
  /** Persisting is deferred by this many ms (tests pass 0). */
  persistDelay?: number
}

export type SearchIndex = ReturnType<typeof createSearchIndex>

const newSegment = (): Segment => ({ mini: new MiniSearch<SearchDocument>(MINI_OPTIONS), ids: new Set() })

function emptyIndex(row: SessionRow): SessionIndex {
  return {
    sessionId: row.id,
    source: row.source,
    headSeq: 0,
    rev: 0,
    segments: [],
    where: new Map(),
    open: new Map(),
    dirty: new Set(),
    metaDirty: true,
  }
}

const isSynced = (index: SessionIndex, row: SessionRow) =>
  index.source === row.source &&
  (row.source === 'native' ? index.headSeq === row.headSeq : index.rev === row.rev)

export function createSearchIndex(options: SearchIndexOptions) {
  const { db, onEvent } = options
  const persistDelay = options.persistDelay ?? PERSIST_DELAY
  const loaded = new Map<string, SessionIndex>()
  const syncing = new Map<string, Promise<SessionIndex>>()
  /** Bumped by `forget`: a sync that started before must not bring the old index back. */
  const epochs = new Map<string, number>()
  const unsaved = new Set<string>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let saving: Promise<void> = Promise.resolve()
  let closed = false
  /** Searches running now; a write of the index waits between segments until there are none. */
  let searching = 0
  let idleWaiters: (() => void)[] = []
  const searchesDone = () =>
    searching === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))

  const emit = (kind: SearchIndexEvent['kind'], sessionId: string, rows: number, since: number) =>
    onEvent?.({ kind, sessionId, rows, ms: performance.now() - since })

  // --- keeping an index current -------------------------------------------------------------

  /** Indexes settled rows (replacing older versions), remembers unsettled ones, drops hidden ones. */
  function apply(index: SessionIndex, rows: readonly SessionMessage[]): void {
    for (const row of rows) {
      const at = index.where.get(row.id)
      const settled = isSettled(row)
      if (settled) index.open.delete(row.id)
      else index.open.set(row.id, row.seq)
      if (!settled || row.visibility === 'hidden') {
        if (at !== undefined) {
          const segment = index.segments[at]!
          segment.mini.discard(row.id)
          segment.ids.delete(row.id)
          index.where.delete(row.id)
          index.dirty.add(at)
        }
        continue
      }
      const doc = documentOf(row)
      if (at !== undefined) {
        index.segments[at]!.mini.replace(doc)
        index.dirty.add(at)
        continue
      }
      let last = index.segments.length - 1
      if (last < 0 || index.segments[last]!.ids.size >= SEGMENT_DOCS) {
        index.segments.push(newSegment())
        last++
        index.metaDirty = true
      }
      const segment = index.segments[last]!
      segment.mini.add(doc)
      segment.ids.add(row.id)
      index.where.set(row.id, last)
      index.dirty.add(last)
    }
    index.metaDirty = true
  }

  /** First seq a catch-up must re-read: the oldest unsettled row, else the first after the head. */
  function catchUpFrom(index: SessionIndex): number {
    let from = index.headSeq + 1
    for (const seq of index.open.values()) from = Math.min(from, seq)
    return from
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
      const stored = part.data as StoredSegment
      const mini = MiniSearch.loadJSON<SearchDocument>(stored.index, MINI_OPTIONS)
      index.segments.push({ mini, ids: new Set(stored.ids) })
      for (const id of stored.ids) index.where.set(id, i)
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
      if (index) emit('loaded', sessionId, index.where.size, since)
      if (index && isSynced(index, row)) return keep(index, epoch)
    }
    const since = performance.now()
    if (index && row.source === 'native' && index.headSeq < row.headSeq) {
      const { row: current, rows } = await rowsToIndex(db, sessionId, catchUpFrom(index))
      if (current) {
        apply(index, rows)
        index.headSeq = current.headSeq
        index.rev = current.rev
        emit('caught-up', sessionId, rows.length, since)
        return keep(index, epoch)
      }
    }
    const { row: current, rows } = await rowsToIndex(db, sessionId, 1)
    const rebuilt = emptyIndex(current ?? row)
    apply(rebuilt, rows)
    rebuilt.headSeq = current?.headSeq ?? row.headSeq
    rebuilt.rev = current?.rev ?? row.rev
    emit('rebuilt', sessionId, rows.length, since)
    return keep(rebuilt, epoch)
  }

  /** Makes `index` the session's loaded index and schedules its write, unless it was forgotten meanwhile. */
  function keep(index: SessionIndex, epoch: number): SessionIndex {
    if ((epochs.get(index.sessionId) ?? 0) !== epoch || closed) return index
    loaded.set(index.sessionId, index)
    if (index.metaDirty || index.dirty.size > 0) schedulePersist(index.sessionId)
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

  // --- persisting ----------------------------------------------------------------------------

  function schedulePersist(sessionId: string): void {
    unsaved.add(sessionId)
    if (timer !== undefined || closed) return
    timer = setTimeout(() => {
      timer = undefined
      void flush()
    }, persistDelay)
  }

  async function persist(index: SessionIndex): Promise<void> {
    const since = performance.now()
    const parts: SearchPartRow[] = []
    for (const at of index.dirty) {
      const segment = index.segments[at]
      if (!segment) continue
      // Serializing a segment blocks the worker for a while: queries go first, whole.
      await new Promise((resolve) => setTimeout(resolve, 0))
      await searchesDone()
      if (segment.mini.dirtCount > 0) await segment.mini.vacuum()
      const data: StoredSegment = { ids: [...segment.ids], index: JSON.stringify(segment.mini) }
      parts.push({ sessionId: index.sessionId, part: at + 1, version: INDEX_VERSION, data })
    }
    const meta: Meta = {
      headSeq: index.headSeq,
      rev: index.rev,
      source: index.source,
      open: [...index.open],
      segments: index.segments.length,
    }
    parts.push({ sessionId: index.sessionId, part: 0, version: INDEX_VERSION, data: meta })
    index.dirty.clear()
    index.metaDirty = false
    await writeSearchParts(db, index.sessionId, parts, index.segments.length + 1)
    emit('persisted', index.sessionId, index.where.size, since)
  }

  /** Writes every index changed since its last write. */
  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
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
    if (queryTerms(text).length === 0) return []
    const rows = await sessionRowsFor(db, sessionId)
    if (sessionId === undefined) dropMissing(new Set(rows.map((r) => r.id)))
    const indexes = []
    for (const row of rows) indexes.push(await sync(row))
    const found: SearchResult[] = []
    const searchOptions = {
      // The last word may still be being typed; a lone Latin letter or digit elsewhere would
      // expand to a large part of the vocabulary for nothing.
      prefix: (term: string, i: number, terms: string[]) =>
        i === terms.length - 1 || term.length > 1 || CJK_START.test(term),
      fuzzy: (term: string) => (term.length >= 5 && !CJK_START.test(term) ? 0.2 : false),
      combineWith: 'AND' as const,
      boost: { ...FIELD_BOOST },
      filter: (result: SearchResult) => includeInactive || result.visibility === 'visible',
    }
    for (const index of indexes) {
      for (const segment of index.segments) found.push(...segment.mini.search(text, searchOptions))
    }
    found.sort(
      (a, b) => b.score - a.score || String(a.sessionId).localeCompare(String(b.sessionId)) || a.seq - b.seq,
    )
    const top = found.slice(0, limit)
    const stored = await rowsById(
      db,
      top.map((hit) => String(hit.id)),
    )
    const hits: SearchHit[] = []
    for (const [i, hit] of top.entries()) {
      const row = stored[i]
      // A row deleted since the index was read is no hit.
      if (!row || row.sessionId !== hit.sessionId) continue
      const { snippet, ranges } = snippetOf(row, new Set(hit.terms))
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
   * any other index is left to catch up at the next search.
   */
  function onRows(
    sessionId: string,
    rows: readonly SessionMessage[],
    fromHead: number,
    toHead: number,
  ): void {
    const index = loaded.get(sessionId)
    if (!index || syncing.has(sessionId) || index.source !== 'native' || index.headSeq !== fromHead) return
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

  async function close(): Promise<void> {
    await flush()
    closed = true
  }

  return { search, onRows, forget, flush, close }
}
