/**
 * Turns a `ViewState` into the `TimelineSnapshot` a page renders, with memory: every part that
 * did not change keeps its identity (rows, gap rows, input rows, loaded turns, rail marks), and a
 * state that shows the same as the last one gives back the last snapshot itself, so the store's
 * identity gate tells listeners only of real changes.
 *
 * @example
 *   const toSnapshot = createSnapshots()
 *   store.set(toSnapshot(state)) // the same object as before when nothing shown changed
 */
import { createTurnRail } from '../view/rail'
import { createLoadedTurns } from './loaded-turns'
import type { GapRow, TimelineInput, TimelineRow, TimelineSnapshot } from './types'
import type { LoadedOutline, ViewState } from './view-state'
import { baseSeqOf, EMPTY_WINDOW, gapsOf, type TranscriptWindow, type WindowGap } from './window'

/** The key of a gap row: the key of the row above it (stable while that row is). */
export const gapKey = (gap: WindowGap, rows: TranscriptWindow['rows']): string =>
  `gap:${rows[gap.before - 1]?.key ?? `from-${gap.fromSeq}`}`

interface Segments {
  window: TranscriptWindow
  /** The window's rows with a gap row between each two segments. */
  rows: readonly TimelineRow[]
  /** Indexes in the window's rows where a segment after a gap begins. */
  breaks: readonly number[]
}

function shallowEqual(a: TimelineSnapshot, b: TimelineSnapshot): boolean {
  const keys = Object.keys(a) as (keyof TimelineSnapshot)[]
  return keys.length === Object.keys(b).length && keys.every((key) => Object.is(a[key], b[key]))
}

/** The window's rows with gap rows between segments; the same array (and gap rows) while the window's rows and ranges are. */
function createSegments(): (window: TranscriptWindow) => Segments {
  let last: Segments = { window: EMPTY_WINDOW, rows: EMPTY_WINDOW.rows, breaks: [] }
  let gapRows = new Map<string, GapRow>()
  return (window) => {
    if (last.window.rows === window.rows && last.window.known === window.known) return last
    if (window.known.length <= 1) {
      gapRows = new Map()
      last = { window, rows: window.rows, breaks: [] }
      return last
    }
    const rows: TimelineRow[] = []
    const nextGaps = new Map<string, GapRow>()
    const gaps = gapsOf(window)
    let i = 0
    for (const gap of gaps) {
      while (i < gap.before) rows.push(window.rows[i++]!)
      const key = gapKey(gap, window.rows)
      const old = gapRows.get(key)
      const row =
        old !== undefined && old.fromSeq === gap.fromSeq && old.toSeq === gap.toSeq
          ? old
          : Object.freeze({ key, kind: 'gap' as const, fromSeq: gap.fromSeq, toSeq: gap.toSeq })
      nextGaps.set(key, row)
      rows.push(row)
    }
    while (i < window.rows.length) rows.push(window.rows[i++]!)
    gapRows = nextGaps
    last = { window, rows: Object.freeze(rows), breaks: gaps.map((g) => g.before) }
    return last
  }
}

/** A snapshot builder with its own memory (one per view). */
export function createSnapshots(): (state: ViewState) => TimelineSnapshot {
  const segmentsOf = createSegments()
  const loadedTurns = createLoadedTurns()
  const turnRail = createTurnRail()
  const inputRows = new WeakMap<TimelineInput, TimelineRow>()
  let lastParts: {
    windowRows: readonly TimelineRow[]
    steers: readonly TimelineInput[]
    rows: readonly TimelineRow[]
  } = { windowRows: EMPTY_WINDOW.rows, steers: [], rows: EMPTY_WINDOW.rows }
  let last: TimelineSnapshot | undefined

  function inputRow(input: TimelineInput): TimelineRow {
    let row = inputRows.get(input)
    if (row === undefined) {
      row = Object.freeze({ key: input.id, kind: 'input' as const, input })
      inputRows.set(input, row)
    }
    return row
  }

  /**
   * The rail over the loaded outline: turns loaded below its first entry wait for the outline to
   * reach them, so mark `i` stays the outline's entry `outlineBefore + i`.
   */
  function rail(segments: Segments, hasOlder: boolean, outline: LoadedOutline) {
    const turns = loadedTurns(segments.window.rows, hasOlder, segments.breaks)
    const first = outline.start > 0 ? outline.all[0]?.turn : undefined
    const covered = first === undefined || (turns[0]?.turn ?? first) >= first
    return turnRail(covered ? turns : turns.filter((t) => t.turn >= first), outline.shown)
  }

  return (state) => {
    const { window, outline } = state
    const { steers, queued } = state.inbox
    const segments = segmentsOf(window)
    let rows = lastParts.rows
    if (lastParts.windowRows !== segments.rows || lastParts.steers !== steers) {
      rows = steers.length === 0 ? segments.rows : Object.freeze([...segments.rows, ...steers.map(inputRow)])
      lastParts = { windowRows: segments.rows, steers, rows }
    }
    const next: TimelineSnapshot = {
      status: state.status,
      rows,
      queued,
      outline: outline.shown,
      outlineBefore: outline.start,
      rail: rail(segments, window.hasOlder, outline),
      baseSeq: baseSeqOf(window),
      headSeq: window.headSeq,
      hasOlder: window.hasOlder,
      loadingOlder: state.busy > 0,
    }
    if (state.error !== undefined) next.error = state.error
    if (state.sync !== undefined) next.sync = state.sync
    if (last === undefined || !shallowEqual(next, last)) last = Object.freeze(next)
    return last
  }
}
