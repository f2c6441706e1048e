/**
 * The loaded window of a transcript: one or more segments of its rows (docs/decisions/0016),
 * ascending by seq, unique by id. Pure functions: each takes a window and returns the same window
 * when nothing changed, so the snapshot built from it stays the same object.
 *
 * The window records which seq ranges it knows (`known`): inside a known range it holds every
 * row of the transcript, kept current by changes; outside, nothing. A page read says which range
 * it covers (every readable row between its bounds), so adding its rows outside what is known,
 * and the range to `known`, keeps every segment contiguous whatever order overlapping pages
 * come back in. The last range is open-ended: the live tail, where new rows arrive. Ranges that
 * meet merge, and with them their segments; the space between two ranges is a gap.
 */

import { firstAtLeast } from '../core/sorted'
import { applyTextAppend } from '../core/text-append'
import { isReadable } from '../core/visibility'
import type { MessagePart, SessionMessage, TextAppend } from '../schema/messages'
import type { MessagePage } from '../schema/requests'
import type { TimelineRow } from './types'

export type MessageRow = Extract<TimelineRow, { kind: 'message' }>

/** Seqs `from` through `to`, inclusive; `to` is Infinity for the live tail. */
export interface SeqRange {
  readonly from: number
  readonly to: number
}

export interface TranscriptWindow {
  readonly rows: readonly MessageRow[]
  /** Disjoint, ascending, never adjacent; the last one is open-ended once the tail loaded. */
  readonly known: readonly SeqRange[]
  /** Readable rows exist below the first known range. */
  readonly hasOlder: boolean
  /** The newest head seq seen (pages and changes). */
  readonly headSeq: number
  /**
   * The head seq the rows are known to be current at: a durable change at or below it is
   * already in the rows (a page read after it), and a live preview below it is stale.
   */
  readonly syncedThrough: number
}

export interface WindowFilter {
  includeInactive: boolean
}

const EVERYTHING: readonly SeqRange[] = Object.freeze([
  Object.freeze({ from: 1, to: Number.POSITIVE_INFINITY }),
])

export const EMPTY_WINDOW: TranscriptWindow = Object.freeze({
  rows: Object.freeze([]) as readonly MessageRow[],
  // Before the first load nothing is below to page in: the window follows the tail.
  known: EVERYTHING,
  hasOlder: false,
  headSeq: 0,
  syncedThrough: 0,
})

/** Seq of the oldest loaded row; 0 when nothing is loaded. */
export const baseSeqOf = (window: TranscriptWindow): number => window.rows[0]?.message.seq ?? 0

/** The window holds what a page read would return. */
const isShown = (message: SessionMessage, filter: WindowFilter): boolean =>
  isReadable(message.visibility, filter.includeInactive)

const rowOf = (message: SessionMessage): MessageRow => ({ key: message.id, kind: 'message', message })

