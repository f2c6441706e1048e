import { z } from 'zod'
import { Delivery, Id, Json, MessageSource, StepNumber, TurnNumber, Usage } from './common'

const event = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.strictObject({ type: z.literal(type), data })

export const Finish = z.enum(['stop', 'tool-calls', 'length', 'aborted', 'error'])
export type Finish = z.infer<typeof Finish>
export const TurnEndReason = z.enum(['completed', 'aborted', 'error', 'interrupted'])
export type TurnEndReason = z.infer<typeof TurnEndReason>

export const SessionCreated = event('session/created', z.strictObject({ title: z.string().max(500) }))
export const TurnStart = event('turn/start', z.strictObject({ turn: TurnNumber }))
export const UserMessage = event(
  'user/message',
  z.strictObject({ inputId: Id, text: z.string(), delivery: Delivery, source: MessageSource }),
)
export const StepStart = event('step/start', z.strictObject({ turn: TurnNumber, step: StepNumber }))
export const AssistantStart = event(
  'assistant/start',
  z.strictObject({ messageId: Id, turn: TurnNumber, step: StepNumber }),
)
export const AssistantDelta = event(
  'assistant/delta',
  z
    .strictObject({ messageId: Id, text: z.string().optional(), reasoning: z.string().optional() })
    .refine((d) => d.text !== undefined || d.reasoning !== undefined, {
      message: 'needs text or reasoning',
      path: ['text'],
    }),
)
export const ToolCall = event(
  'tool/call',
  z.strictObject({ messageId: Id, callId: Id, name: z.string().min(1), input: Json }),
)
export const ToolResult = event(
  'tool/result',
  z.strictObject({ callId: Id, output: Json, isError: z.boolean() }),
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
  AssistantEnd,
  StepEnd,
  TurnEnd,
])
export type SessionEvent = z.infer<typeof SessionEvent>
export type EventType = SessionEvent['type']
export type EventOf<T extends EventType> = Extract<SessionEvent, { type: T }>

/** An event as the log stores it. */
export type StoredEvent = SessionEvent & { sessionId: string; seq: number; at: number }
export type StoredEventOf<T extends EventType> = EventOf<T> & { sessionId: string; seq: number; at: number }

export const EVENT_TYPES = SessionEvent.options.map((o) => o.shape.type.value) as readonly EventType[]
