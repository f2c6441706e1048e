/**
 * The transcript fold: events in, transcript rows (`SessionMessage`) out.
 *
 * The state carries only what can still change (the open rows and the running tool calls) plus
 * the turn bookkeeping, so it stays small however long the session grows; settled rows leave it
 * through `changed` and the engine materializes them into the `messages` table.
 *
 * The fold is total: an event that `checkEvent` would reject is ignored (same state, nothing
 * changed), so a replay never throws and the incremental path and a replay agree even on a log
 * that was never checked.
 *
 * @example
 *   let state = initTranscript()
 *   for (const event of events) {
 *     const next = applyTranscript(state, event)
 *     state = next.state
 *     upsert(next.changed) // rows by id
 *   }
 */
import type { Usage } from '../schema/common'
import type { Finish, SessionEvent, StoredEvent, StoredEventOf } from '../schema/events'
import type { MessagePart, MessageStatus, SessionMessage, ToolPart } from '../schema/messages'
import type { Projection } from './projection'

/** Turn bookkeeping of a session, as the log's fold sees it. */
export interface TurnState {
  /** Highest turn number started (0: none yet). */
  lastTurn: number
  /** The turn started and not ended, if any. */
  openTurn: number | null
  /** Inside `openTurn`: the step started and not ended, if any, and the last step number used. */
  openStep: number | null
  lastStep: number
}

export interface TranscriptState extends TurnState {
  /**
   * Rows that can still change, ascending by seq: streaming assistant rows and rows with running
   * tool calls. A handful at most, so an array beats a keyed record: lookups scan a few items,
   * and ids (any string, '__proto__' included) are never used as property keys.
   */
  open: readonly SessionMessage[]
}

export interface TranscriptStep {
  state: TranscriptState
  /** Rows this event created or changed, as new objects; rows it did not touch keep their identity. */
  changed: SessionMessage[]
}

export function initTranscript(): TranscriptState {
  return { lastTurn: 0, openTurn: null, openStep: null, lastStep: 0, open: [] }
}

/** The open row `id`, if it is open. */
export function openRowOf(state: TranscriptState, id: string): SessionMessage | undefined {
  for (const row of state.open) if (row.id === id) return row
  return undefined
}

/** The open row holding the running call `callId`, if any. */
function callOwnerOf(state: TranscriptState, callId: string): SessionMessage | undefined {
  for (const row of state.open)
    for (const part of row.parts)
      if (part.type === 'tool' && part.state === 'running' && part.callId === callId) return row
  return undefined
}

/** The open row holding call `callId` while it waits for approval, if any. */
function awaitingOwnerOf(state: TranscriptState, callId: string): SessionMessage | undefined {
  for (const row of state.open)
    for (const part of row.parts)
      if (part.type === 'tool' && part.state === 'awaiting-approval' && part.callId === callId) return row
  return undefined
}

const isRunningTool = (part: MessagePart): part is ToolPart =>
  part.type === 'tool' && part.state === 'running'
/** A call that has not settled: running, or waiting for a person's answer. */
const isUnsettledTool = (part: MessagePart): part is ToolPart =>
  part.type === 'tool' && (part.state === 'running' || part.state === 'awaiting-approval')
const hasRunningTool = (row: SessionMessage) => row.parts.some(isUnsettledTool)
const stillOpen = (row: SessionMessage) => row.status === 'streaming' || hasRunningTool(row)

/**
 * Why `event` cannot follow in a log whose fold state is `state` (the engine raises invalid_state with this text), or undefined if it may.
 *
 * Ids are checked against what the state holds: open rows and running calls. It does not
 * remember settled rows (that would grow with the session), so a writer that must never reuse
 * the id of a settled row checks it against the stored rows as well.
 */
