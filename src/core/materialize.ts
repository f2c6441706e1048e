/**
 * When a streaming row is written to the `messages` table, and how a reader brings a stored row
 * that lags the log up to date (docs/decisions/0021).
 *
 * Rewriting a streaming row on every delta makes the bytes of one answer grow with the square of
 * its length. The log holds every delta already, so a row that only gained streamed text may stay
 * behind in `messages`: it is *lagging*, and the session row lists it with the seq its stored
 * version reflects. A lagging row is written again once what it lags by reaches the text it has
 * stored, and not before `minLag` (so the rewrites of one answer add up to about its own size,
 * and a reader folds at most about half a row from the log); a delta counts as at least
 * `deltaWeight` characters, so tiny deltas cannot pile up unbounded. It is always written when
 * anything but text changes it, when it stops streaming, and at step and turn end.
 * A reader patches a lagging row with the deltas logged after its `through`: `patchLagging`.
 *
 * @example
 *   const { write, lagging } = materialize(row.lagging ?? [], decision, openRows, row.headSeq)
 *   await db.messages.bulkPut(write)
 *   const fresh = patchLagging(storedRows, lagging, await eventsAfter(minThrough(lagging)))
 */
import type { StoredEvent } from '../schema/events'
import type { SessionMessage } from '../schema/messages'
import { applyTranscript, initTranscript, type TranscriptState, type TurnState } from './transcript'

/** A row whose stored version lags the log; listed on the session row. */
export interface LaggingRow {
  id: string
  /** Seq of the last event the stored version reflects. */
  through: number
  /** Text and reasoning characters of the stored version. */
  storedChars: number
  /** What the row lags by: the characters streamed since `through`, each delta `deltaWeight` at least. */
  lag: number
}

export interface MaterializePolicy {
  /** A row may lag by this much before it is rewritten, or by its stored text when that is more. */
  minLag: number
  /** What a delta counts as, at least, whatever its size (a reader's cost per event). */
  deltaWeight: number
}

/**
 * A reader reads a lagging row's stored version plus the deltas after it: about the row's bytes
 * either way, so the lag costs it only per-event work, bounded here to 4,096 events (256 K
 * characters, a delta counting 64 at least) or, past that, to the row's own stored text. Writes
 * happen on every flush and reads on a reload, so the bound leans toward writing less.
 */
export const DEFAULT_MATERIALIZE: MaterializePolicy = { minLag: 256 * 1024, deltaWeight: 64 }

/** What one commit stores of the rows it changed, and which rows lag after it. */
export interface Materialized {
  /** Rows to store, each in its newest version. */
  write: SessionMessage[]
  /** Rows that lag the log after this commit, ascending by seq (empty: none). */
  lagging: LaggingRow[]
}

const textChars = (row: SessionMessage): number => {
  let chars = 0
  for (const part of row.parts)
    if (part.type === 'text' || part.type === 'reasoning') chars += part.text.length
  return chars
}

/**
 * Which of a commit's changed rows to store. `rows` are the rows its events changed (newest
 * versions), `created` the ids it creates (always stored: a new id must be added), `open` the
 * open rows after it (a lagging row the commit did not touch is stored from there at step end),
 * `baseHeadSeq` the head before it (what a row not lagging before reflects).
 */
export function materialize(
  lagging: readonly LaggingRow[],
  commit: {
    events: readonly StoredEvent[]
    rows: readonly SessionMessage[]
    created: readonly string[]
  },
  open: readonly SessionMessage[],
  baseHeadSeq: number,
  policy: MaterializePolicy = DEFAULT_MATERIALIZE,
): Materialized {
  if (lagging.length === 0 && !commit.events.some((e) => e.type === 'assistant/delta')) {
    return { write: [...commit.rows], lagging: [] }
  }
  // A commit without events (an inbox write) changes no row, so every lagging row still lags as
  // it did. Its `open` may come from folds older than the session row that lists them (an inbox
  // write on a stale cache carries its folds over unread): looking the rows up there would drop
  // the ones it does not know, and their streamed text with them.
  if (commit.events.length === 0) return { write: [...commit.rows], lagging: [...lagging] }
  // Per row: text streamed in this commit, and whether anything else touched it.
  const streamed = new Map<string, { chars: number; weight: number }>()
  const otherwise = new Set<string>()
  const results = new Set<string>()
  let boundary = false
  for (const event of commit.events) {
    switch (event.type) {
      case 'assistant/delta': {
        const { messageId, text, reasoning } = event.data
        const seen = streamed.get(messageId) ?? { chars: 0, weight: 0 }
        const chars = (text?.length ?? 0) + (reasoning?.length ?? 0)
        seen.chars += chars
        seen.weight += Math.max(chars, policy.deltaWeight)
        streamed.set(messageId, seen)
        break
      }
      case 'tool/call':
      case 'assistant/end':
        otherwise.add(event.data.messageId)
        break
      case 'tool/result':
      case 'tool/approval-request':
      case 'tool/approval':
        results.add(event.data.callId)
        break
      case 'step/end':
      case 'turn/end':
        boundary = true
        break
      default:
    }
  }
  // A tool result changes its row without naming it: the row holding the call is found by its parts.
  const gotResult = (row: SessionMessage) =>
    results.size > 0 && row.parts.some((part) => part.type === 'tool' && results.has(part.callId))
  const created = new Set(commit.created)
  const before = new Map(lagging.map((lag) => [lag.id, lag]))
  const write: SessionMessage[] = []
  const next: LaggingRow[] = []
  const changedIds = new Set<string>()
  for (const row of commit.rows) {
    changedIds.add(row.id)
    const lag = before.get(row.id)
    const delta = streamed.get(row.id)
    // Only a row that gained streamed text, and nothing else, may stay behind.
    if (
      !delta ||
      boundary ||
      created.has(row.id) ||
      row.status !== 'streaming' ||
      otherwise.has(row.id) ||
      gotResult(row)
    ) {
      write.push(row)
      continue
    }
    const storedChars = lag?.storedChars ?? textChars(row) - delta.chars
    const behind = (lag?.lag ?? 0) + delta.weight
    if (behind >= Math.max(policy.minLag, storedChars)) {
      write.push(row)
      continue
    }
    next.push({ id: row.id, through: lag?.through ?? baseHeadSeq, storedChars, lag: behind })
  }
  // Lagging rows this commit did not change stay behind, unless a step or turn ended.
  for (const lag of lagging) {
    if (changedIds.has(lag.id)) continue
    const current = open.find((row) => row.id === lag.id)
    if (!current) continue
    if (boundary) write.push(current)
    else next.push(lag)
  }
  write.sort((a, b) => a.seq - b.seq)
  return { write, lagging: next.sort((a, b) => seqOf(open, a.id) - seqOf(open, b.id)) }
}

