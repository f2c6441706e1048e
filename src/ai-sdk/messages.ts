/**
 * Timeline rows as AI SDK UI messages: one row, one `UIMessage`, with the row's id, so a message
 * the page rendered keeps its identity from the pending input to the promoted transcript row;
 * except that a turn's model steps (consecutive assistant rows) are one assistant message, as the
 * AI SDK gives one per turn, with a `step-start` part before each step.
 *
 * Rows are immutable (a change is a new row object), so each row is converted once and its
 * message reused while the row is the same object: React sees the same message and skips it.
 */
import type {
  DynamicToolUIPart,
  FileUIPart,
  ReasoningUIPart,
  StepStartUIPart,
  TextUIPart,
  UIMessage,
} from 'ai'
import { type ChatRow, chatRows, isOpenRow } from '../client/activity'
import type { TimelineInput, TimelineRow } from '../client/types'
import { attachmentUrl } from '../schema/attachments'
import type { MessagePart, MessageStatus, SessionMessage, ToolPart } from '../schema/messages'

/** What a sessionline UI message carries beside its parts. */
export interface SessionlineMessageMetadata {
  /** Transcript seq of the row; absent while the message is an input still in the inbox. */
  seq?: number
  turn?: number
  /** The row's status, or the input's state while it waits in the inbox. */
  status: MessageStatus | TimelineInput['state']
  /** `summary` rows show as `system` messages; this keeps what they were. */
  role?: 'summary'
}

export type SessionlineUIMessage = UIMessage<SessionlineMessageMetadata>
export type SessionlineUIPart = SessionlineUIMessage['parts'][number]

/** A tool call that was cut off by an interrupt reads as a failed call. */
export const INTERRUPTED_TOOL_TEXT = 'interrupted before the tool answered'

/** What a denied call reads as: the person's reason when they gave one. */
function deniedText(part: ToolPart): string {
  const output = part.output
  const reason =
    typeof output === 'object' &&
    output !== null &&
    !Array.isArray(output) &&
    typeof output.reason === 'string'
      ? output.reason
      : undefined
  return reason === undefined ? 'denied by the user' : `denied by the user: ${reason}`
}

function toolPart(part: ToolPart): DynamicToolUIPart {
  const base = { type: 'dynamic-tool' as const, toolName: part.name, toolCallId: part.callId }
  switch (part.state) {
    case 'running':
    // AI SDK 5 has no approval states on its tool parts: a waiting call shows as one whose
    // input is there and whose output is not, and sessionline's row carries the real state.
    case 'awaiting-approval':
      return { ...base, state: 'input-available', input: part.input }
    case 'done':
      return { ...base, state: 'output-available', input: part.input, output: part.output ?? null }
    case 'error':
      return {
        ...base,
        state: 'output-error',
        input: part.input,
        errorText: typeof part.output === 'string' ? part.output : JSON.stringify(part.output ?? null),
      }
    case 'interrupted':
      return { ...base, state: 'output-error', input: part.input, errorText: INTERRUPTED_TOOL_TEXT }
    case 'denied':
      return { ...base, state: 'output-error', input: part.input, errorText: deniedText(part) }
  }
}

/** One part of a row; text and reasoning are `streaming` while they may still grow. */
export function toUIPart(part: MessagePart, growing: boolean): SessionlineUIPart {
  switch (part.type) {
    case 'text':
    case 'reasoning': {
      const converted: TextUIPart | ReasoningUIPart = {
        type: part.type,
        text: part.text,
        state: growing ? 'streaming' : 'done',
      }
      return converted
    }
    case 'tool':
      return toolPart(part)
    case 'file': {
      const file: FileUIPart = {
        type: 'file',
        mediaType: part.mediaType,
        filename: part.name,
        url: attachmentUrl(part.attachmentId),
      }
      return file
    }
  }
}

function messageOf(message: SessionMessage): SessionlineUIMessage {
  const open = message.status === 'streaming'
  const parts: SessionlineUIPart[] = message.parts.map((part, i) =>
    toUIPart(part, open && i === message.parts.length - 1),
  )
  const metadata: SessionlineMessageMetadata = {
    seq: message.seq,
    turn: message.turn,
    status: message.status,
  }
  if (message.role === 'summary') metadata.role = 'summary'
  if (message.role === 'assistant') {
    // Each assistant row is one model step; the AI SDK marks steps with a part.
    const step: StepStartUIPart = { type: 'step-start' }
    parts.unshift(step)
  }
  const role = message.role === 'summary' ? 'system' : message.role
  return { id: message.id, role, parts, metadata }
}

function inputMessage(input: TimelineInput): SessionlineUIMessage {
  return {
    id: input.id,
    role: 'user',
    parts: [
      { type: 'text', text: input.text },
      // Files the engine stored; those still on their way have no URL that outlives the page yet.
      ...(input.attachments ?? []).flatMap((file): FileUIPart[] =>
        file.attachmentId === undefined
          ? []
          : [
              {
                type: 'file',
                mediaType: file.mediaType,
                filename: file.name,
                url: attachmentUrl(file.attachmentId),
              },
            ],
      ),
    ],
    metadata: { status: input.state },
  }
}

const converted = new WeakMap<object, SessionlineUIMessage>()

/** The UI message of a row (or of a queued input), converted once per row object. */
export function toUIMessage(row: ChatRow | TimelineInput): SessionlineUIMessage {
  let message = converted.get(row)
  if (message === undefined) {
    message =
      'kind' in row
        ? row.kind === 'message'
          ? messageOf(row.message)
          : inputMessage(row.input)
        : inputMessage(row)
    converted.set(row, message)
  }
  return message
}

const isAssistantRow = (row: ChatRow): row is ChatRow & { kind: 'message' } =>
  row.kind === 'message' && row.message.role === 'assistant'

