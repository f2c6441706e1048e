/**
 * The turn outline by range (docs/decisions/0022). A cold open keeps only the last two chunks of
 * the outline in memory (what a fold step and the newest slice touch; src/store/projection-state.ts); a range that
 * reaches earlier chunks reads them from the store, and the change feed carries the changed
 * suffix, never the whole outline.
 *
 * @example
 *   const reader = createOutlineReader(db)
 *   await reader.slice(sessionId, snap, 0, 100) // {total, start: 0, entries: the first 100}
 *   outlineChange(base.folds.turnOutline, next.folds.turnOutline) // {total, start, entries} | undefined
 */

import {
  type ChunkedList,
  LIST_CHUNK,
  listItems,
  listRange,
  unloadedChunks,
  withChunks,
} from '../../core/chunked-list'
import { CACHED_FOLDS } from '../../core/folds'
import { replay } from '../../core/projection'
import { type OutlineState, turnOutline } from '../../core/turn-outline'
import type { OutlineSlice, TurnOutlineEntry } from '../../schema/session'
import type { SessionlineDb } from '../../store/db'
import { eventsBetween, inRead, listChunks } from '../../store/transactions'
import { importedFoldStates } from '../importing'
import type { Snapshot } from './entries'
import { REBUILD_BATCH } from './load'

type Entries = ChunkedList<TurnOutlineEntry>

/** Position of the first item that differs between two lists (their common length when none). */
function firstDifference(before: Entries, after: Entries): number {
  const chunks = Math.max(before.chunks.length, after.chunks.length)
  for (let index = 0; index < chunks; index++) {
    const a = before.chunks[index]
    const b = after.chunks[index]
    if (a === b) continue
    const base = index * LIST_CHUNK
    // Only full chunks are ever unloaded, and a full chunk never changes: one that is full on
    // the other side holds the same entries.
    if (a === undefined || b === undefined) {
      if ((a ?? b)!.length === LIST_CHUNK) continue
      return base
    }
    const shared = Math.min(a.length, b.length)
    for (let i = 0; i < shared; i++) if (!Object.is(a[i], b[i])) return base + i
    return base + shared
  }
  return Math.min(before.length, after.length)
}

/** Position from which every chunk of `list` is loaded (the last chunk always is). */
function loadedFrom(list: Entries): number {
  for (let index = list.chunks.length - 1; index >= 0; index--)
    if (list.chunks[index] === undefined) return (index + 1) * LIST_CHUNK
  return 0
}

/**
 * What a commit changed in the outline, as the suffix from the first changed entry, or undefined
 * when nothing did. A fold only changes the outline at its end, so the suffix is short. It starts
 * no earlier than the chunks `after` holds: when the cache was far behind (another tab wrote many
 * turns) it may start past what a reader holds, which then reads the entries in between.
 */
export function outlineChange(
  before: OutlineState | undefined,
  after: OutlineState,
  headSeq: number,
): OutlineSlice | undefined {
  const next = after.entries
  const previous = before?.entries
  if (previous === next) return undefined
  let start = previous === undefined ? 0 : firstDifference(previous, next)
  if (previous !== undefined && start >= next.length && previous.length === next.length) return undefined
  start = Math.min(Math.max(start, loadedFrom(next)), next.length)
  return { headSeq, total: next.length, start, entries: listRange(next, start, next.length) }
}

/** Clamps a requested range to an outline of `total` entries (see OutlineRequest). */
export function outlineRange(
  total: number,
  request: { start?: number; end?: number },
  defaultSlice: number,
): { start: number; end: number } {
  const end = Math.min(request.end ?? total, total)
  const start = Math.min(request.start ?? Math.max(0, end - defaultSlice), end)
  return { start, end }
}

export type OutlineReader = ReturnType<typeof createOutlineReader>

export function createOutlineReader(db: SessionlineDb) {
  /** Whole outlines already read, by the list they were read for (same list, same array). */
  const wholes = new WeakMap<Entries, readonly TurnOutlineEntry[]>()

  /**
   * The outline of `snap` folded again from the log (or, for an imported session, from its
   * rows): the fallback when a stored chunk is missing or another version of the fold wrote it.
   */
  async function refold(sessionId: string, snap: Snapshot): Promise<Entries> {
    if (snap.row.source !== 'native') {
      const rows = await inRead(db, () =>
        db.messages
          .where('[sessionId+seq]')
          .between([sessionId, 0], [sessionId, Number.POSITIVE_INFINITY])
          .toArray(),
      )
      return importedFoldStates(rows).turnOutline.entries
    }
    let state = turnOutline.init()
    let through = 0
    while (through < snap.row.headSeq) {
      const events = await inRead(db, () =>
        eventsBetween(db, sessionId, through, snap.row.headSeq, REBUILD_BATCH),
      )
      if (events.length === 0) break
      state = replay(turnOutline, events, state)
      through = events.at(-1)!.seq
    }
    return state.entries
  }

  /** `snap`'s outline with the chunks holding `start`…`end` loaded. */
  async function loaded(sessionId: string, snap: Snapshot, start: number, end: number): Promise<Entries> {
    const list = snap.folds.turnOutline.entries
    const missing = unloadedChunks(list, start, end)
    if (missing.length === 0) return list
    const read = await inRead(db, () =>
      listChunks(db, sessionId, 'turnOutline', 'entries', CACHED_FOLDS.turnOutline.version, missing),
    )
    const sound = missing.every((index) => read.get(index)?.length === LIST_CHUNK)
    if (!sound) return refold(sessionId, snap)
    return withChunks(list, read as Map<number, TurnOutlineEntry[]>)
  }

  /** Entries `start`…`end` (clamped) of the outline `snap` holds. */
  async function slice(sessionId: string, snap: Snapshot, start: number, end: number): Promise<OutlineSlice> {
    const list = snap.folds.turnOutline.entries
    const from = Math.min(start, list.length)
    const to = Math.min(Math.max(end, from), list.length)
    const full = await loaded(sessionId, snap, from, to)
    return { headSeq: snap.row.headSeq, total: list.length, start: from, entries: listRange(full, from, to) }
  }

  /** The whole outline (every chunk read), the same array for the same list. */
  async function whole(sessionId: string, snap: Snapshot): Promise<readonly TurnOutlineEntry[]> {
    const list = snap.folds.turnOutline.entries
    let items = wholes.get(list)
    if (items === undefined) {
      items = listItems(await loaded(sessionId, snap, 0, list.length))
      wholes.set(list, items)
    }
    return items
  }

  return { slice, whole }
}
