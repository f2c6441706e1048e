/**
 * What the contract suite checks after every fault, inside the page: the log is read whole and
 * consistently (read twice; equal heads mean nothing committed in between), then compared with a
 * replay of the pure folds, and with what this page was told.
 */
import type { SessionlineClient } from '../../../../src/client/types'
import { nodeOf, placeRows, replayTree, visibleIds } from '../../../../src/core/history-tree'
import { replay } from '../../../../src/core/projection'
import { replayTranscript } from '../../../../src/core/transcript'
import { turnOutline } from '../../../../src/core/turn-outline'
import type { StoredEvent } from '../../../../src/schema/events'
import type { InputReceipt } from '../../../../src/schema/inputs'
import type { SessionMessage } from '../../../../src/schema/messages'
import type { TurnOutlineEntry } from '../../../../src/schema/session'

export interface LogRead {
  events: StoredEvent[]
  rows: SessionMessage[]
  pending: InputReceipt[]
  outline: unknown
  /** Whether no event was committed while the parts were read (false: they may disagree). */
  still: boolean
  /** How many times the parts were read before they held still (or the deadline passed). */
  reads: number
}

async function allEvents(client: SessionlineClient, sessionId: string): Promise<StoredEvent[]> {
  const events: StoredEvent[] = []
  for (;;) {
    const batch = await client.events(sessionId, { afterSeq: events.at(-1)?.seq ?? 0, limit: 10_000 })
    events.push(...batch)
    if (batch.length < 10_000) return events
  }
}

async function allRows(client: SessionlineClient, sessionId: string): Promise<SessionMessage[]> {
  const pages: SessionMessage[][] = []
  let beforeSeq: number | undefined
  for (;;) {
    const page = await client.page(sessionId, { limit: 1000, includeInactive: true, beforeSeq })
    pages.unshift(page.messages)
    if (!page.hasOlder || page.messages.length === 0) return pages.flat()
    beforeSeq = page.baseSeq
  }
}

/**
 * The whole log, its rows, the inbox and the outline, as of one head: read again until no event
 * was committed in between. A runner that goes on (a fresh worker runs the input the dead one
 * had accepted) moves the head while a slow browser reads, so this keeps trying until `ms` has
 * passed rather than for a number of reads; a runner always runs out of input.
 */
export async function readLog(client: SessionlineClient, sessionId: string, ms = 30_000): Promise<LogRead> {
  const deadline = Date.now() + ms
  for (let reads = 1; ; reads++) {
    const events = await allEvents(client, sessionId)
    const [rows, pending, outline] = await Promise.all([
      allRows(client, sessionId),
      client.pending(sessionId),
      client.projection(sessionId, 'turnOutline'),
    ])
    const again = await client.events(sessionId, { afterSeq: events.at(-1)?.seq ?? 0, limit: 1 })
    const still = again.length === 0
    if (still || Date.now() >= deadline) return { events, rows, pending, outline, still, reads }
  }
}

