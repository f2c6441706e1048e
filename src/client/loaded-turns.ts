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

/**
 * A deriver with memory: a turn whose rows are the same objects as last time keeps its
 * `LoadedTurn` (no clamping again), and the same turns give back the same array. Rows outside
 * any turn (`turn` 0) have no rail mark.
 */
export function createLoadedTurns(): (
  rows: readonly MessageRow[],
  hasOlder: boolean,
) => readonly LoadedTurn[] {
  let cache = new Map<number, Cached>()
  let last: readonly LoadedTurn[] = NO_TURNS
  let lastRows: readonly MessageRow[] | undefined
  let lastHasOlder = false
  return (rows, hasOlder) => {
    if (rows === lastRows && hasOlder === lastHasOlder) return last
    lastRows = rows
    lastHasOlder = hasOlder
    const next = new Map<number, Cached>()
    const turns: LoadedTurn[] = []
    let start = 0
    while (start < rows.length) {
      const turn = rows[start]!.message.turn
      let end = start + 1
      while (end < rows.length && rows[end]!.message.turn === turn) end++
      if (turn > 0) {
        const complete = start > 0 || !hasOlder
        const group = rows.slice(start, end)
        const cached = cache.get(turn)
        const same =
          cached !== undefined &&
          cached.complete === complete &&
          cached.rows.length === group.length &&
          cached.rows.every((row, i) => row === group[i])
        const entry = same ? cached : { rows: group, complete, turn: turnFrom(group, complete) }
        next.set(turn, entry)
        turns.push(entry.turn)
      }
      start = end
    }
    cache = next
    const unchanged = turns.length === last.length && turns.every((t, i) => t === last[i])
    if (!unchanged) last = turns.length === 0 ? NO_TURNS : Object.freeze(turns)
    return last
  }
}
