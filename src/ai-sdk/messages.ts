/**
 * Timeline rows as AI SDK UI messages: one row, one `UIMessage`, with the row's id, so a message
 * the page rendered keeps its identity from the pending input to the promoted transcript row.
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

/** Every row of a snapshot as UI messages, in the view's order (ids are the rows' keys; gap markers are left out). */
export function rowsToUIMessages(rows: readonly TimelineRow[]): SessionlineUIMessage[] {
  return chatRows(rows).map(toUIMessage)
}

/** Whether the row behind a UI message may still change (the one a stream follows). */
export function isOpenMessageRow(row: TimelineRow): boolean {
  return row.kind === 'message' && row.message.role === 'assistant' && isOpenRow(row.message)
}
