/**
 * Whether a session's turn is running, read from a view's rows: the one place the adapters (and
 * any page) decide what a Stop button and a "busy" state show.
 *
 * The rows say it without a turn flag: a turn runs while its newest row is a promoted prompt, a
 * pending steer (it opens or joins a turn at once), a streaming answer, a running tool, or an
 * answer that finished with tool calls (the next step follows once their results are in).
 *
 * @example
 *   const busy = isTurnRunning(view.getSnapshot().rows)
 */

import type { SessionMessage } from '../schema/messages'
import type { GapRow, TimelineRow } from './types'

/** A row that can still change: streaming, or holding a tool call whose result is not in yet. */
export function isOpenRow(message: SessionMessage): boolean {
  return (
    message.status === 'streaming' ||
    message.parts.some(
      (part) => part.type === 'tool' && (part.state === 'running' || part.state === 'awaiting-approval'),
    )
  )
}

/** A row that stands for a message or an input: every timeline row but a gap marker. */
export type ChatRow = Exclude<TimelineRow, GapRow>

const withoutGaps = new WeakMap<readonly TimelineRow[], readonly ChatRow[]>()

/**
 * The rows a linear chat list shows: the timeline without its gap markers (a window opened by
 * `jumpTo` has unloaded history between its segments). The same rows array gives the same
 * array, and a window without gaps is given back as it is, so conversions cached by identity
 * (the adapters') stay cached.
 */
export function chatRows(rows: readonly TimelineRow[]): readonly ChatRow[] {
  let chat = withoutGaps.get(rows)
  if (chat === undefined) {
    chat = rows.some((row) => row.kind === 'gap')
      ? rows.filter((row): row is ChatRow => row.kind !== 'gap')
      : (rows as readonly ChatRow[])
    withoutGaps.set(rows, chat)
  }
  return chat
}

export function isTurnRunning(rows: readonly TimelineRow[]): boolean {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!
    if (row.kind === 'gap') continue
    if (row.kind === 'input') {
      if (row.input.state !== 'failed') return true
      continue
    }
    const { message } = row
    if (message.visibility !== 'visible') continue
    if (isOpenRow(message)) return true
    if (message.role === 'user') return true
    if (message.role !== 'assistant') return false
    return message.status === 'complete' && message.finish === 'tool-calls'
  }
  return false
}

/** The newest assistant row that is still open (the one a page would follow live), if any. */
export function openAssistantRow(rows: readonly TimelineRow[]): SessionMessage | undefined {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!
    if (row.kind !== 'message') continue
    if (row.message.role === 'assistant' && isOpenRow(row.message)) return row.message
  }
  return undefined
}
