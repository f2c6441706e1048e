import { z } from 'zod'
import { FilePart } from './attachments'
import { copyJson, Delivery, Id, Json, MessageSource, StepNumber, TurnNumber, Usage } from './common'
import { MAX_APPEND_EVENTS, MAX_APPEND_SIZE, MAX_EVENT_TEXT, MAX_TITLE_LENGTH, MAX_TOOL_NAME } from './limits'

const event = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.strictObject({ type: z.literal(type), data })

export const Finish = z.enum(['stop', 'tool-calls', 'length', 'aborted', 'error'])
export type Finish = z.infer<typeof Finish>
export const TurnEndReason = z.enum(['completed', 'aborted', 'error', 'interrupted'])
export type TurnEndReason = z.infer<typeof TurnEndReason>

/** Text an event carries: bounded by MAX_EVENT_TEXT. */
const EventText = z.string().max(MAX_EVENT_TEXT, `text is longer than ${MAX_EVENT_TEXT} characters`)
export const Title = z.string().max(MAX_TITLE_LENGTH, `title is longer than ${MAX_TITLE_LENGTH} characters`)

export const SessionCreated = event('session/created', z.strictObject({ title: Title }))
export const TurnStart = event('turn/start', z.strictObject({ turn: TurnNumber }))
export const UserMessage = event(
  'user/message',
  z.strictObject({
    inputId: Id,
    text: EventText,
    delivery: Delivery,
    source: MessageSource,
    /** Files admitted with the input (docs/decisions/0031). */
    attachments: z.array(FilePart).optional(),
  }),
)
export const StepStart = event('step/start', z.strictObject({ turn: TurnNumber, step: StepNumber }))
export const AssistantStart = event(
  'assistant/start',
  z.strictObject({ messageId: Id, turn: TurnNumber, step: StepNumber }),
)
export const AssistantDelta = event(
  'assistant/delta',
  z
    .strictObject({ messageId: Id, text: EventText.optional(), reasoning: EventText.optional() })
    .refine((d) => d.text !== undefined || d.reasoning !== undefined, {
      message: 'needs text or reasoning',
      path: ['text'],
    }),
)
export const ToolCall = event(
  'tool/call',
  z.strictObject({
    messageId: Id,
    callId: Id,
    name: z.string().min(1).max(MAX_TOOL_NAME, `name is longer than ${MAX_TOOL_NAME} characters`),
    input: Json,
  }),
)
export const ToolResult = event(
  'tool/result',
  z.strictObject({ callId: Id, output: Json, isError: z.boolean() }),
)
/** A call of a tool that needs approval waits for a person's answer (docs/decisions/0029). */
export const ToolApprovalRequest = event('tool/approval-request', z.strictObject({ callId: Id }))
/** How long the reason a person gives for an answer may be. */
export const MAX_APPROVAL_REASON = 2000
/** What a person may ask an answer to cover besides this call. */
export const ApprovalScope = z.enum(['call', 'session', 'always'])
export type ApprovalScope = z.infer<typeof ApprovalScope>
/** A person's answer to a waiting call; `remember` records the scope they chose. */
export const ToolApproval = event(
  'tool/approval',
  z.strictObject({
    callId: Id,
    approved: z.boolean(),
    reason: z.string().max(MAX_APPROVAL_REASON).optional(),
    remember: ApprovalScope.optional(),
  }),
)
export const AssistantEnd = event(
  'assistant/end',
  z.strictObject({ messageId: Id, usage: Usage.optional(), finish: Finish }),
)
export const StepEnd = event(
  'step/end',
  z.strictObject({ turn: TurnNumber, step: StepNumber, usage: Usage.optional() }),
)
export const TurnEnd = event('turn/end', z.strictObject({ turn: TurnNumber, reason: TurnEndReason }))

/** Why the head moved (for readers; the tree fold does not look at it). docs/decisions/0033 */
export const HeadCause = z.enum(['rewind', 'switch', 'resend', 'regenerate'])
export type HeadCause = z.infer<typeof HeadCause>
/** The head moves to row `head` of this session (`null`: the empty path). Written by history verbs only. */
export const HistoryHead = event(
  'history/head',
  z.strictObject({
    head: Id.nullable(),
    cause: HeadCause,
    /** How many rows already hang under the new head (absent: none); the next row is their sibling. */
    children: z.number().int().positive().optional(),
  }),
)
/**
 * A `summary` row `messageId` is created under the head and becomes the head; it replaces the
 * active path's rows through `throughId` (`null`: none). Written by `compact` and `fork` only.
 */
export const HistoryCompact = event(
  'history/compact',
  z.strictObject({ messageId: Id, text: EventText, throughId: Id.nullable(), usage: Usage.optional() }),
)

/** An event as a writer hands it to `append`: no `seq`, no `at` (the engine stamps both). */
export const SessionEvent = z.discriminatedUnion('type', [
  SessionCreated,
  TurnStart,
  UserMessage,
  StepStart,
  AssistantStart,
  AssistantDelta,
  ToolCall,
  ToolResult,
  ToolApprovalRequest,
  ToolApproval,
  AssistantEnd,
  StepEnd,
  TurnEnd,
  HistoryHead,
  HistoryCompact,
])
export type SessionEvent = z.infer<typeof SessionEvent>
export type EventType = SessionEvent['type']
export type EventOf<T extends EventType> = Extract<SessionEvent, { type: T }>

/** An event as the log stores it. */
export type StoredEvent = SessionEvent & { sessionId: string; seq: number; at: number }
export type StoredEventOf<T extends EventType> = EventOf<T> & { sessionId: string; seq: number; at: number }

export const EVENT_TYPES = SessionEvent.options.map((o) => o.shape.type.value) as readonly EventType[]

const payloadSize = (value: Json): number => {
  const copied = copyJson(value, Number.POSITIVE_INFINITY)
  return copied.ok ? copied.size : 0
}

/** The measure MAX_APPEND_SIZE bounds: texts and tool payloads of `events`, summed. */
export function appendSize(events: readonly SessionEvent[]): number {
  let size = 0
  for (const e of events) {
    if (e.type === 'user/message' || e.type === 'history/compact') size += e.data.text.length
    else if (e.type === 'assistant/delta')
      size += (e.data.text?.length ?? 0) + (e.data.reasoning?.length ?? 0)
    else if (e.type === 'tool/call') size += payloadSize(e.data.input)
    else if (e.type === 'tool/result') size += payloadSize(e.data.output)
  }
  return size
}

/** What one `append` takes: at most MAX_APPEND_EVENTS events of at most MAX_APPEND_SIZE together. */
export const AppendEvents = z
  .array(SessionEvent)
  .max(MAX_APPEND_EVENTS, `more than ${MAX_APPEND_EVENTS} events in one append`)
  .refine((events) => appendSize(events) <= MAX_APPEND_SIZE, {
    message: `the events' texts and tool payloads are larger than ${MAX_APPEND_SIZE} together`,
  })