export function checkEvent(state: TranscriptState, event: SessionEvent): string | undefined {
  switch (event.type) {
    case 'session/created':
      // The state cannot tell a second session/created before any turn from the first; the
      // engine writes it once, at creation.
      return state.lastTurn > 0 || state.openTurn !== null ? 'session/created must open the log' : undefined
    case 'turn/start': {
      const { turn } = event.data
      if (state.openTurn !== null) return `turn/start ${turn}: turn ${state.openTurn} is still open`
      if (turn <= state.lastTurn)
        return `turn/start ${turn}: turn numbers must increase (last was ${state.lastTurn})`
      return undefined
    }
    case 'user/message':
      if (state.openTurn === null) return 'user/message outside a turn'
      if (openRowOf(state, event.data.inputId))
        return `user/message ${event.data.inputId}: id is already open`
      return undefined
    case 'step/start': {
      const { turn, step } = event.data
      if (state.openTurn === null) return 'step/start outside a turn'
      if (turn !== state.openTurn) return `step/start: turn ${turn} is not the open turn ${state.openTurn}`
      if (state.openStep !== null) return `step/start ${step}: step ${state.openStep} is still open`
      if (step <= state.lastStep)
        return `step/start ${step}: step numbers must increase (last was ${state.lastStep})`
      return undefined
    }
    case 'assistant/start': {
      const { messageId, turn, step } = event.data
      if (state.openStep === null) return 'assistant/start outside a step'
      if (turn !== state.openTurn || step !== state.openStep)
        return `assistant/start: turn ${turn} step ${step} is not the open step (turn ${state.openTurn} step ${state.openStep})`
      if (openRowOf(state, messageId)) return `assistant/start ${messageId}: message is already open`
      return undefined
    }
    case 'assistant/delta':
    case 'tool/call':
    case 'assistant/end': {
      const { messageId } = event.data
      if (openRowOf(state, messageId)?.status !== 'streaming')
        return `${event.type}: message ${messageId} is not streaming`
      if (event.type === 'tool/call' && callTaken(state, messageId, event.data.callId))
        return `tool/call ${event.data.callId}: call id is already used`
      return undefined
    }
    case 'tool/result':
      return callOwnerOf(state, event.data.callId) === undefined
        ? `tool/result ${event.data.callId}: no running call with this id`
        : undefined
    case 'tool/approval-request':
      return callOwnerOf(state, event.data.callId) === undefined
        ? `tool/approval-request ${event.data.callId}: no running call with this id`
        : undefined
    case 'tool/approval':
      return awaitingOwnerOf(state, event.data.callId) === undefined
        ? `tool/approval ${event.data.callId}: no call with this id waits for approval`
        : undefined
    case 'step/end': {
      const { turn, step } = event.data
      if (state.openStep === null) return 'step/end outside a step'
      if (turn !== state.openTurn || step !== state.openStep)
        return `step/end: turn ${turn} step ${step} is not the open step (turn ${state.openTurn} step ${state.openStep})`
      return undefined
    }
    case 'turn/end':
      if (state.openTurn === null) return 'turn/end outside a turn'
      if (event.data.turn !== state.openTurn)
        return `turn/end ${event.data.turn}: the open turn is ${state.openTurn}`
      return undefined
    // History moves between turns only (docs/decisions/0033); whether the rows it names exist
    // is the tree's rule (core/history-tree), which knows every row.
    case 'history/head':
    case 'history/compact':
      return state.openTurn !== null ? `${event.type} while turn ${state.openTurn} is open` : undefined
  }
}

/** A call id is taken while it runs anywhere, or while its message (still streaming) holds it. */
function callTaken(state: TranscriptState, messageId: string, callId: string): boolean {
  if (callOwnerOf(state, callId) !== undefined) return true
  const row = openRowOf(state, messageId)
  return row?.parts.some((part) => part.type === 'tool' && part.callId === callId) ?? false
}

