/**
 * `assembleSessionDetail`: the one place that turns canonical records, or the rows stored from
 * them, into a session detail. It never asks which provider wrote its input and never reads
 * message text for meaning; records go through `recordsToRows`, so a round trip through
 * IndexedDB cannot change the result.
 *
 * @example
 *   assembleSessionDetail(records)                             // visible rows only
 *   assembleSessionDetail(storedRows, { includeInactive: true }) // superseded history too
 */
import { isReadable } from '../core/visibility'
import { SessionlineError } from '../schema/errors'
import type { SessionMessage } from '../schema/messages'
import type { TranscriptRecord } from '../schema/records'
import type { TurnOutlineEntry, UsageTotals } from '../schema/session'
import { recordsToRows, rowsOutline, rowsUsage } from './to-rows'

export interface SessionDetail {
  /** Ascending by seq; `visible` rows, plus `inactive` ones when asked; never `hidden`. Each says which it is. */
  messages: SessionMessage[]
  /** One entry per turn; superseded turns (marked `inactive`) only when asked. */
  outline: TurnOutlineEntry[]
  /** Every model call of the session, whatever became of its output. */
  usage: UsageTotals
}

export interface AssembleOptions {
  includeInactive?: boolean
}

function isRecordList(
  input: readonly (TranscriptRecord | SessionMessage)[],
): input is readonly TranscriptRecord[] {
  const records = input.filter((item) => 'type' in item).length
  if (records !== 0 && records !== input.length) {
    throw new SessionlineError('invalid_input', 'Give either transcript records or stored rows, not a mix')
  }
  return records > 0
}

export function assembleSessionDetail(
  input: readonly TranscriptRecord[] | readonly SessionMessage[],
  options: AssembleOptions = {},
): SessionDetail {
  const rows = isRecordList(input) ? recordsToRows(input).rows : [...input].sort((a, b) => a.seq - b.seq)
  const shown = (row: SessionMessage) => isReadable(row.visibility, options.includeInactive === true)
  const outline = rowsOutline(rows).filter(
    (e) => e.visibility !== 'inactive' || options.includeInactive === true,
  )
  return { messages: rows.filter(shown), outline, usage: rowsUsage(rows) }
}
