import type { OutlineSlice, TurnOutlineEntry } from '../../src/schema/session'

/**
 * A whole outline with a change's slice merged in, as a page holding every entry merges it: the
 * entries before `slice.start` stay, the slice replaces everything from there on. Undefined when
 * the slice starts past the entries held (the reader must read the ones between).
 */
export function withSlice(
  entries: readonly TurnOutlineEntry[],
  slice: OutlineSlice,
): TurnOutlineEntry[] | undefined {
  if (slice.start > entries.length) return undefined
  if (slice.start + slice.entries.length !== slice.total)
    throw new Error(
      `a change's slice must reach the end: ${slice.start}+${slice.entries.length} ≠ ${slice.total}`,
    )
  return [...entries.slice(0, slice.start), ...slice.entries]
}

/**
 * A reader's copy of a whole outline kept by merging pushed slices, as a page keeps it: a slice
 * at or below the log head it holds is already in it; one it cannot join (or a reset) makes it
 * read the outline again, and a read older than what was merged meanwhile is dropped.
 */
export function outlineMirror(read: () => Promise<OutlineSlice>, changed: () => void) {
  let entries: readonly TurnOutlineEntry[] = []
  let headSeq = -1
  function reread(): void {
    void read().then((slice) => {
      if (slice.headSeq < headSeq) {
        reread()
        return
      }
      entries = slice.entries
      headSeq = slice.headSeq
      changed()
    })
  }
  return {
    get entries() {
      return entries
    },
    /** Takes a read of the whole outline unless what was merged is newer. */
    set(slice: OutlineSlice): void {
      if (slice.headSeq < headSeq) return
      entries = slice.entries
      headSeq = slice.headSeq
    },
    push(slice: OutlineSlice | undefined, reset: boolean): void {
      if (reset) {
        reread()
        return
      }
      if (slice === undefined || slice.headSeq <= headSeq) return
      const merged = withSlice(entries, slice)
      if (merged === undefined) {
        reread()
        return
      }
      entries = merged
      headSeq = slice.headSeq
    },
  }
}

/** Ranges a sliced read is checked on: the ends, across a chunk boundary (256), past the end. */
export function outlineRanges(total: number): { start?: number; end?: number }[] {
  const half = total >> 1
  return [
    {},
    { start: 0 },
    { start: 0, end: 1 },
    { start: Math.max(0, total - 1) },
    { start: 250, end: 260 },
    { start: 255, end: 257 },
    { start: half, end: half + 300 },
    { end: half },
    { start: total + 5, end: total + 9 },
  ]
}

/** What a sliced read of `whole` must give (OutlineRequest's clamping, spelled out by hand). */
export function expectedSlice(
  whole: readonly TurnOutlineEntry[],
  request: { start?: number; end?: number },
  headSeq: number,
): OutlineSlice {
  const end = Math.min(request.end ?? whole.length, whole.length)
  const start = Math.min(request.start ?? Math.max(0, end - 200), end)
  return { headSeq, total: whole.length, start, entries: whole.slice(start, end) }
}
