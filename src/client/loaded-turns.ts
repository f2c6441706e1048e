/**
 * The turns that have rows in the loaded window, with previews read from those rows by the same
 * clamps and rules the turn outline folds from the log (first human prompt of the turn; newest
 * assistant text), so a turn shows the same words before and after its rows load.
 */

import { clampPrompt, clampResponse } from '../core/preview'
import type { SessionMessage } from '../schema/messages'
import type { LoadedTurn } from '../view/rail'
import type { MessageRow } from './window'

const NO_TURNS: readonly LoadedTurn[] = Object.freeze([])

const isHumanPrompt = (m: SessionMessage) =>
  m.role === 'user' && m.source !== 'synthetic' && m.isMeta !== true

function textOf(message: SessionMessage): string {
  let text = ''
  for (const part of message.parts) if (part.type === 'text') text += part.text
  return text
}

/**
 * Previews of one turn from its loaded rows. `complete` is false when the window may start after
 * the turn's first row: its first loaded user row may then be a later steer, so the prompt is
 * left empty for the outline to fill.
 */
function turnFrom(rows: readonly MessageRow[], complete: boolean): LoadedTurn {
  const first = rows[0]!
  let prompt = ''
  if (complete) {
    const human = rows.find((row) => isHumanPrompt(row.message))
    if (human !== undefined) prompt = clampPrompt(textOf(human.message))
  }
  let response = ''
  for (let i = rows.length - 1; i >= 0; i--) {
    const message = rows[i]!.message
    if (message.role !== 'assistant') continue
    const text = textOf(message)
    if (text !== '') {
      response = clampResponse(text)
      break
    }
  }
  return Object.freeze({ turn: first.message.turn, key: first.key, seq: first.message.seq, prompt, response })
}

interface Cached {
  rows: readonly MessageRow[]
  complete: boolean
  turn: LoadedTurn
}

/** One run of rows of one turn in the last walk, and the mark it gave (none: turn 0, or a turn marked before). */
interface Group {
  start: number
  end: number
  /** Marks given by the groups before this one. */
  marksBefore: number
  mark?: { turn: number; cached: Cached }
}

/**
 * A deriver with memory: a turn whose rows are the same objects as last time keeps its
 * `LoadedTurn` (no clamping again), and the same turns give back the same array. Rows outside
 * any turn (`turn` 0) have no rail mark. The walk starts again only at the first group of rows
 * that may have changed: groups that end before the first row not identical to last time's keep
 * their marks, so a streamed delta at the window's end costs its own turn, not every turn loaded.
 */
export function createLoadedTurns(): (
  rows: readonly MessageRow[],
  hasOlder: boolean,
  /** Indexes in `rows` where a segment after a gap begins (a sparse window), ascending. */
  breaks?: readonly number[],
) => readonly LoadedTurn[] {
  /** Turns the last walk gave a mark. */
  const marked = new Set<number>()
  let groups: Group[] = []
  let last: readonly LoadedTurn[] = NO_TURNS
  let lastRows: readonly MessageRow[] | undefined
  let lastHasOlder = false
  let lastBreaks = ''
  return (rows, hasOlder, breaks = []) => {
    const breakKey = breaks.join(',')
    if (rows === lastRows && hasOlder === lastHasOlder && breakKey === lastBreaks) return last
    // Groups that end (with the row after them) before the first row that differs are as they were.
    let kept = 0
    if (lastRows !== undefined && hasOlder === lastHasOlder && breakKey === lastBreaks) {
      const shorter = Math.min(rows.length, lastRows.length)
      let same = 0
      while (same < shorter && rows[same] === lastRows[same]) same++
      while (kept < groups.length && groups[kept]!.end < same) kept++
    }
    lastRows = rows
    lastHasOlder = hasOlder
    lastBreaks = breakKey
    const dropped = groups.slice(kept)
    const previous = new Map<number, Cached>()
    for (const group of dropped) {
      if (!group.mark) continue
      previous.set(group.mark.turn, group.mark.cached)
      marked.delete(group.mark.turn)
    }
    const segmentStarts = new Set(breaks)
    const nextGroups = groups.slice(0, kept)
    // A spread, cut to length: V8's slice of a frozen array copies it element by element (0.5 ms at 4,400).
    const turns: LoadedTurn[] = [...last]
    turns.length = kept < groups.length ? groups[kept]!.marksBefore : last.length
    let start = kept > 0 ? groups[kept - 1]!.end : 0
    while (start < rows.length) {
      const turn = rows[start]!.message.turn
      let end = start + 1
      while (end < rows.length && rows[end]!.message.turn === turn && !segmentStarts.has(end)) end++
      const group: Group = { start, end, marksBefore: turns.length }
      // A turn split by a gap keeps the mark of its lower part (its first loaded row).
      if (turn > 0 && !marked.has(turn)) {
        // A segment after a gap may start mid-turn, like a window with older rows unloaded.
        const complete = (start > 0 && !segmentStarts.has(start)) || (start === 0 && !hasOlder)
        const cached = previous.get(turn)
        const same =
          cached !== undefined &&
          cached.complete === complete &&
          cached.rows.length === end - start &&
          cached.rows.every((row, i) => row === rows[start + i])
        let entry: Cached
        if (same) entry = cached
        else {
          const own = rows.slice(start, end)
          entry = { rows: own, complete, turn: turnFrom(own, complete) }
        }
        group.mark = { turn, cached: entry }
        marked.add(turn)
        turns.push(entry.turn)
      }
      nextGroups.push(group)
      start = end
    }
    groups = nextGroups
    const unchanged = turns.length === last.length && turns.every((t, i) => t === last[i])
    if (!unchanged) last = turns.length === 0 ? NO_TURNS : Object.freeze(turns)
    return last
  }
}
