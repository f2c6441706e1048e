/**
 * The history verbs as pure deciders (docs/decisions/0033): `decideHistory(state, command, at)`
 * returns the events a verb appends, the receipts and rows it stores, and the session state and
 * tree after it, or the `SessionlineError` that refuses it. Like `decide` (./decide), it reads
 * no clock and no database: the command carries the facts it is judged on.
 *
 * Rules:
 * - imported sessions are read-only; every row a verb names must be a row of this session's tree.
 * - a verb that changes the history while a turn is open ends that turn first
 *   (`turn/end interrupted`, after ending its open step and streaming message), in the same
 *   decision; a verb that changes nothing writes nothing.
 * - `rewind` (a user row): the head moves to its parent; the answer is its text.
 * - `resend` (a user row): the head moves to its parent and a new turn opens with the new
 *   prompt, whose receipt is stored promoted. Same id and text again: the stored receipt, nothing
 *   written; an id another input or row owns: `conflict`.
 * - `regenerate` (an assistant or user row): the head moves to the prompt (the nearest user row
 *   at or above it) and a new turn opens for the runner to answer it again.
 * - `switchBranch` (any row): the head moves to the newest row below it.
 * - `compact`: a summary row under the head that replaces the path through `throughId`; refused
 *   with `conflict` when the head is no longer `expectedHead` (the summary was written for
 *   another path).
 *
 * @example
 *   const decision = decideHistory(state, { type: 'rewind', messageId, row }, Date.now())
 *   if (decision instanceof SessionlineError) throw decision
 *   await commit(decision) // then publish decision.next and decision.tree
 */
