/**
 * The command rules of a session, as pure deciders (docs/decisions/0008): `decide(state,
 * command, at)` returns what a command writes (events, receipts, rows) and the state after it,
 * or the `SessionlineError` that refuses it. The folds (`./folds`) are its `evolve`: the state a
 * decision moves to is the folds over its events. Nothing here reads a clock or a database: the
 * engine reads the state and the facts a command is judged on inside one write transaction,
 * decides, commits what the decision says in that transaction, and publishes.
 *
 * Rules (docs/architecture.md §5, §10):
 * - admit is idempotent by id: the same id with the same payload answers the stored receipt and
 *   writes nothing; with another payload, another session, or an id a row owns, it is a conflict.
 * - cancel and edit touch pending receipts of this session only; an edit to the same text writes
 *   nothing. Every change to a receipt bumps its `revision`.
 * - promote `checkpoint` needs an open turn and takes every pending steer; `settled` needs none,
 *   opens one and takes the pending steers, or else the single oldest queued input.
 * - append follows the log grammar (`checkEvent`), and gives rows only ids nobody owns.
 * - respond answers a tool call that waits for approval, once: a call that waits no more (answered,
 *   stopped, never asked) is `invalid_state` and nothing is written.
 * - imported sessions are read-only.
 *
 * @example
 *   const decision = decide(state, { type: 'admit', input, stored: undefined }, Date.now())
 *   if (decision instanceof SessionlineError) throw decision
 *   await commit(decision) // events, receipts, rows; then publish decision.next
 */