/** Whether `row` is a later step of the turn whose assistant step `previous` is. */
/** How rows group into messages. */
export interface GroupOptions {
  /**
   * A steer promoted into a running turn is a `steering-message` part of the turn's message, as
   * ai 7.0.163 and later stream it, instead of a user message between two steps. Off by default:
   * ai 5 and 6 do not know the part.
   */
  steering?: boolean
}

const isUserRow = (row: ChatRow): row is ChatRow & { kind: 'message' } =>
  row.kind === 'message' && row.message.role === 'user'

/** Whether `row` belongs to the message of the group that starts with `first`. */
function continuesTurn(first: ChatRow, row: ChatRow, options: GroupOptions): boolean {
  if (!isAssistantRow(first) || row.kind !== 'message') return false
  const turn = first.message.turn
  if (turn === undefined || row.message.turn !== turn) return false
  return isAssistantRow(row) || (options.steering === true && isUserRow(row))
}

/**
 * The rows as the AI SDK's messages group them: each run of assistant rows of one turn (its model
 * steps) is one group, every other row a group of its own. A steer that joins a running turn sits
 * between two steps: with `steering` it joins the group (a part of the turn's message); without,
 * it ends one group and the steps after it form the next.
 */
export function groupRows(rows: readonly ChatRow[], options: GroupOptions = {}): ChatRow[][] {
  const groups: ChatRow[][] = []
  for (const row of rows) {
    const last = groups.at(-1)
    if (last !== undefined && continuesTurn(last[0]!, row, options)) last.push(row)
    else groups.push([row])
  }
  return groups
}

/** The rows of the group that starts at `id`: it and the later rows of its turn that follow it. */
export function groupAt(
  rows: readonly ChatRow[],
  id: string,
  options: GroupOptions = {},
): ChatRow[] | undefined {
  const at = rows.findIndex((row) => row.key === id)
  if (at === -1) return undefined
  const group = [rows[at]!]
  for (let i = at + 1; i < rows.length && continuesTurn(group[0]!, rows[i]!, options); i++)
    group.push(rows[i]!)
  return group
}

/** A steer inside a turn's message: ai 7's `steering-message` part (ai 5 and 6 have no such type). */
export function steeringPart(row: ChatRow & { kind: 'message' }): SessionlineUIPart {
  const text = row.message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
  return {
    type: 'steering-message',
    id: row.key,
    parts: [{ type: 'text', text }],
  } as unknown as SessionlineUIPart
}

/**
 * The steer a message part carries, for rendering: ai 7's `steering-message` part (a steer taken
 * into a running turn, see `GroupOptions.steering`) as its id and text, `undefined` for any other
 * part. Takes a part of any release's union, so one component renders ai 5, 6 and 7 messages.
 *
 * @example
 *   const steer = steerOf(part)
 *   if (steer) return <blockquote key={steer.id}>{steer.text}</blockquote>
 */
export function steerOf(part: { type: string }): { id: string; text: string } | undefined {
  if (part.type !== 'steering-message') return undefined
  const { id, parts } = part as {
    type: string
    id: string
    parts: readonly { type: string; text?: string }[]
  }
  return { id, text: parts.map((inner) => (inner.type === 'text' ? (inner.text ?? '') : '')).join('') }
}

const groupMessages = new WeakMap<object, { rows: readonly ChatRow[]; message: SessionlineUIMessage }>()

/**
 * One UI message for a group: a single row's own message, or, for a turn's steps, one assistant
 * message with the first step's id whose parts are each step's, a `step-start` before each, and
 * the last step's metadata. Converted once per set of row objects.
 */
export function groupToUIMessage(group: readonly ChatRow[]): SessionlineUIMessage {
  if (group.length === 1) return toUIMessage(group[0]!)
  const cached = groupMessages.get(group[0]!)
  if (cached && cached.rows.length === group.length && cached.rows.every((row, i) => row === group[i]))
    return cached.message
  const steps = group.filter(isAssistantRow).map(toUIMessage)
  const message: SessionlineUIMessage = {
    id: steps[0]!.id,
    role: 'assistant',
    parts: group.flatMap((row) => (isUserRow(row) ? [steeringPart(row)] : toUIMessage(row).parts)),
    metadata: steps.at(-1)!.metadata!,
  }
  groupMessages.set(group[0]!, { rows: [...group], message })
  return message
}

/**
 * Every row of a snapshot as UI messages, in the view's order: one assistant message per turn's
 * run of steps (its id is the first step's row id), one message per other row (its id is the
 * row's key). Gap markers are left out.
 */
export function rowsToUIMessages(
  rows: readonly TimelineRow[],
  options: GroupOptions = {},
): SessionlineUIMessage[] {
  return groupRows(chatRows(rows), options).map(groupToUIMessage)
}

/** Whether the row behind a UI message may still change (the one a stream follows). */
export function isOpenMessageRow(row: TimelineRow): boolean {
  return row.kind === 'message' && row.message.role === 'assistant' && isOpenRow(row.message)
}

/**
 * Whether a group's message may still change: its last step is open, or it ended calling tools
 * and nothing follows it yet (the turn's next step will join it). `last` says whether the group
 * is the last one of the rows.
 */
export function isOpenGroup(group: readonly ChatRow[], last: boolean): boolean {
  const tail = group.at(-1)!
  if (isOpenMessageRow(tail)) return true
  // A steer taken into the turn: the step that answers it is due.
  if (last && group.length > 1 && isUserRow(tail)) return true
  return (
    last &&
    tail.kind === 'message' &&
    tail.message.role === 'assistant' &&
    tail.message.status === 'complete' &&
    tail.message.finish === 'tool-calls'
  )
}