/** Pure: the next state and the rows this event created or changed (new objects; untouched rows keep identity). */
export function applyTranscript(state: TranscriptState, event: StoredEvent): TranscriptStep {
  if (checkEvent(state, event) !== undefined) return { state, changed: [] }
  switch (event.type) {
    case 'session/created':
      return { state, changed: [] }
    case 'turn/start':
      return { state: withTurns(state, event.data.turn, event.data.turn, null, 0), changed: [] }
    case 'user/message':
      return { state, changed: [userRow(state, event)] }
    case 'step/start':
      return {
        state: withTurns(state, state.lastTurn, state.openTurn, event.data.step, event.data.step),
        changed: [],
      }
    case 'step/end':
      return { state: withTurns(state, state.lastTurn, state.openTurn, null, state.lastStep), changed: [] }
    case 'assistant/start':
      return settle(state, [assistantRow(event)])
    case 'assistant/delta': {
      const { messageId, text, reasoning } = event.data
      const row = openRowOf(state, messageId)!
      let parts = row.parts
      if (reasoning) parts = appendText(parts, 'reasoning', reasoning)
      if (text) parts = appendText(parts, 'text', text)
      return parts === row.parts
        ? { state, changed: [] }
        : settle(state, [revisedRow(row, parts, row.status, event.at)])
    }
    case 'tool/call': {
      const { messageId, callId, name, input } = event.data
      const row = openRowOf(state, messageId)!
      const part: ToolPart = { type: 'tool', callId, name, input, state: 'running' }
      return settle(state, [revisedRow(row, [...row.parts, part], row.status, event.at)])
    }
    case 'tool/result':
      return settle(state, [withResult(state, event)])
    case 'tool/approval-request': {
      const row = callOwnerOf(state, event.data.callId)!
      return settle(state, [withToolState(row, event.data.callId, event.at, 'awaiting-approval')])
    }
    case 'tool/approval': {
      const { callId, approved, reason } = event.data
      const row = awaitingOwnerOf(state, callId)!
      if (approved) return settle(state, [withToolState(row, callId, event.at, 'running')])
      const output = { error: 'A person denied this tool call', ...(reason === undefined ? {} : { reason }) }
      return settle(state, [withToolState(row, callId, event.at, 'denied', { output, isError: true })])
    }
    case 'assistant/end': {
      const { messageId, usage, finish } = event.data
      const row = openRowOf(state, messageId)!
      const status: MessageStatus =
        finish === 'aborted' ? 'interrupted' : finish === 'error' ? 'error' : 'complete'
      return settle(state, [revisedRow(row, row.parts, status, event.at, finish, usage)])
    }
    case 'turn/end': {
      const closed = state.open.map((row) => closeRow(row, event))
      const next = settle(state, closed)
      const { lastTurn, lastStep } = next.state
      return { state: withTurns(next.state, lastTurn, null, null, lastStep), changed: next.changed }
    }
    case 'history/head':
      // Which rows are visible follows the head; the engine rewrites them from the tree.
      return { state, changed: [] }
    case 'history/compact':
      return { state, changed: [summaryRow(state, event)] }
  }
}

function summaryRow(state: TranscriptState, event: StoredEventOf<'history/compact'>): SessionMessage {
  const row: SessionMessage = {
    id: event.data.messageId,
    sessionId: event.sessionId,
    seq: event.seq,
    role: 'summary',
    turn: state.lastTurn,
    parts: [{ type: 'text', text: event.data.text }],
    status: 'complete',
    visibility: 'visible',
    createdAt: event.at,
    updatedAt: event.at,
  }
  if (event.data.usage !== undefined) row.usage = event.data.usage
  return row
}

function userRow(state: TranscriptState, event: StoredEventOf<'user/message'>): SessionMessage {
  const { inputId, text, source, attachments = [] } = event.data
  // A file sent without words has no text part; a prompt of words keeps its one text part first.
  const parts: SessionMessage['parts'] =
    text.length > 0 || attachments.length === 0 ? [{ type: 'text', text }, ...attachments] : [...attachments]
  return {
    id: inputId,
    sessionId: event.sessionId,
    seq: event.seq,
    role: 'user',
    turn: state.openTurn ?? 0,
    parts,
    status: 'complete',
    visibility: 'visible',
    source,
    createdAt: event.at,
    updatedAt: event.at,
  }
}

function assistantRow(event: StoredEventOf<'assistant/start'>): SessionMessage {
  const { messageId, turn, step } = event.data
  return {
    id: messageId,
    sessionId: event.sessionId,
    seq: event.seq,
    role: 'assistant',
    turn,
    step,
    parts: [],
    status: 'streaming',
    visibility: 'visible',
    createdAt: event.at,
    updatedAt: event.at,
  }
}

/** Streamed text extends the last part when it is of the same kind; otherwise it starts a new part. */
function appendText(parts: readonly MessagePart[], type: 'text' | 'reasoning', text: string): MessagePart[] {
  const copy = parts.slice()
  const end = copy.length - 1
  const last = copy[end]
  if (last?.type === type) copy[end] = { type, text: last.text + text }
  else copy.push({ type, text })
  return copy
}

function withResult(state: TranscriptState, event: StoredEventOf<'tool/result'>): SessionMessage {
  const { callId, output, isError } = event.data
  const row = callOwnerOf(state, callId)!
  const parts = row.parts.map(
    (part): MessagePart =>
      isRunningTool(part) && part.callId === callId
        ? toolPartWith(part, isError ? 'error' : 'done', { output, isError })
        : part,
  )
  return revisedRow(row, parts, row.status, event.at)
}

