/**
 * The loaded window of a transcript: a contiguous suffix of its rows, ascending by seq, unique by
 * id. Pure functions: each takes a window and returns the same window when nothing changed, so
 * the snapshot built from it stays the same object.
 *
 * "Contiguous" means no row of the transcript between the first and the last loaded row is
 * missing. A page asked for with `beforeSeq = baseSeq` holds every row between its own base and
 * that seq, and the window's base only ever goes down, so taking a page's rows below the current
 * base keeps the window contiguous whatever order overlapping pages come back in.
 */

import { firstAtLeast } from '../core/sorted'
import { isReadable } from '../core/visibility'
import type { MessagePart, SessionMessage } from '../schema/messages'
import type { MessagePage } from '../schema/requests'
import type { TimelineRow } from './types'

export type MessageRow = Extract<TimelineRow, { kind: 'message' }>

export interface TranscriptWindow {
  readonly rows: readonly MessageRow[]
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

export const EMPTY_WINDOW: TranscriptWindow = Object.freeze({
  rows: Object.freeze([]) as readonly MessageRow[],
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

/** The first tail page of a session (or a reload after a reset). */
export function windowFromTail(page: MessagePage, filter: WindowFilter): TranscriptWindow {
  return {
    rows: page.messages.filter((m) => isShown(m, filter)).map(rowOf),
    hasOlder: page.hasOlder,
    headSeq: page.headSeq,
    syncedThrough: page.headSeq,
  }
}

/**
 * Prepends the rows of an older page that lie below the window. `newer` holds versions of rows
 * that changed while the page was on its way (rows outside the window then), so a page read
 * before such a change does not bring back the old text.
 */
export function prependPage(
  window: TranscriptWindow,
  page: MessagePage,
  filter: WindowFilter,
  newer?: ReadonlyMap<string, { message: SessionMessage; headSeq: number }>,
): TranscriptWindow {
  const base = baseSeqOf(window)
  // An empty window has nothing below which to prepend: it follows the session's tail instead.
  if (window.rows.length === 0) return window
  const older: MessageRow[] = []
  for (const message of page.messages) {
    if (message.seq >= base) break
    const late = newer?.get(message.id)
    const current = late !== undefined && late.headSeq > page.headSeq ? late.message : message
    if (isShown(current, filter)) older.push(rowOf(current))
  }
  // A page with nothing below the base says nothing about what is older than the base.
  const hasOlder = older.length > 0 || page.messages.length === 0 ? page.hasOlder : window.hasOlder
  if (older.length === 0 && hasOlder === window.hasOlder) return window
  return { ...window, rows: older.length === 0 ? window.rows : [...older, ...window.rows], hasOlder }
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

export interface ChangeStamp {
  headSeq: number
  durable: boolean
}

/**
 * Upserts the rows of one change (by id; a row's seq never changes). Rows older than the window
 * are not loaded and stay out, as do durable changes the rows already hold and live previews a
 * later durable change superseded. Returns the ids of rows it left out because they lie below
 * the window (a page on its way may need them).
 */
export function applyMessages(
  window: TranscriptWindow,
  messages: readonly SessionMessage[],
  stamp: ChangeStamp,
  filter: WindowFilter,
): { window: TranscriptWindow; outside: readonly SessionMessage[] } {
  const headSeq = Math.max(window.headSeq, stamp.headSeq)
  const stale = stamp.durable ? stamp.headSeq <= window.syncedThrough : stamp.headSeq < window.syncedThrough
  const syncedThrough = stamp.durable ? Math.max(window.syncedThrough, stamp.headSeq) : window.syncedThrough
  if (stale || messages.length === 0) {
    const next =
      headSeq === window.headSeq && syncedThrough === window.syncedThrough
        ? window
        : { ...window, headSeq, syncedThrough }
    return { window: next, outside: [] }
  }
  let rows: MessageRow[] | undefined
  const outside: SessionMessage[] = []
  for (const message of messages) {
    const current = rows ?? window.rows
    // Below a window that has older rows unloaded: not ours to show until a page brings it.
    if (current.length > 0 ? message.seq < current[0]!.message.seq && window.hasOlder : window.hasOlder) {
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
    rows ??= window.rows.slice()
    if (present && shown) rows[at] = rowOf(message)
    else if (present) rows.splice(at, 1)
    else rows.splice(at, 0, rowOf(message))
  }
  return { window: { ...window, rows: rows ?? window.rows, headSeq, syncedThrough }, outside }
}