import { SessionlineError } from '../schema/errors'
import type { SessionEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import { assertNative, type Decision, refusalReturned, type SessionState } from './decide'
import { stampAndFold } from './folds'
import {
  childCount,
  compactableIds,
  evolveTree,
  type HistoryTree,
  hasRow,
  headOf,
  newestUnder,
  nodeOf,
  type TreeNode,
} from './history-tree'
import { duplicateIdError, type IdOwner, idTaken, rowIdsCreated } from './ids'
import type { TranscriptState } from './transcript'

/** A session's state with its history tree. */
export interface HistoryState extends SessionState {
  readonly tree: HistoryTree
}

/** A history verb, with the facts it is judged on (read inside the write transaction). */
export type HistoryCommand =
  | {
      type: 'rewind'
      messageId: string
      /** The stored row `messageId` (its text is the answer). */
      row: SessionMessage | undefined
    }
  | {
      type: 'resend'
      messageId: string
      input: { id: string; text: string }
      /** The receipt stored under `input.id`, in any session. */
      stored: InputReceipt | undefined
      /** The row that owns `input.id`, in any session. */
      rowOwner: IdOwner | undefined
    }
  | { type: 'regenerate'; messageId: string }
  | { type: 'switchBranch'; messageId: string }
  | {
      type: 'compact'
      summary: { id: string; text: string; usage?: { input: number; output: number } }
      /** The last row replaced: a row of the path at or after its last summary; `null`: none; absent: the head. */
      throughId?: string | null
      /** The head the summary was written for. */
      expectedHead: string | null
      /** The row or input that owns `summary.id`, in any session. */
      owner: IdOwner | undefined
    }

/** What each history verb answers its caller. */
export interface HistoryAnswers {
  rewind: { text: string }
  resend: InputReceipt
  regenerate: { turn: number }
  switchBranch: { head: string | null }
  compact: SessionMessage
}

export type HistoryCommandOf<K extends HistoryCommand['type']> = Extract<HistoryCommand, { type: K }>

/** A history decision: what `decide` returns, and the tree after it when it changes anything. */
export interface HistoryDecision<T> extends Decision<T> {
  next?: HistoryState
}

export type HistoryDecided<K extends HistoryCommand['type']> =
  | HistoryDecision<HistoryAnswers[K]>
  | SessionlineError

/** Decides one history verb on `state` at time `at`; returns the refusal instead of throwing it. */
export function decideHistory<K extends HistoryCommand['type']>(
  state: HistoryState,
  command: HistoryCommandOf<K>,
  at: number,
): HistoryDecided<K> {
  return refusalReturned(() => decideOrThrow(state, command as HistoryCommand, at) as HistoryDecided<K>)
}

function decideOrThrow(state: HistoryState, command: HistoryCommand, at: number): HistoryDecision<unknown> {
  assertNative(state)
  switch (command.type) {
    case 'rewind': {
      const node = rowNode(state, command.messageId, ['user'])
      const text = textOf(command.row)
      return moveHead(state, node.parent, 'rewind', { text }, at)
    }
    case 'resend':
      return resend(state, command, at)
    case 'regenerate': {
      const prompt = promptOf(state, rowNode(state, command.messageId, ['user', 'assistant']))
      const turn = state.folds.transcript.lastTurn + 1
      const events: SessionEvent[] = [
        { type: 'history/head', data: headData(state, prompt.id, 'regenerate') },
        { type: 'turn/start', data: { turn } },
      ]
      return commit(state, events, { turn }, at)
    }
    case 'switchBranch': {
      rowNode(state, command.messageId, ['user', 'assistant', 'summary', 'system'])
      const head = newestUnder(state.tree, command.messageId)!
      return moveHead(state, head, 'switch', { head }, at)
    }
    case 'compact':
      return compact(state, command, at)
  }
}

const unchanged = <T>(answer: T): HistoryDecision<T> => ({
  answer,
  events: [],
  receipts: [],
  newReceipts: false,
  rows: [],
  createdRowIds: [],
})

/** Row `id` of this session's tree, which must have one of `roles`. */
function rowNode(state: HistoryState, id: string, roles: readonly string[]): TreeNode {
  const node = nodeOf(state.tree, id)
  if (node === undefined) {
    throw new SessionlineError(
      'not_found',
      `no row ${JSON.stringify(id)} in session ${JSON.stringify(state.sessionId)}`,
      { sessionId: state.sessionId, messageId: id },
    )
  }
  if (!roles.includes(node.role)) {
    throw new SessionlineError(
      'invalid_input',
      `row ${JSON.stringify(id)} is a ${node.role} row; this needs a ${roles.join(' or ')} row`,
      { messageId: id, role: node.role },
    )
  }
  return node
}

/** The prompt a row answers: itself when a user row, else the nearest user row above it. */
function promptOf(state: HistoryState, node: TreeNode): TreeNode {
  for (let at: TreeNode | undefined = node; at !== undefined; ) {
    if (at.role === 'user') return at
    at = at.parent === null ? undefined : nodeOf(state.tree, at.parent)
  }
  throw new SessionlineError('invalid_state', `row ${JSON.stringify(node.id)} answers no prompt`, {
    messageId: node.id,
  })
}

function textOf(row: SessionMessage | undefined): string {
  if (row === undefined) return ''
  let text = ''
  for (const part of row.parts) if (part.type === 'text') text += part.text
  return text
}

function moveHead<T>(
  state: HistoryState,
  head: string | null,
  cause: 'rewind' | 'switch',
  answer: T,
  at: number,
): HistoryDecision<T> {
  if (head === headOf(state.tree)) return unchanged(answer)
  return commit(state, [{ type: 'history/head', data: headData(state, head, cause) }], answer, at)
}

/** A head move's data: with how many rows already hang under the new head, when any do. */
function headData(
  state: HistoryState,
  head: string | null,
  cause: 'rewind' | 'switch' | 'resend' | 'regenerate',
): { head: string | null; cause: typeof cause; children?: number } {
  const children = childCount(state.tree, head)
  return children > 0 ? { head, cause, children } : { head, cause }
}

function resend(state: HistoryState, command: Extract<HistoryCommand, { type: 'resend' }>, at: number) {
  const { input, stored, rowOwner } = command
  if (stored) {
    if (stored.sessionId !== state.sessionId)
      throw idTaken(input.id, { kind: 'input', sessionId: stored.sessionId })
    if (stored.text === input.text && stored.status === 'promoted') return unchanged(stored)
    throw new SessionlineError(
      'conflict',
      `input ${JSON.stringify(input.id)} was admitted with another payload`,
      {
        inputId: input.id,
      },
    )
  }
  if (rowOwner) throw idTaken(input.id, rowOwner)
  const node = rowNode(state, command.messageId, ['user'])
  const turn = state.folds.transcript.lastTurn + 1
  const events: SessionEvent[] = [
    { type: 'history/head', data: headData(state, node.parent, 'resend') },
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: { inputId: input.id, text: input.text, delivery: 'queue', source: 'user' },
    },
  ]
  const decision = commit(state, events, undefined, at)
  const message = decision.events.find((e) => e.type === 'user/message')!
  const receipt: InputReceipt = {
    id: input.id,
    sessionId: state.sessionId,
    seq: state.nextInputSeq,
    delivery: 'queue',
    text: input.text,
    status: 'promoted',
    admittedAt: at,
    updatedAt: at,
    promotedSeq: message.seq,
    revision: 1,
  }
  const next = decision.next!
  return {
    ...decision,
    answer: receipt,
    receipts: [receipt],
    newReceipts: true,
    next: { ...next, nextInputSeq: state.nextInputSeq + 1 },
  }
}