export interface AuditReport {
  headSeq: number
  /** When the last event was committed (the worker's clock). */
  lastCommitAt: number
  events: number
  rows: number
  /** Input ids in the log (promoted), each once if all is well. */
  promoted: string[]
  pending: string[]
  /** Acknowledged inputs (receipts this page got) found neither pending, promoted nor cancelled. */
  lost: string[]
  /** How many reads of the log it took to find it still (a runner going on moves it). */
  reads: number
  problems: string[]
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/**
 * A row as compared with the replay: an inactive row's stored branch place may lag (it is
 * rewritten when a verb brings it back onto the path, docs/decisions/0033), so only rows on the
 * path are held to theirs.
 */
function placeShown(row: SessionMessage): SessionMessage {
  if (row.visibility !== 'inactive' || row.branch === undefined) return row
  const { branch: _, ...rest } = row
  return rest
}

/**
 * The rows and outline a plain replay of `events` gives, placed as the history tree says
 * (docs/decisions/0033): rows on the head's path visible, every other row inactive, each with its
 * branch place; in a session ever branched, the outline marks inactive each turn with no row on
 * the path that is not the open one. Without a history event both are the plain replay's.
 */
function replayed(events: readonly StoredEvent[]): { rows: SessionMessage[]; outline: TurnOutlineEntry[] } {
  const rows = replayTranscript(events)
  const outline = [...turnOutline.view(replay(turnOutline, events))]
  if (!events.some((event) => event.type.startsWith('history/'))) return { rows, outline }
  const tree = replayTree(events)
  const active = new Set(visibleIds(tree).map((id) => nodeOf(tree, id)!.turn))
  let openTurn: number | null = null
  for (const event of events) {
    if (event.type === 'turn/start') openTurn = event.data.turn
    else if (event.type === 'turn/end') openTurn = null
  }
  return {
    rows: placeRows(rows, tree),
    outline: outline.map((entry) => {
      const { visibility: _, ...plain } = entry
      return active.has(entry.turn) || entry.turn === openTurn
        ? plain
        : { ...entry, visibility: 'inactive' as const }
    }),
  }
}

/** Where two row lists part, as text short enough for a report. */
function firstDifference(rows: SessionMessage[], replayed: SessionMessage[]): string {
  const at = rows.findIndex((row, i) => !same(row, replayed[i]))
  const index = at < 0 ? Math.min(rows.length, replayed.length) : at
  const clip = (row: SessionMessage | undefined) =>
    row === undefined ? 'none' : JSON.stringify(row).slice(0, 400)
  return `row ${index}: served ${clip(rows[index])}, replayed ${clip(replayed[index])}`
}

/**
 * Checks `log` against the folds and against `acknowledged` (ids whose receipt this page holds)
 * and `cancelled` (ids whose cancel this page was told succeeded).
 */
export function audit(
  log: LogRead,
  acknowledged: Iterable<string>,
  cancelled: Iterable<string>,
): AuditReport {
  const problems: string[] = []
  const { events, rows, pending } = log
  events.forEach((event, i) => {
    if (event.seq !== i + 1) problems.push(`seq ${event.seq} at position ${i + 1}: not dense`)
  })
  if (!log.still) {
    // Parts read at different heads would differ for no fault of the engine's.
    problems.push(`the log moved during each of ${log.reads} reads: rows and outline not compared`)
  } else {
    const expected = replayed(events)
    const served = rows.map(placeShown)
    const replayedRows = expected.rows.map(placeShown)
    if (!same(served, replayedRows))
      problems.push(
        `rows (${rows.length}) differ from a replay (${expected.rows.length}): ${firstDifference(served, replayedRows)}`,
      )
    if (!same(log.outline, expected.outline))
      problems.push(
        `outline differs from a replay: served ${JSON.stringify(log.outline).slice(0, 400)}, replayed ${JSON.stringify(expected.outline).slice(0, 400)}`,
      )
  }
  const promoted: string[] = []
  const seen = new Set<string>()
  for (const event of events) {
    if (event.type !== 'user/message') continue
    const id = event.data.inputId
    if (seen.has(id)) problems.push(`input ${id} promoted twice`)
    seen.add(id)
    promoted.push(id)
  }
  const pendingIds = pending.map((receipt) => receipt.id)
  for (const id of pendingIds) if (seen.has(id)) problems.push(`input ${id} both pending and promoted`)
  const gone = new Set(cancelled)
  const present = new Set([...pendingIds, ...promoted])
  const lost = [...acknowledged].filter((id) => !present.has(id) && !gone.has(id))
  for (const id of lost) problems.push(`acknowledged input ${id} is lost`)
  return {
    headSeq: events.at(-1)?.seq ?? 0,
    lastCommitAt: events.at(-1)?.at ?? 0,
    events: events.length,
    rows: rows.length,
    promoted,
    pending: pendingIds,
    lost,
    reads: log.reads,
    problems,
  }
}