/** Structural equality of plain data (what a stored row holds: no Dates, Maps or class instances). */
function samePlain(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  return keys.every(
    (key) =>
      Object.hasOwn(b, key) &&
      samePlain((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  )
}

/**
 * `next` with every row equal to one `previous` shows kept as that object (and `previous`'s rows
 * array when all are): a read that brings what is shown already (a reload, the worker's read
 * after a first screen read on the page) changes nothing a row's renderer sees.
 */
export function keepEqualRows(previous: TranscriptWindow, next: TranscriptWindow): TranscriptWindow {
  if (previous.rows.length === 0 || next.rows.length === 0) return next
  const shown = new Map(previous.rows.map((row) => [row.key, row]))
  let same = next.rows.length === previous.rows.length
  const rows = next.rows.map((row, i) => {
    const old = shown.get(row.key)
    const kept = old !== undefined && samePlain(old.message, row.message) ? old : row
    if (kept !== previous.rows[i]) same = false
    return kept
  })
  return { ...next, rows: same ? previous.rows : rows }
}

/** The first tail page of a session (or a reload after a reset). */
export function windowFromTail(page: MessagePage, filter: WindowFilter, readFrom?: number): TranscriptWindow {
  const first = page.messages[0]
  // A page of every row from `readFrom` up knows that seq even when no row sits at it.
  const from = page.hasOlder && first ? Math.min(first.seq, readFrom ?? first.seq) : 1
  return {
    rows: page.messages.filter((m) => isShown(m, filter)).map(rowOf),
    known: [{ from, to: Number.POSITIVE_INFINITY }],
    hasOlder: page.hasOlder,
    headSeq: page.headSeq,
    syncedThrough: page.headSeq,
  }
}

/** Index of the known range holding `seq`, or -1. */
export function rangeIndexOf(known: readonly SeqRange[], seq: number): number {
  let lo = 0
  let hi = known.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1
    const range = known[mid]!
    if (seq < range.from) hi = mid - 1
    else if (seq > range.to) lo = mid + 1
    else return mid
  }
  return -1
}

export const isKnown = (window: TranscriptWindow, seq: number): boolean =>
  rangeIndexOf(window.known, seq) >= 0

/** `known` with `range` added; ranges that overlap or meet become one. */
export function unionRanges(known: readonly SeqRange[], range: SeqRange): readonly SeqRange[] {
  const out: SeqRange[] = []
  let from = range.from
  let to = range.to
  let placed = false
  for (const r of known) {
    if (r.to + 1 < from) out.push(r)
    else if (to + 1 < r.from) {
      if (!placed) out.push({ from, to })
      placed = true
      out.push(r)
    } else {
      from = Math.min(from, r.from)
      to = Math.max(to, r.to)
    }
  }
  if (!placed) out.push({ from, to })
  return out
}

const sameRanges = (a: readonly SeqRange[], b: readonly SeqRange[]) =>
  a.length === b.length && a.every((r, i) => r.from === b[i]!.from && r.to === b[i]!.to)

/**
 * The range a page covers, from how it was asked: every readable row between its bounds is in
 * it. `undefined` when it says nothing (an empty page that claims older rows exist).
 */
export function pageRange(
  page: MessagePage,
  ask: { beforeSeq?: number; afterSeq?: number },
): SeqRange | undefined {
  const upper = (ask.beforeSeq ?? Number.POSITIVE_INFINITY) - 1
  const first = page.messages[0]
  const last = page.messages.at(-1)
  if (ask.afterSeq !== undefined) {
    if (page.hasNewer && !last) return undefined
    return { from: ask.afterSeq + 1, to: page.hasNewer && last ? last.seq : upper }
  }
  if (page.hasOlder && !first) return undefined
  return { from: page.hasOlder && first ? first.seq : 1, to: upper }
}

/**
 * Adds a page's rows that lie outside what the window knows, and the page's range to what it
 * knows. `newer` holds versions of rows that changed while the page was on its way (rows outside
 * the window then), so a page read before such a change does not bring back the old text.
 */
export function addRange(
  window: TranscriptWindow,
  page: MessagePage,
  range: SeqRange | undefined,
  filter: WindowFilter,
  newer?: ReadonlyMap<string, { message: SessionMessage; headSeq: number }>,
): TranscriptWindow {
  if (range === undefined || range.from > range.to) return window
  const added: MessageRow[] = []
  for (const message of page.messages) {
    if (message.seq < range.from || message.seq > range.to || isKnown(window, message.seq)) continue
    const late = newer?.get(message.id)
    const current = late !== undefined && late.headSeq > page.headSeq ? late.message : message
    if (isShown(current, filter)) added.push(rowOf(current))
  }
  const known = unionRanges(window.known, range)
  if (added.length === 0 && sameRanges(known, window.known)) return window
  const hasOlder = (known[0]?.from ?? 1) > 1
  return {
    ...window,
    rows: added.length === 0 ? window.rows : mergeRows(window.rows, added),
    known,
    hasOlder,
  }
}

/** Two ascending row lists as one (their seqs never collide: `added` lies outside the known ranges). */
function mergeRows(rows: readonly MessageRow[], added: readonly MessageRow[]): MessageRow[] {
  const first = added[0]!.message.seq
  const last = added.at(-1)!.message.seq
  // The common case, a page below or above everything loaded, is a plain concatenation.
  if (rows.length === 0 || last < rows[0]!.message.seq) return [...added, ...rows]
  if (first > rows.at(-1)!.message.seq) return [...rows, ...added]
  const at = lowerBound(rows, first)
  const end = lowerBound(rows, last)
  if (at === end) return [...rows.slice(0, at), ...added, ...rows.slice(at)]
  const out: MessageRow[] = []
  let i = 0
  let j = 0
  while (i < rows.length || j < added.length) {
    if (j >= added.length || (i < rows.length && rows[i]!.message.seq < added[j]!.message.seq))
      out.push(rows[i++]!)
    else out.push(added[j++]!)
  }
  return out
}

/** A gap between two known ranges: the seqs `fromSeq` through `toSeq` are not loaded. */
export interface WindowGap {
  fromSeq: number
  toSeq: number
  /** Index in `rows` of the first row above the gap. */
  before: number
}

/** The gaps between the window's segments, ascending. */
export function gapsOf(window: TranscriptWindow): WindowGap[] {
  const gaps: WindowGap[] = []
  for (let i = 1; i < window.known.length; i++) {
    const below = window.known[i - 1]!
    const above = window.known[i]!
    gaps.push({ fromSeq: below.to + 1, toSeq: above.from - 1, before: lowerBound(window.rows, above.from) })
  }
  return gaps
}

/** Index of the first row whose seq is >= `seq`. */
const lowerBound = (rows: readonly MessageRow[], seq: number): number =>
  firstAtLeast(rows, (row) => row.message.seq, seq)

function partAhead(shown: MessagePart | undefined, durable: MessagePart): boolean {
  if (shown === undefined || shown.type !== durable.type) return false
  if (shown.type === 'tool' && durable.type === 'tool')
    return (
      shown.callId === durable.callId && shown.state === durable.state && shown.isError === durable.isError
    )
  if (shown.type === 'file' || durable.type === 'file')
    return shown.type === 'file' && durable.type === 'file' && shown.attachmentId === durable.attachmentId
  return shown.type !== 'tool' && durable.type !== 'tool' && shown.text.startsWith(durable.text)
}

/**
 * Whether a row shown from a live preview already holds everything a durable version of it
 * says. Streamed text is persisted in batches behind the previews, so a durable change can carry
 * less text than the preview shown a moment ago; replacing it would take words back for a tick.
 */
function isAheadOf(shown: SessionMessage, durable: SessionMessage): boolean {
  if (shown.status !== 'streaming' || durable.status !== 'streaming') return false
  if (shown.parts.length < durable.parts.length) return false
  return durable.parts.every((part, i) => partAhead(shown.parts[i], part))
}

/**
 * Replaces rows the window already shows with versions read again (the rows an append did not
 * continue), unless what is shown is a streaming version ahead of the one read.
 */
export function replaceRows(
  window: TranscriptWindow,
  messages: readonly SessionMessage[],
  filter: WindowFilter,
): TranscriptWindow {
  let rows: MessageRow[] | undefined
  for (const message of messages) {
    const current = rows ?? window.rows
    const at = lowerBound(current, message.seq)
    const existing = current[at]
    if (existing === undefined || existing.message.id !== message.id || existing.message === message) continue
    if (isAheadOf(existing.message, message)) continue
    rows ??= window.rows.slice()
    if (isShown(message, filter)) rows[at] = rowOf(message)
    else rows.splice(at, 1)
  }
  return rows === undefined ? window : { ...window, rows }
}

export interface ChangeStamp {
  headSeq: number
  durable: boolean
}

/**
 * Upserts the rows of one change (by id; a row's seq never changes). Rows outside the known
 * ranges (below the window or in a gap) are not loaded and stay out, as do durable changes the
 * rows already hold and live previews a later durable change superseded. Returns the rows it
 * left out because they lie outside the known ranges (a page on its way may need them).
 *
 * `owned` holds row arrays made by earlier calls of the same batch that nobody else has seen:
 * those are patched in place, so a batch of changes copies the window's rows once, not once per
 * change (a streamed delta then costs a lookup and one slot).
 */
export function applyMessages(
  window: TranscriptWindow,
  messages: readonly SessionMessage[],
  stamp: ChangeStamp,
  filter: WindowFilter,
  owned?: WeakSet<readonly MessageRow[]>,
  appends: readonly TextAppend[] = [],
): { window: TranscriptWindow; outside: readonly SessionMessage[]; mismatched: readonly number[] } {
  const headSeq = Math.max(window.headSeq, stamp.headSeq)
  const stale = stamp.durable ? stamp.headSeq <= window.syncedThrough : stamp.headSeq < window.syncedThrough
  const syncedThrough = stamp.durable ? Math.max(window.syncedThrough, stamp.headSeq) : window.syncedThrough
  if (stale || (messages.length === 0 && appends.length === 0)) {
    const next =
      headSeq === window.headSeq && syncedThrough === window.syncedThrough
        ? window
        : { ...window, headSeq, syncedThrough }
    return { window: next, outside: [], mismatched: [] }
  }
  let rows: MessageRow[] | undefined
  const writable = (): MessageRow[] => {
    if (rows === undefined) {
      rows = owned?.has(window.rows) ? (window.rows as MessageRow[]) : window.rows.slice()
      owned?.add(rows)
    }
    return rows
  }
  const outside: SessionMessage[] = []
  // Rows an append did not continue: the window holds another version; the view reads them again.
  const mismatched: number[] = []
  for (const append of appends) {
    const current = rows ?? window.rows
    const at = lowerBound(current, append.seq)
    const existing = current[at]
    // Not loaded here (outside the window, or filtered out): nothing to extend.
    if (existing === undefined || existing.message.id !== append.id) continue
    const next = applyTextAppend(existing.message, append)
    if (next === undefined) mismatched.push(append.seq)
    else if (next !== existing.message) writable()[at] = rowOf(next)
  }
  for (const message of messages) {
    const current = rows ?? window.rows
    // Outside the known ranges (below the window, or in a gap): not ours to show until a page brings it.
    if (!isKnown(window, message.seq)) {
      outside.push(message)
      continue
    }
    const at = lowerBound(current, message.seq)
    const existing = current[at]
    const present = existing !== undefined && existing.message.id === message.id
    const shown = isShown(message, filter)
    if (present && existing.message === message) continue
    if (present && stamp.durable && isAheadOf(existing.message, message)) continue
    if (!present && !shown) continue
    const target = writable()
    if (present && shown) target[at] = rowOf(message)
    else if (present) target.splice(at, 1)
    else target.splice(at, 0, rowOf(message))
  }
  return { window: { ...window, rows: rows ?? window.rows, headSeq, syncedThrough }, outside, mismatched }
}
