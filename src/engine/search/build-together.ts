/**
 * Building several sessions' indexes from one read of the rows table in key order: what a first
 * search does when most of the data needs building (a format change, a lost index), instead of
 * reading session by session (docs/decisions/0015). The registry decides when, and keeps what
 * this answers.
 */
import type { SessionlineDb, SessionRow } from '../../store/db'
import { rowsInKeyOrder } from '../../store/search'
import { pipelined } from './paging'
import type { Vocabulary } from './postings'
import type { IndexEmit } from './registry'
import { applyRow, emptyIndex, type SessionIndex } from './session-index'

/** What a build from the table reads with and tells. */
export interface TableBuildOptions {
  db: SessionlineDb
  vocabulary: Vocabulary
  /** Rows to read in the next page (asked before each read). */
  pageSize: () => number
  /** Whether the next page may be read while this one is indexed. */
  readAhead: () => boolean
  now: () => number
  emit: IndexEmit
  /** The session's epoch now: a forget after it makes the build's index not kept. */
  epochOf: (sessionId: string) => number
}

/**
 * The indexes of the `stale` sessions that still exist (with the source they had), synced to the
 * session rows read with the first page, each with the epoch it was started under.
 */
export async function buildFromTable(
  stale: readonly SessionRow[],
  { db, vocabulary, pageSize, readAhead, now, emit, epochOf }: TableBuildOptions,
): Promise<{ index: SessionIndex; epoch: number }[]> {
  const since = now()
  const building = new Map<string, { index: SessionIndex; epoch: number; rows: number }>()
  for (const row of stale) {
    building.set(row.id, { index: emptyIndex(row, vocabulary), epoch: epochOf(row.id), rows: 0 })
  }
  let total = 0
  let touched = new Set<string>()
  const phases = await pipelined(
    rowsInKeyOrder(db, undefined, pageSize(), true),
    (page) =>
      page.nextAfter === undefined ? undefined : rowsInKeyOrder(db, page.nextAfter, pageSize(), false),
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
    now,
    readAhead,
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
  }
  return [...building.values()]
}
