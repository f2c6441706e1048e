/**
 * One session's search index in memory, and how it is stored: which rows it holds, what it is
 * synced through, and the record (`Meta`) written beside its segments. No I/O here; the registry
 * (./registry.ts) reads and syncs indexes, the persister (./persister.ts) writes them.
 */
import type { SessionMessage } from '../../schema/messages'
import type { SearchPartRow, SessionRow } from '../../store/db'
import { isSettled } from './documents'
import { SessionPostings, type StoredSegment, type Vocabulary } from './postings'

/** Bumped whenever the tokenizer, the fields or the stored layout change: old indexes are rebuilt. */
export const INDEX_VERSION = 2

/** A session's index in memory and what it is synced through. */
export interface SessionIndex {
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

/** Part 0 of a stored index: what its segments (parts 1…) are synced to. */
export interface Meta {
  headSeq: number
  rev: number
  source: SessionRow['source']
  open: [string, number][]
  segments: number
}

/** Whether `index` holds what `row` says the session holds. */
export const isSynced = (index: SessionIndex, row: SessionRow) =>
  index.source === row.source &&
  (row.source === 'native' ? index.headSeq === row.headSeq : index.rev === row.rev)

/** An index of no rows, for a build from the first row. */
export const emptyIndex = (row: SessionRow, vocabulary: Vocabulary): SessionIndex => ({
  sessionId: row.id,
  source: row.source,
  headSeq: 0,
  rev: 0,
  postings: new SessionPostings(row.id, vocabulary),
  open: new Map(),
  metaDirty: true,
})

/** Indexes a settled row (replacing an older version), remembers an unsettled one, drops a hidden one. */
export function applyRow(index: SessionIndex, row: SessionMessage): void {
  const settled = isSettled(row)
  if (settled) index.open.delete(row.id)
  else index.open.set(row.id, row.seq)
  if (!settled || row.visibility === 'hidden') index.postings.discard(row.id)
  else index.postings.add(row)
  index.metaDirty = true
}

/** `applyRow` over `rows`, in order. */
export function applyRows(index: SessionIndex, rows: readonly SessionMessage[]): void {
  for (const row of rows) applyRow(index, row)
}

/** First seq a catch-up must re-read: the oldest unsettled row, else the first after the head. */
export function catchUpFrom(index: SessionIndex): number {
  let from = index.headSeq + 1
  for (const seq of index.open.values()) from = Math.min(from, seq)
  return from
}

/** The stored index of `row`'s session, or undefined when it is of another version, source or shape. */
export function decodeStored(
  parts: readonly SearchPartRow[],
  row: SessionRow,
  vocabulary: Vocabulary,
): SessionIndex | undefined {
  const [head, ...rest] = parts
  if (head?.part !== 0 || parts.some((p) => p.version !== INDEX_VERSION)) return undefined
  const meta = head.data as Meta
  if (meta.source !== row.source || rest.length !== meta.segments) return undefined
  const index = emptyIndex(row, vocabulary)
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

/** What the segments stored from now on are synced to (taken before they are). */
export const metaOf = (index: SessionIndex): Meta => ({
  headSeq: index.headSeq,
  rev: index.rev,
  source: index.source,
  open: [...index.open],
  segments: index.postings.segmentCount,
})