/** Call `callId` of `row` moved to `next` (with its result, when it has one). */
function withToolState(
  row: SessionMessage,
  callId: string,
  at: number,
  next: ToolPart['state'],
  result?: { output: ToolPart['output']; isError: boolean },
): SessionMessage {
  const parts = row.parts.map(
    (part): MessagePart =>
      part.type === 'tool' && part.callId === callId && isUnsettledTool(part)
        ? toolPartWith(part, next, result)
        : part,
  )
  return revisedRow(row, parts, row.status, at)
}

/** At turn end nothing may stay open: streaming text is cut, running (or waiting) calls never answer. */
function closeRow(row: SessionMessage, event: StoredEventOf<'turn/end'>): SessionMessage {
  const parts = row.parts.map(
    (part): MessagePart => (isUnsettledTool(part) ? toolPartWith(part, 'interrupted') : part),
  )
  const status: MessageStatus =
    row.status !== 'streaming' ? row.status : event.data.reason === 'completed' ? 'complete' : 'interrupted'
  return revisedRow(row, parts, status, event.at)
}

/**
 * `row` with new parts, status and time (and, when given, finish and usage). Written out rather
 * than spread (`{ ...row, parts }`): rows reach the fold in several hidden classes (made here,
 * read back from the store, with or without finish, usage, source…), and V8 copies a spread
 * source whose class that site has not settled on through its slow path, about 1 µs a copy
 * against 60 ns (Node 20, measured). Built field by field in one order, every revised row of the
 * same fields shares one class, and the fold stays on the fast path.
 *
 * The order is the one the spreads gave the fold's own rows (`userRow`, `assistantRow`, then
 * `finish` and `usage` added at the end), so a row rebuilt by this fold serializes exactly as the
 * stored one (test/store/migrations.test.ts holds it to the version 1 fixture). Every field of
 * SessionMessage is carried over: a test holds this function to the schema's keys.
 */
export function revisedRow(
  row: SessionMessage,
  parts: MessagePart[],
  status: MessageStatus,
  updatedAt: number,
  finish?: Finish,
  usage?: Usage,
): SessionMessage {
  const out = {
    id: row.id,
    sessionId: row.sessionId,
    seq: row.seq,
    role: row.role,
    turn: row.turn,
  } as SessionMessage
  if (row.step !== undefined) out.step = row.step
  out.parts = parts
  out.status = status
  out.visibility = row.visibility
  if (row.source !== undefined) out.source = row.source
  out.createdAt = row.createdAt
  out.updatedAt = updatedAt
  const f = finish ?? row.finish
  if (f !== undefined) out.finish = f
  const u = usage ?? row.usage
  if (u !== undefined) out.usage = u
  if (row.model !== undefined) out.model = row.model
  if (row.agentId !== undefined) out.agentId = row.agentId
  if (row.isMeta !== undefined) out.isMeta = row.isMeta
  if (row.parentId !== undefined) out.parentId = row.parentId
  if (row.delivery !== undefined) out.delivery = row.delivery
  if (row.command !== undefined) out.command = row.command
  if (row.excludedFromContext !== undefined) out.excludedFromContext = row.excludedFromContext
  if (row.branch !== undefined) out.branch = row.branch
  return out
}

/**
 * `part` in a new state, written out for the reason `revisedRow` is, in the order the spreads
 * gave (`output` and `isError` after `state`); every ToolPart field is kept.
 */
export function toolPartWith(
  part: ToolPart,
  state: ToolPart['state'],
  result?: { output: ToolPart['output']; isError: boolean },
): ToolPart {
  const out: ToolPart = { type: 'tool', callId: part.callId, name: part.name, input: part.input, state }
  const { output, isError } = result ?? part
  if (output !== undefined) out.output = output
  if (isError !== undefined) out.isError = isError
  if (part.agentSessionId !== undefined) out.agentSessionId = part.agentSessionId
  return out
}

/**
 * Puts changed rows back into the state: a row stays in `open` while it streams or has a running
 * call. A row that is new here has the highest seq so far, so appending keeps `open` in order.
 */
function settle(state: TranscriptState, changed: SessionMessage[]): TranscriptStep {
  let open = state.open as SessionMessage[]
  for (const row of changed) {
    let at = -1
    for (let i = 0; i < open.length; i++) {
      if (open[i]!.id === row.id) {
        at = i
        break
      }
    }
    const keep = stillOpen(row)
    if (at < 0 && !keep) continue
    if (open === state.open) open = open.slice()
    if (at < 0) open.push(row)
    else if (keep) open[at] = row
    else open.splice(at, 1)
  }
  return { state: open === state.open ? state : withOpen(state, open), changed }
}

