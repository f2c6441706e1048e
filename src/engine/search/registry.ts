/**
 * The loaded search indexes, one per session, and how one gets current: loaded from storage,
 * caught up from its oldest unsettled row, or rebuilt; several together from one read of the rows
 * table when most of the data needs building (docs/decisions/0015). One sync per session runs at
 * a time (`isBusy`); `forget` makes a sync that started before it leave no index behind.
 */
import type { SessionlineDb, SessionRow } from '../../store/db'
import { readSearchParts, rowsToIndex, searchHeads } from '../../store/search'
import type { ReportFailure } from '../background'
import { buildFromTable } from './build-together'
import { pipelined } from './paging'
import type { Vocabulary } from './postings'
import {
  applyRows,
  catchUpFrom,
  decodeStored,
  emptyIndex,
  INDEX_VERSION,
  isSynced,
  type SessionIndex,
} from './session-index'

/** Tells what happened to one session's index (the facade turns it into a `SearchIndexEvent`). */
export type IndexEmit = (
  kind: 'loaded' | 'caught-up' | 'rebuilt' | 'indexing',
  sessionId: string,
  rows: number,
  since: number,
  phases?: { readMs: number; indexMs: number; read?: 'session' | 'table' },
) => void

/** What the registry reads from and tells. */
export interface IndexRegistryOptions {
  db: SessionlineDb
  vocabulary: Vocabulary
  /** Rows to read in the next page of a build or catch-up (asked before each read). */
  pageSize: () => number
  /** Whether a build may read its next page while it indexes this one (not while the engine writes). */
  readAhead: () => boolean
  /** Share of all sessions' events the stale ones must hold to be built together. */
  buildTogetherShare: number
  now: () => number
  emit: IndexEmit
  /** An index became the loaded one with changes not yet written. */
  onChanged: (sessionId: string) => void
  /** Once true, no index is kept any more (the search index closed). */
  isClosed: () => boolean
  report: ReportFailure
}

/** The loaded indexes and their syncs. */
export interface IndexRegistry {
  /** The session's loaded index, if any (it may be behind the session). */
  loaded(sessionId: string): SessionIndex | undefined
  /** Whether a sync of the session is running (a commit's rows must then wait for it). */
  isBusy(sessionId: string): boolean
  /** The session's index synced with `row`, after any sync of it already running. */
  sync(row: SessionRow): Promise<SessionIndex>
  /** Builds the stale indexes among `rows` together when that pays (see `buildTogether`). */
  buildTogether(rows: readonly SessionRow[]): Promise<void>
  /** Drops the session's loaded index; a sync running for it keeps nothing. */
  forget(sessionId: string): void
  loadedIds(): string[]
  /** Waits for every running sync (their callers hear their failures). */
  settle(): Promise<void>
}