function compact(state: HistoryState, command: Extract<HistoryCommand, { type: 'compact' }>, at: number) {
  const head = headOf(state.tree)
  if (command.expectedHead !== head) {
    throw new SessionlineError(
      'conflict',
      `the head moved while the summary was written (expected ${JSON.stringify(command.expectedHead)}, now ${JSON.stringify(head)})`,
      { expectedHead: command.expectedHead, head },
    )
  }
  const through = command.throughId === undefined ? head : command.throughId
  if (through === null && command.throughId === undefined) {
    throw new SessionlineError('invalid_state', 'nothing to compact: the path is empty', {
      sessionId: state.sessionId,
    })
  }
  if (through !== null && !compactableIds(state.tree).includes(through)) {
    throw new SessionlineError(
      'invalid_input',
      `row ${JSON.stringify(through)} is not on the active path at or after its last summary`,
      { throughId: through },
    )
  }
  const { summary } = command
  if (command.owner) throw idTaken(summary.id, command.owner)
  if (hasRow(state.tree, summary.id)) throw idTaken(summary.id, { kind: 'row', sessionId: state.sessionId })
  const data =
    summary.usage === undefined
      ? { messageId: summary.id, text: summary.text, throughId: through }
      : { messageId: summary.id, text: summary.text, throughId: through, usage: summary.usage }
  const decision = commit(state, [{ type: 'history/compact', data }], undefined, at)
  return { ...decision, answer: decision.rows.find((row) => row.id === summary.id)! }
}

/**
 * The events that end the open turn `interrupted`, if one is open. Its step and streaming
 * message are closed first (`aborted`), as recovery closes a turn nobody runs: a verb in one tab
 * may end a turn another tab's runner streams, which never got to close them itself.
 */
function endRunningTurn(transcript: TranscriptState): SessionEvent[] {
  const turn = transcript.openTurn
  if (turn === null) return []
  const events: SessionEvent[] = []
  if (transcript.openStep !== null) {
    for (const row of transcript.open)
      if (row.role === 'assistant' && row.status === 'streaming')
        events.push({ type: 'assistant/end', data: { messageId: row.id, finish: 'aborted' } })
    events.push({ type: 'step/end', data: { turn, step: transcript.openStep } })
  }
  events.push({ type: 'turn/end', data: { turn, reason: 'interrupted' } })
  return events
}

/**
 * Stamps and folds `events` after the session's head, ending a running turn first: the events,
 * rows, folds and tree they make. Row ids must be new to the tree.
 */
function commit<T>(state: HistoryState, events: SessionEvent[], answer: T, at: number): HistoryDecision<T> {
  const all: SessionEvent[] = [...endRunningTurn(state.folds.transcript), ...events]
  const folded = stampAndFold(state.folds, all, state.sessionId, state.headSeq + 1, at)
  const createdRowIds = rowIdsCreated(folded.stored)
  const duplicate = duplicateIdError(createdRowIds)
  if (duplicate) throw duplicate
  for (const id of createdRowIds)
    if (hasRow(state.tree, id)) throw idTaken(id, { kind: 'row', sessionId: state.sessionId })
  let tree = state.tree
  for (const e of folded.stored) tree = evolveTree(tree, e)
  const headSeq = state.headSeq + all.length
  return {
    answer,
    events: folded.stored,
    receipts: [],
    newReceipts: false,
    rows: folded.rows,
    createdRowIds,
    next: { ...state, headSeq, folds: folded.folds, tree },
  }
}