const seqOf = (rows: readonly SessionMessage[], id: string) => rows.find((row) => row.id === id)?.seq ?? 0

/** The lowest `through` among the lagging rows of `ids` (undefined: none of them lags). */
export function patchFrom(
  lagging: readonly LaggingRow[] | undefined,
  ids: Iterable<string>,
): number | undefined {
  if (!lagging || lagging.length === 0) return undefined
  const wanted = new Set(ids)
  let from: number | undefined
  for (const lag of lagging) if (wanted.has(lag.id)) from = Math.min(from ?? lag.through, lag.through)
  return from
}

/**
 * `rows` (as stored) with every lagging one brought up to the log: the events after its
 * `through` (`events` must hold every event from `patchFrom` on) are folded into it with the
 * transcript fold itself, so a patched row equals the row a replay makes. Other rows keep
 * their identity.
 */
export function patchLagging(
  rows: readonly SessionMessage[],
  lagging: readonly LaggingRow[] | undefined,
  events: readonly StoredEvent[],
): SessionMessage[] {
  if (!lagging || lagging.length === 0) return [...rows]
  const through = new Map(lagging.map((lag) => [lag.id, lag.through]))
  return rows.map((row) => {
    const after = through.get(row.id)
    if (after === undefined) return row
    // Only this row is open in the state the events are folded over: the fold ignores the rest.
    let state: TranscriptState = { ...initTranscript(), open: [row] }
    let patched = row
    for (const event of events) {
      if (event.seq <= after) continue
      if (!('messageId' in event.data) || event.data.messageId !== row.id) continue
      const step = applyTranscript(state, event)
      state = step.state
      for (const changed of step.changed) if (changed.id === row.id) patched = changed
    }
    return patched
  })
}

/**
 * The transcript fold state as stored: the turn bookkeeping and the ids of the open rows, in
 * seq order. Their text lives in `messages` (and, while they lag, in the log), so the stored
 * state stays a few hundred bytes however long the answer, and a delta leaves it unchanged.
 */
/**
 * Version 2 of the stored transcript state held the open rows whole; they are what `messages`
 * holds. A cold load reads both it and the current version without rebuilding the rows.
 */
export const WHOLE_ROWS_TRANSCRIPT = 2

export interface StoredTranscript extends TurnState {
  open: string[]
}

export const storedTranscript = (state: TranscriptState): StoredTranscript => ({
  lastTurn: state.lastTurn,
  openTurn: state.openTurn,
  openStep: state.openStep,
  lastStep: state.lastStep,
  open: state.open.map((row) => row.id),
})

/** Whether two transcript states store the same (a delta into an open row changes nothing stored). */
export function storesSame(a: TranscriptState, b: TranscriptState): boolean {
  if (a === b) return true
  if (
    a.lastTurn !== b.lastTurn ||
    a.openTurn !== b.openTurn ||
    a.openStep !== b.openStep ||
    a.lastStep !== b.lastStep ||
    a.open.length !== b.open.length
  )
    return false
  return a.open.every((row, i) => row.id === b.open[i]?.id)
}

/** The fold state again, from its stored form and the open rows as a reader has them (patched), in its order. */
export function hydrateTranscript(
  stored: StoredTranscript,
  rows: ReadonlyMap<string, SessionMessage>,
): TranscriptState | undefined {
  const open: SessionMessage[] = []
  for (const id of stored.open) {
    const row = rows.get(id)
    if (!row) return undefined
    open.push(row)
  }
  return {
    lastTurn: stored.lastTurn,
    openTurn: stored.openTurn,
    openStep: stored.openStep,
    lastStep: stored.lastStep,
    open,
  }
}