/** An empty registry: indexes load on their first sync. */
export function createIndexRegistry(options: IndexRegistryOptions): IndexRegistry {
  const { db, vocabulary, pageSize, readAhead, buildTogetherShare, now, emit, onChanged, isClosed, report } =
    options
  const loaded = new Map<string, SessionIndex>()
  const syncing = new Map<string, Promise<SessionIndex>>()
  /** Bumped by `forget`: a sync that started before must not bring the old index back. */
  const epochs = new Map<string, number>()
  const epochOf = (sessionId: string) => epochs.get(sessionId) ?? 0

  /** Makes `index` the session's loaded index and says it changed, unless it was forgotten meanwhile. */
  function keep(index: SessionIndex, epoch: number): SessionIndex {
    if (epochOf(index.sessionId) !== epoch || isClosed()) return index
    loaded.set(index.sessionId, index)
    if (index.metaDirty || index.postings.isDirty) onChanged(index.sessionId)
    return index
  }

  /** While `settled` runs it is the session's sync; it stops being so when it ends. */
  function markBusy(sessionId: string, settled: Promise<SessionIndex>): Promise<SessionIndex> {
    const done = settled.finally(() => {
      if (syncing.get(sessionId) === done) syncing.delete(sessionId)
    })
    syncing.set(sessionId, done)
    return done
  }

  /**
   * Reads and indexes the session's rows from `fromSeq` on, a page at a time, yielding between
   * pages. Answers the session row as it was when the first page was read (rows written later
   * and read anyway are indexed again at the next catch-up), undefined if the session is gone.
   */
  async function indexFrom(index: SessionIndex, fromSeq: number, since: number) {
    let first: SessionRow | undefined
    let rows = 0
    const read = (from: number) => rowsToIndex(db, index.sessionId, from, pageSize())
    const phases = await pipelined(
      read(fromSeq),
      (page) => (!page.row || page.nextSeq === undefined ? undefined : read(page.nextSeq)),
      (page) => {
        if (!page.row) {
          first = undefined
          return false
        }
        first ??= page.row
        applyRows(index, page.rows)
        rows += page.rows.length
        return true
      },
      (phases) => emit('indexing', index.sessionId, rows, since, phases),
      now,
      readAhead,
    )
    return { row: first, rows, phases }
  }

  /** The stored index if it is of this version and shape. */
  async function loadStored(row: SessionRow): Promise<SessionIndex | undefined> {
    const since = now()
    const index = decodeStored(await readSearchParts(db, row.id), row, vocabulary)
    if (index) emit('loaded', row.id, index.postings.size, since)
    return index
  }

  async function syncSession(row: SessionRow): Promise<SessionIndex> {
    const sessionId = row.id
    const epoch = epochOf(sessionId)
    let index = loaded.get(sessionId)
    if (index && isSynced(index, row)) return index
    if (!index) {
      index = await loadStored(row)
      if (index && isSynced(index, row)) return keep(index, epoch)
    }
    const since = now()
    if (index && row.source === 'native' && index.headSeq < row.headSeq) {
      const { row: current, rows, phases } = await indexFrom(index, catchUpFrom(index), since)
      if (current) {
        index.headSeq = current.headSeq
        index.rev = current.rev
        emit('caught-up', sessionId, rows, since, phases)
        return keep(index, epoch)
      }
    }
    const rebuilt = emptyIndex(row, vocabulary)
    const { row: current, rows, phases } = await indexFrom(rebuilt, 1, since)
    rebuilt.headSeq = current?.headSeq ?? row.headSeq
    rebuilt.rev = current?.rev ?? row.rev
    rebuilt.postings.markAllDirty()
    emit('rebuilt', sessionId, rows, since, { ...phases, read: 'session' })
    return keep(rebuilt, epoch)
  }

  function sync(row: SessionRow): Promise<SessionIndex> {
    // One sync per session at a time; a sync that ends behind `row` is followed by another.
    const running = syncing.get(row.id) ?? Promise.resolve(undefined)
    return markBusy(
      row.id,
      running.then(() => syncSession(row)),
    )
  }

  /**
   * Builds, in one read of the rows table in key order, the indexes of the sessions in `rows`
   * that have neither a loaded index nor a stored one of this version, when they hold at least
   * `buildTogetherShare` of all sessions' events (a first search after a format change or a
   * lost index); otherwise leaves every session to `sync`. The sessions it builds are busy
   * meanwhile, so commits to them are followed up and their syncs wait for it.
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
    // A failed read is told once; each session is then left to its own sync, which follows this one.
    const built = readTogether(stale).catch((error: unknown) =>
      report(error, 'search index: building together'),
    )
    for (const row of stale)
      markBusy(
        row.id,
        built.then(() => loaded.get(row.id) as SessionIndex),
      )
    await built
  }

  /** Builds the `stale` sessions' indexes from one read of the rows table and keeps them. */
  async function readTogether(stale: readonly SessionRow[]): Promise<void> {
    const built = await buildFromTable(stale, { db, vocabulary, pageSize, readAhead, now, emit, epochOf })
    for (const { index, epoch } of built) keep(index, epoch)
  }

  return {
    loaded: (sessionId) => loaded.get(sessionId),
    isBusy: (sessionId) => syncing.has(sessionId),
    sync,
    buildTogether,
    forget(sessionId) {
      epochs.set(sessionId, epochOf(sessionId) + 1)
      loaded.delete(sessionId)
    },
    loadedIds: () => [...loaded.keys()],
    async settle() {
      // Each sync's failure went to whoever awaited it (a search, or the follower, which reports).
      await Promise.all([...syncing.values()].map((s) => s.catch(() => undefined)))
    },
  }
}
