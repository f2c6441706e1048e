import { firstAtLeast } from '../core/sorted'
import type { TurnOutlineEntry } from '../schema/session'

/** A mark of the turn rail: `loaded` points at a rendered row, `unloaded` at a seq to `jumpTo`. */
export type RailItem =
  | { kind: 'loaded'; turn: number; key: string; seq: number; prompt: string; response: string }
  | { kind: 'unloaded'; turn: number; seq: number; prompt: string; response: string }

/**
 * A turn that has rows in the loaded window: `key` is the row to scroll to (its first loaded
 * row), `seq` that row's seq, and the previews come from the rows through the same clamps the
 * outline uses.
 */
export interface LoadedTurn {
  turn: number
  key: string
  seq: number
  prompt: string
  response: string
}

type UnloadedItem = Extract<RailItem, { kind: 'unloaded' }>
type LoadedItem = Extract<RailItem, { kind: 'loaded' }>

/** The one empty rail, so "nothing to show" never looks like a change. */
export const EMPTY_RAIL: readonly RailItem[] = Object.freeze([])

const isPositiveInt = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n > 0

function isSoundEntry(entry: unknown): entry is TurnOutlineEntry {
  if (typeof entry !== 'object' || entry === null) return false
  const e = entry as Partial<Record<keyof TurnOutlineEntry, unknown>>
  return (
    isPositiveInt(e.turn) &&
    isPositiveInt(e.seq) &&
    typeof e.prompt === 'string' &&
    typeof e.response === 'string'
  )
}

function isSoundLoaded(turn: unknown): turn is LoadedTurn {
  if (typeof turn !== 'object' || turn === null) return false
  const t = turn as Partial<Record<keyof LoadedTurn, unknown>>
  return isPositiveInt(t.turn) && typeof t.key === 'string' && typeof t.seq === 'number'
}

const byTurn = (a: { turn: number }, b: { turn: number }) => a.turn - b.turn

/** Keeps sound entries, one per turn (the first seen), ascending by turn. */
function soundByTurn<T extends { turn: number }>(
  items: readonly unknown[],
  sound: (x: unknown) => x is T,
): T[] {
  let out: T[] = []
  let sorted = true
  for (const item of items) {
    if (!sound(item)) continue
    const last = out[out.length - 1]
    if (last !== undefined && item.turn <= last.turn) sorted = false
    out.push(item)
  }
  if (!sorted) {
    out = out.slice().sort(byTurn) // stable: the first of equal turns stays first
    out = out.filter((item, i) => i === 0 || item.turn !== out[i - 1]!.turn)
  }
  return out
}

const sameUnloaded = (item: UnloadedItem, entry: TurnOutlineEntry) =>
  item.turn === entry.turn &&
  item.seq === entry.seq &&
  item.prompt === entry.prompt &&
  item.response === entry.response

/**
 * The outline as unloaded rail marks. `previous` lends its items to entries that did not change,
 * so an outline pushed again (a new array over the wire) keeps the identity of every old mark.
 */
function unloadedItems(
  outline: readonly unknown[],
  previous: readonly UnloadedItem[] = [],
): readonly UnloadedItem[] {
  const entries = soundByTurn(outline, isSoundEntry)
  if (entries.length === 0) return EMPTY_RAIL as readonly UnloadedItem[]
  let reused = 0
  const items = entries.map((entry, i) => {
    const old = previous[i]
    if (old !== undefined && sameUnloaded(old, entry)) {
      reused++
      return old
    }
    return Object.freeze({
      kind: 'unloaded' as const,
      turn: entry.turn,
      seq: entry.seq,
      prompt: entry.prompt,
      response: entry.response,
    })
  })
  return reused === items.length && items.length === previous.length ? previous : Object.freeze(items)
}

/** Index of the mark of `turn` in `items` (ascending by turn), or -1. */
function indexOfTurn(items: readonly { turn: number }[], turn: number): number {
  const at = firstAtLeast(items, (item) => item.turn, turn)
  return items[at]?.turn === turn ? at : -1
}

