/**
 * The folds the engine keeps per session (transcript, turn outline, usage), advanced together
 * over stored events. Pure: the engine persists what this returns in the same transaction as
 * the events it folded.
 */

import { SessionlineError } from '../schema/errors'
import type { SessionEvent, StoredEvent } from '../schema/events'
import type { SessionMessage } from '../schema/messages'
import { type BranchingState, branching, createsRow } from './branching'
import type { Projection } from './projection'
import {
  checkEvent,
  createTranscriptReplay,
  type TranscriptState,
  type TurnState,
  transcript,
} from './transcript'
import { createOutlineReplay, type OutlineState, turnOutline } from './turn-outline'
import { type UsageState, usage } from './usage'

export interface Folds {
  transcript: TranscriptState
  turnOutline: OutlineState
  usage: UsageState
  branching: BranchingState
}
export type FoldName = keyof Folds

/** The projections whose state is cached in the `projections` table, by name. */
export const CACHED_FOLDS: { [K in FoldName]: Projection<Folds[K], unknown> } = {
  transcript,
  turnOutline,
  usage,
  branching,
}
export const FOLD_NAMES = Object.keys(CACHED_FOLDS) as FoldName[]

export const initFolds = (): Folds => ({
  transcript: transcript.init(),
  turnOutline: turnOutline.init(),
  usage: usage.init(),
  branching: branching.init(),
})

export interface Folded {
  folds: Folds
  /** Rows created or changed, one per id (its latest version), ascending by seq. */
  rows: SessionMessage[]
}

/**
 * Folds events one at a time; `transcript` is the fold state the next event must follow. The
 * transcript and the outline are replayed transiently (a delta extends in place a row this
 * folder made; the outline's chunk array is copied once, not on every change), which nobody can
 * observe: the folder hands out its rows and states only in `result`, once.
 */
function createFolder(folds: Folds) {
  let u = folds.usage
  let b = folds.branching
  const rows = new Map<string, SessionMessage>()
  const replay = createTranscriptReplay(folds.transcript, (row) => rows.set(row.id, row))
  const outline = createOutlineReplay(folds.turnOutline)
  return {
    transcript: replay.state,
    add(event: StoredEvent) {
      replay.add(event)
      outline.add(event)
      u = usage.apply(u, event)
      if (b.under !== 0 && createsRow(event)) {
        // The row was made by this folder's replay a moment ago: nobody holds it yet.
        const id =
          event.type === 'user/message' ? event.data.inputId : (event.data as { messageId: string }).messageId
        const row = rows.get(id)
        if (row !== undefined && row.seq === event.seq) row.branch = { index: b.under, count: b.under + 1 }
      }
      b = branching.apply(b, event)
    },
    result(): Folded {
      const t = replay.state()
      const o = outline.state()
      const unchanged =
        t === folds.transcript && o === folds.turnOutline && u === folds.usage && b === folds.branching
      return {
        folds: unchanged ? folds : { transcript: t, turnOutline: o, usage: u, branching: b },
        rows: [...rows.values()].sort((a, b) => a.seq - b.seq),
      }
    },
  }
}

/** Folds stored events over `folds`; rows changed several times appear once, as they ended. */
export function foldEvents(folds: Folds, events: Iterable<StoredEvent>): Folded {
  const folder = createFolder(folds)
  for (const event of events) folder.add(event)
  return folder.result()
}

/**
 * Stamps `events` with seqs from `firstSeq` and the time `at`, checking each against the log
 * grammar as it goes. Throws `invalid_state` naming the first event that cannot follow.
 */
export function stampAndFold(
  folds: Folds,
  events: readonly SessionEvent[],
  sessionId: string,
  firstSeq: number,
  at: number,
): Folded & { stored: StoredEvent[] } {
  const folder = createFolder(folds)
  const stored: StoredEvent[] = []
  events.forEach((event, index) => {
    const reason = checkEvent(folder.transcript(), event)
    if (reason !== undefined) {
      throw new SessionlineError(
        'invalid_state',
        `events[${index}] (${event.type}) cannot follow: ${reason}`,
        {
          index,
          type: event.type,
          reason,
        },
      )
    }
    const s = { ...event, sessionId, seq: firstSeq + index, at } as StoredEvent
    folder.add(s)
    stored.push(s)
  })
  return { ...folder.result(), stored }
}

export const turnStateOf = (state: TranscriptState): TurnState => ({
  lastTurn: state.lastTurn,
  openTurn: state.openTurn,
  openStep: state.openStep,
  lastStep: state.lastStep,
})

/**
 * Folds stored events that come from outside the engine (a `sessionline` import), checking each
 * against the log grammar before it is folded. Throws `invalid_input` naming the first event
 * that cannot follow; nothing of such a log is stored.
 */
export function foldCheckedEvents(folds: Folds, events: Iterable<StoredEvent>): Folded {
  const folder = createFolder(folds)
  for (const event of events) {
    const reason = checkEvent(folder.transcript(), event)
    if (reason !== undefined) {
      throw new SessionlineError(
        'invalid_input',
        `event ${event.seq} (${event.type}) cannot follow: ${reason}`,
        { seq: event.seq, type: event.type, reason },
      )
    }
    folder.add(event)
  }
  return folder.result()
}