/**
 * `state` with other open rows. Spelled out, like `withTurns`: states come in several hidden
 * classes (made here, read back from the store), and a spread of a class its site has not
 * settled on takes V8's slow path (see `revisedRow`).
 */
const withOpen = (state: TranscriptState, open: readonly SessionMessage[]): TranscriptState => ({
  lastTurn: state.lastTurn,
  openTurn: state.openTurn,
  openStep: state.openStep,
  lastStep: state.lastStep,
  open,
})

/** `state` with other turn bookkeeping and the same open rows. */
const withTurns = (
  state: TranscriptState,
  lastTurn: number,
  openTurn: number | null,
  openStep: number | null,
  lastStep: number,
): TranscriptState => ({ lastTurn, openTurn, openStep, lastStep, open: state.open })

/**
 * A transient replay: folds events like `applyTranscript`, but a streamed delta into a row this
 * replay made itself extends it in place instead of copying it. What it was given (the start
 * state, its rows and parts) is never touched: the first change to a row copies it, as the pure
 * fold does, and only that copy, its parts array and its newest part are patched afterwards.
 * Intermediate versions of a row are never handed out, so nobody can tell: `state()` and the
 * rows `changed` collects are the ones the pure fold would end with. Once the replay's caller
 * takes them (the end of a batch), they must not be patched again: start a new replay.
 *
 * @example
 *   const replay = createTranscriptReplay(state, (row) => rows.set(row.id, row))
 *   for (const event of batch) replay.add(event)
 *   state = replay.state()
 */
export function createTranscriptReplay(start: TranscriptState, changed: (row: SessionMessage) => void) {
  let state = start
  /** Rows, parts arrays and parts this replay made: nobody else holds them yet. */
  const own = new WeakSet<object>()
  function extend(row: SessionMessage, type: 'text' | 'reasoning', text: string): void {
    const parts = row.parts as MessagePart[]
    const last = parts[parts.length - 1]
    if (last !== undefined && last.type === type && own.has(last)) (last as { text: string }).text += text
    else {
      const part = last?.type === type ? { type, text: last.text + text } : { type, text }
      own.add(part)
      if (last?.type === type) parts[parts.length - 1] = part
      else parts.push(part)
    }
  }
  return {
    state: () => state,
    add(event: StoredEvent): void {
      if (event.type === 'assistant/delta') {
        const row = openRowOf(state, event.data.messageId)
        if (row !== undefined && row.status === 'streaming' && own.has(row) && own.has(row.parts)) {
          const { text, reasoning } = event.data
          if (!text && !reasoning) return
          if (reasoning) extend(row, 'reasoning', reasoning)
          if (text) extend(row, 'text', text)
          ;(row as { updatedAt: number }).updatedAt = event.at
          return
        }
      }
      const step = applyTranscript(state, event)
      state = step.state
      // New rows, and for these events their parts array and newest part, are this replay's own.
      const fresh =
        event.type === 'assistant/start' || event.type === 'assistant/delta' || event.type === 'tool/call'
      for (const row of step.changed) {
        own.add(row)
        if (fresh) {
          own.add(row.parts)
          const last = row.parts[row.parts.length - 1]
          if (last !== undefined) own.add(last)
        }
        changed(row)
      }
    },
  }
}

/** Reference: every row of a whole log, ascending by seq (a plain replay). */
export function replayTranscript(events: Iterable<StoredEvent>): SessionMessage[] {
  const rows = new Map<string, SessionMessage>()
  let state = initTranscript()
  for (const event of events) {
    const next = applyTranscript(state, event)
    state = next.state
    for (const row of next.changed) rows.set(row.id, row)
  }
  return [...rows.values()].sort((a, b) => a.seq - b.seq)
}

/**
 * The stored transcript state's version. 3: stored without the open rows' text, as their ids
 * (core/materialize); 2 stored them whole in an array in seq order; 1 kept them in a record by
 * id, with a callOwner map. Its own constant so a reader of stored rows can check it without the fold.
 */
export const TRANSCRIPT_VERSION = 3

/** The transcript fold as a projection; its view is the state itself (the engine materializes rows). */
export const transcript: Projection<TranscriptState, TranscriptState> = {
  name: 'transcript',
  version: TRANSCRIPT_VERSION,
  init: initTranscript,
  apply: (state, event) => applyTranscript(state, event).state,
  view: (state) => state,
}