function loadedItem(
  turn: LoadedTurn,
  mark: UnloadedItem | undefined,
  previous: LoadedItem | undefined,
): LoadedItem {
  const prompt = turn.prompt !== '' ? turn.prompt : (mark?.prompt ?? '')
  const response = turn.response !== '' ? turn.response : (mark?.response ?? '')
  // The outline's seq is the turn's start, the same anchor the mark had before the rows loaded.
  const seq = mark?.seq ?? turn.seq
  if (
    previous !== undefined &&
    previous.turn === turn.turn &&
    previous.key === turn.key &&
    previous.seq === seq &&
    previous.prompt === prompt &&
    previous.response === response
  ) {
    return previous
  }
  return Object.freeze({ kind: 'loaded' as const, turn: turn.turn, key: turn.key, seq, prompt, response })
}

interface Placed {
  at: number
  item: LoadedItem
}

/** Each loaded turn as a rail item, with the index of the outline mark it replaces (-1: none). */
function placeLoaded(
  loaded: readonly LoadedTurn[],
  marks: readonly UnloadedItem[],
  previous: ReadonlyMap<number, LoadedItem>,
): Placed[] {
  return loaded.map((turn) => {
    const at = indexOfTurn(marks, turn.turn)
    return { at, item: loadedItem(turn, at >= 0 ? marks[at] : undefined, previous.get(turn.turn)) }
  })
}

function merge(placed: readonly Placed[], marks: readonly UnloadedItem[]): readonly RailItem[] {
  if (placed.length === 0) return marks.length === 0 ? EMPTY_RAIL : marks
  // Loaded turns are few (one window) and marks many (the whole session): patch a copy of the
  // marks, and fall back to a sorted merge only for loaded turns the outline lacks.
  const items: RailItem[] = [...marks] // spread: V8 copies a frozen array slowly with slice()
  const extra: LoadedItem[] = []
  for (const { at, item } of placed) {
    if (at >= 0) items[at] = item
    else extra.push(item)
  }
  if (extra.length === 0) return Object.freeze(items)
  const merged: RailItem[] = []
  let i = 0
  let j = 0
  while (i < items.length || j < extra.length) {
    if (j >= extra.length || (i < items.length && items[i]!.turn < extra[j]!.turn)) merged.push(items[i++]!)
    else merged.push(extra[j++]!)
  }
  return Object.freeze(merged)
}

const marksByOutline = new WeakMap<readonly unknown[], readonly UnloadedItem[]>()

/**
 * The turn rail: every outline entry becomes an `unloaded(seq)` mark, and each turn with rows
 * in the window overrides its mark as `loaded(key)`, keeping the outline's preview where its own
 * is empty (a window that starts mid-turn has no prompt row). Damaged outline entries
 * (non-positive or fractional turn or seq, previews that are not strings) are dropped; the result
 * is sorted by turn and frozen; an empty rail is always the same array (`EMPTY_RAIL`).
 *
 * @example
 *   mergeTurnRailItems([{ turn: 2, key: 'in-7', seq: 8, prompt: 'fix it', response: '' }], outline)
 *   // [{kind:'unloaded', turn:1, seq:1, …}, {kind:'loaded', turn:2, key:'in-7', seq:7, prompt:'fix it', response:'done'}]
 */
export function mergeTurnRailItems(
  loadedTurns: readonly LoadedTurn[],
  outline: readonly TurnOutlineEntry[],
): readonly RailItem[] {
  let marks = marksByOutline.get(outline)
  if (marks === undefined) {
    marks = unloadedItems(outline)
    marksByOutline.set(outline, marks)
  }
  return merge(placeLoaded(soundByTurn(loadedTurns, isSoundLoaded), marks, new Map()), marks)
}