import type { FilePart } from '../schema/attachments'
import type { Delivery } from '../schema/common'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { ApprovalScope, SessionEvent, StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { PromoteMode } from '../schema/requests'
import type { SessionSource } from '../schema/session'
import { type Folds, stampAndFold } from './folds'
import { duplicateIdError, type IdOwner, idTaken, rowIdsClash, rowIdsCreated } from './ids'
import { decideReorder, decideSetDelivery } from './inbox-order'
import { selectForPromotion } from './pending'

/** What the rules know of a session: its counters, its folds and its pending receipts. */
export interface SessionState {
  readonly sessionId: string
  readonly source: SessionSource
  /** Seq of the newest event. */
  readonly headSeq: number
  /** The admission seq the next admitted input takes. */
  readonly nextInputSeq: number
  readonly folds: Folds
  /** Pending receipts in admission order. */
  readonly pending: readonly InputReceipt[]
}

/**
 * A command, with the facts it is judged on beyond the session's state (read inside the write
 * transaction: who owns the ids it would take, the stored receipt it changes).
 */
export type Command =
  | {
      type: 'admit'
      input: { id: string; text: string; delivery: Delivery; attachments?: readonly FilePart[] }
      /** The receipt stored under `input.id`, in any session. */
      stored: InputReceipt | undefined
      /** The row that owns `input.id`, in any session. */
      rowOwner: IdOwner | undefined
    }
  | { type: 'cancel'; inputId: string; stored: InputReceipt | undefined }
  | { type: 'edit'; inputId: string; text: string; stored: InputReceipt | undefined }
  | { type: 'promote'; mode: PromoteMode }
  | {
      type: 'reorder'
      inputId: string
      before: string | null
      stored: InputReceipt | undefined
      /** The receipt stored under `before`, when it is an id. */
      storedBefore: InputReceipt | undefined
    }
  | { type: 'setDelivery'; inputId: string; delivery: Delivery; stored: InputReceipt | undefined }
  | {
      type: 'append'
      events: readonly SessionEvent[]
      /** Owners of `rowIdsCreated(events)`, position by position (undefined: free). */
      owners: readonly (IdOwner | undefined)[]
    }
  | {
      type: 'respond'
      callId: string
      approved: boolean
      reason?: string
      remember: ApprovalScope
    }

/** What each command answers its caller. */
export interface Answers {
  admit: InputReceipt
  cancel: InputReceipt
  edit: InputReceipt
  promote: SessionMessage[]
  append: { headSeq: number }
  /** `tool`: the name of the answered call's tool, for a remembered approval. */
  respond: { headSeq: number; tool: string }
  reorder: InputReceipt
  setDelivery: InputReceipt
}

export type CommandOf<K extends Command['type']> = Extract<Command, { type: K }>

/** What a command writes; no `next`: it changes nothing (a replay, a no-op edit, nothing to promote). */
export interface Decision<T> {
  answer: T
  /** Events to append, stamped with their seqs and `at`. */
  events: StoredEvent[]
  /** Receipts to store: new ones (`newReceipts`) or new versions of stored ones. */
  receipts: InputReceipt[]
  /** The receipts are new: stored with add, so one that exists after all fails the write. */
  newReceipts: boolean
  /** Rows the events created or changed, one per id, ascending by seq. */
  rows: SessionMessage[]
  /** Ids of the rows the events create: stored with add, never over another row. */
  createdRowIds: string[]
  /** The state after the command, when it changes anything. */
  next?: SessionState
}

export type Decided<K extends Command['type']> = Decision<Answers[K]> | SessionlineError

const unchanged = <T>(answer: T): Decision<T> => ({
  answer,
  events: [],
  receipts: [],
  newReceipts: false,
  rows: [],
  createdRowIds: [],
})

/** Decides one command on `state` at time `at`; returns the refusal instead of throwing it. */
export function decide<K extends Command['type']>(
  state: SessionState,
  command: CommandOf<K>,
  at: number,
): Decided<K> {
  return refusalReturned(() => decideOrThrow(state, command as Command, at) as Decided<K>)
}

/** Runs a throwing decider and returns its `SessionlineError` instead of throwing it; other errors pass. */
export function refusalReturned<T>(decideOrThrow: () => T): T | SessionlineError {
  try {
    return decideOrThrow()
  } catch (error) {
    if (isSessionlineError(error)) return error
    throw error
  }
}

/** Refuses any command on an imported session: it is a history another tool wrote (docs/decisions/0005). */
export function assertNative(state: { sessionId: string; source: string }): void {
  if (state.source === 'native') return
  throw new SessionlineError(
    'invalid_state',
    `session ${JSON.stringify(state.sessionId)} was imported from ${state.source}: imported sessions are read-only`,
    { sessionId: state.sessionId, source: state.source },
  )
}

function decideOrThrow(state: SessionState, command: Command, at: number): Decision<unknown> {
  assertNative(state)
  switch (command.type) {
    case 'admit':
      return admit(state, command, at)
    case 'cancel':
      return cancel(state, command, at)
    case 'edit':
      return edit(state, command, at)
    case 'promote':
      return promote(state, command.mode, at)
    case 'append':
      return append(state, command, at)
    case 'respond':
      return respond(state, command, at)
    // Inbox order and delivery (docs/decisions/0033): ./inbox-order.
    case 'reorder':
      return orThrow(decideReorder(state, command, at))
    case 'setDelivery':
      return orThrow(decideSetDelivery(state, command, at))
  }
}

function orThrow<T>(decided: Decision<T> | SessionlineError): Decision<T> {
  if (decided instanceof SessionlineError) throw decided
  return decided
}

function respond(
  state: SessionState,
  command: CommandOf<'respond'>,
  at: number,
): Decision<{ headSeq: number; tool: string }> {
  const { callId, approved, reason, remember } = command
  const waiting = state.folds.transcript.open
    .flatMap((row) => row.parts)
    .find((part) => part.type === 'tool' && part.callId === callId && part.state === 'awaiting-approval')
  if (waiting?.type !== 'tool') {
    throw new SessionlineError(
      'invalid_state',
      `tool call ${JSON.stringify(callId)} is not waiting for approval (answered, stopped or never asked)`,
      { callId },
    )
  }
  const event: SessionEvent = {
    type: 'tool/approval',
    data: {
      callId,
      approved,
      ...(reason === undefined ? {} : { reason }),
      // Only an approval is remembered; `call` is the default and is not written.
      ...(approved && remember !== 'call' ? { remember } : {}),
    },
  }
  const decision = appendEvents(state, [event], at)
  return { ...decision, answer: { ...decision.answer, tool: waiting.name } }
}

function admit(state: SessionState, command: CommandOf<'admit'>, at: number): Decision<InputReceipt> {
  const { input, stored, rowOwner } = command
  if (stored) {
    const same =
      stored.sessionId === state.sessionId &&
      stored.text === input.text &&
      stored.delivery === input.delivery &&
      sameFiles(stored.attachments, input.attachments)
    if (same) return unchanged(stored)
    if (stored.sessionId !== state.sessionId)
      throw idTaken(input.id, { kind: 'input', sessionId: stored.sessionId })
    throw new SessionlineError(
      'conflict',
      `input ${JSON.stringify(input.id)} was admitted with another payload`,
      {
        inputId: input.id,
      },
    )
  }
  if (rowOwner) throw idTaken(input.id, rowOwner)
  const receipt: InputReceipt = {
    id: input.id,
    sessionId: state.sessionId,
    seq: state.nextInputSeq,
    delivery: input.delivery,
    text: input.text,
    status: 'pending',
    admittedAt: at,
    revision: 0,
  }
  if (input.attachments && input.attachments.length > 0) receipt.attachments = [...input.attachments]
  return {
    ...unchanged(receipt),
    receipts: [receipt],
    newReceipts: true,
    next: { ...state, nextInputSeq: state.nextInputSeq + 1, pending: [...state.pending, receipt] },
  }
}

/** Whether two inputs carry the same files, in the same order, under the same names and types. */
function sameFiles(a: readonly FilePart[] = [], b: readonly FilePart[] = []): boolean {
  return (
    a.length === b.length &&
    a.every(
      (f, i) =>
        f.attachmentId === b[i]?.attachmentId && f.name === b[i]?.name && f.mediaType === b[i]?.mediaType,
    )
  )
}

/** The stored receipt `inputId`, which must be one of this session's and still pending. */
function pendingReceipt(
  state: SessionState,
  inputId: string,
  stored: InputReceipt | undefined,
): InputReceipt {
  if (!stored || stored.sessionId !== state.sessionId) {
    throw new SessionlineError(
      'not_found',
      `no input ${JSON.stringify(inputId)} in session ${JSON.stringify(state.sessionId)}`,
      { sessionId: state.sessionId, inputId },
    )
  }
  if (stored.status !== 'pending') {
    throw new SessionlineError(
      'invalid_state',
      `input ${JSON.stringify(inputId)} is ${stored.status}, not pending`,
      {
        inputId,
        status: stored.status,
      },
    )
  }
  return stored
}

function cancel(state: SessionState, command: CommandOf<'cancel'>, at: number): Decision<InputReceipt> {
  const receipt = pendingReceipt(state, command.inputId, command.stored)
  const cancelled: InputReceipt = {
    ...receipt,
    status: 'cancelled',
    updatedAt: at,
    revision: receipt.revision + 1,
  }
  return {
    ...unchanged(cancelled),
    receipts: [cancelled],
    next: { ...state, pending: state.pending.filter((r) => r.id !== receipt.id) },
  }
}

function edit(state: SessionState, command: CommandOf<'edit'>, at: number): Decision<InputReceipt> {
  const receipt = pendingReceipt(state, command.inputId, command.stored)
  if (receipt.text === command.text) return unchanged(receipt)
  const edited: InputReceipt = {
    ...receipt,
    text: command.text,
    updatedAt: at,
    revision: receipt.revision + 1,
  }
  return {
    ...unchanged(edited),
    receipts: [edited],
    next: { ...state, pending: state.pending.map((r) => (r.id === receipt.id ? edited : r)) },
  }
}

function promote(state: SessionState, mode: PromoteMode, at: number): Decision<SessionMessage[]> {
  const turn = state.folds.transcript
  if (mode === 'checkpoint' && turn.openTurn === null) {
    throw new SessionlineError('invalid_state', 'promote checkpoint needs an open turn', {
      sessionId: state.sessionId,
    })
  }
  if (mode === 'settled' && turn.openTurn !== null) {
    throw new SessionlineError(
      'invalid_state',
      `promote settled needs no open turn (turn ${turn.openTurn} is open)`,
      { sessionId: state.sessionId, openTurn: turn.openTurn },
    )
  }
  const chosen = selectForPromotion(state.pending, mode)
  if (chosen.length === 0) return unchanged([])
  const events: SessionEvent[] =
    mode === 'settled' ? [{ type: 'turn/start', data: { turn: turn.lastTurn + 1 } }] : []
  for (const r of chosen) {
    events.push({
      type: 'user/message',
      data: {
        inputId: r.id,
        text: r.text,
        delivery: r.delivery,
        source: 'user',
        ...(r.attachments && { attachments: r.attachments }),
      },
    })
  }
  // A promotion creates the rows of its own inputs: their ids are theirs already.
  const decision = appendEvents(state, events, at)
  const seqOf = new Map(
    decision.events.flatMap((e) => (e.type === 'user/message' ? [[e.data.inputId, e.seq]] : [])),
  )
  const taken = new Set(chosen.map((r) => r.id))
  const promoted = chosen.map(
    (r): InputReceipt => ({
      ...r,
      status: 'promoted',
      promotedSeq: seqOf.get(r.id),
      updatedAt: at,
      revision: r.revision + 1,
    }),
  )
  const next = decision.next as SessionState
  return {
    ...decision,
    answer: decision.rows.filter((row) => taken.has(row.id)),
    receipts: promoted,
    next: { ...next, pending: state.pending.filter((r) => !taken.has(r.id)) },
  }
}

function append(
  state: SessionState,
  command: CommandOf<'append'>,
  at: number,
): Decision<{ headSeq: number }> {
  // The head and compaction are the history verbs' to write: they check the tree, append cannot.
  const index = command.events.findIndex((e) => e.type === 'history/head' || e.type === 'history/compact')
  if (index >= 0) {
    throw new SessionlineError(
      'invalid_input',
      `events[${index}] (${command.events[index]!.type}) is written by the history verbs, not by append`,
      { index, type: command.events[index]!.type },
    )
  }
  // The log's grammar first (invalid_state), then who owns the ids (conflict).
  const decision = appendEvents(state, command.events, at)
  const clash = rowIdsClash(decision.createdRowIds, command.owners)
  if (clash) throw clash
  return decision
}

/** Stamps and folds `events` after the session's head: the events, rows and folds they make. */
function appendEvents(
  state: SessionState,
  events: readonly SessionEvent[],
  at: number,
): Decision<{ headSeq: number }> {
  const folded = stampAndFold(state.folds, events, state.sessionId, state.headSeq + 1, at)
  const createdRowIds = rowIdsCreated(folded.stored)
  const duplicate = duplicateIdError(createdRowIds)
  if (duplicate) throw duplicate
  const headSeq = state.headSeq + events.length
  return {
    answer: { headSeq },
    events: folded.stored,
    receipts: [],
    newReceipts: false,
    rows: folded.rows,
    createdRowIds,
    next: { ...state, headSeq, folds: folded.folds },
  }
}