/**
 * `mergeTurnRailItems` with memory, for a view that re-merges on every change: the marks are
 * rebuilt only when the outline changes (reusing unchanged marks), loaded items keep their
 * identity while their words do not change, and a call that changes no item returns the previous
 * array. A streamed delta re-places only the loaded turns after the last one it kept: with the
 * outline unchanged and the loaded turns clean (sound, ascending, each with a mark), the turns
 * before the first one that changed keep their places, and the rail is the last one with that
 * suffix patched. The work per delta is then a copy of the rail, not a walk of every loaded turn
 * and mark (6 ms a frame with 10,000 rows loaded, before).
 */
export function createTurnRail(): (
  loadedTurns: readonly LoadedTurn[],
  outline: readonly TurnOutlineEntry[],
) => readonly RailItem[] {
  let lastOutline: readonly TurnOutlineEntry[] | undefined
  let lastLoaded: readonly LoadedTurn[] | undefined
  let marks: readonly UnloadedItem[] = EMPTY_RAIL as readonly UnloadedItem[]
  let placed: readonly Placed[] = []
  let byTurn = new Map<number, LoadedItem>()
  let result: readonly RailItem[] = EMPTY_RAIL
  /** `placed` is `lastLoaded` one to one (nothing dropped or reordered) and every item has a mark. */
  let clean = false

  /** The rail with the loaded turns from `kept` on placed anew, or undefined when that cannot be done in place. */
  function patched(loadedTurns: readonly LoadedTurn[], kept: number): readonly RailItem[] | undefined {
    let previousTurn = kept > 0 ? loadedTurns[kept - 1]!.turn : 0
    const fresh: Placed[] = []
    for (let i = kept; i < loadedTurns.length; i++) {
      const turn = loadedTurns[i]!
      if (!isSoundLoaded(turn) || turn.turn <= previousTurn) return undefined
      previousTurn = turn.turn
      const at = indexOfTurn(marks, turn.turn)
      if (at < 0) return undefined
      fresh.push({ at, item: loadedItem(turn, marks[at], byTurn.get(turn.turn)) })
    }
    const old = placed.slice(kept)
    if (samePlacement(fresh, old)) return result
    const items: RailItem[] = [...result]
    for (const { at, item } of old) {
      items[at] = marks[at]!
      byTurn.delete(item.turn)
    }
    for (const { at, item } of fresh) {
      items[at] = item
      byTurn.set(item.turn, item)
    }
    placed = [...placed.slice(0, kept), ...fresh]
    return Object.freeze(items)
  }

  return (loadedTurns, outline) => {
    if (outline === lastOutline && loadedTurns === lastLoaded) return result
    if (outline === lastOutline && clean && lastLoaded !== undefined) {
      let kept = 0
      const shorter = Math.min(loadedTurns.length, lastLoaded.length)
      while (kept < shorter && loadedTurns[kept] === lastLoaded[kept]) kept++
      const next = patched(loadedTurns, kept)
      if (next !== undefined) {
        lastLoaded = loadedTurns
        result = next
        return result
      }
    }
    const nextMarks = outline === lastOutline ? marks : unloadedItems(outline, marks)
    const sound = soundByTurn(loadedTurns, isSoundLoaded)
    const nextPlaced = placeLoaded(sound, nextMarks, byTurn)
    lastOutline = outline
    lastLoaded = loadedTurns
    clean = sound.length === loadedTurns.length && sound.every((t, i) => t === loadedTurns[i])
    clean &&= nextPlaced.every(({ at }) => at >= 0)
    if (nextMarks === marks && samePlacement(nextPlaced, placed)) return result
    marks = nextMarks
    placed = nextPlaced
    byTurn = new Map(nextPlaced.map(({ item }) => [item.turn, item]))
    result = merge(nextPlaced, marks)
    return result
  }
}

function samePlacement(a: readonly Placed[], b: readonly Placed[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i]!.item !== b[i]!.item || a[i]!.at !== b[i]!.at) return false
  return true
}
