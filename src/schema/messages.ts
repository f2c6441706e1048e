import { z } from 'zod'
import { FilePart } from './attachments'
import { Delivery, Id, Json, MessageSource, Seq, StepNumber, Timestamp, Usage, Visibility } from './common'
import { Finish } from './events'

export const TextPart = z.strictObject({ type: z.literal('text'), text: z.string() })
export const ReasoningPart = z.strictObject({ type: z.literal('reasoning'), text: z.string() })
/**
 * `running` until its result arrives; `interrupted` when the turn ended first. A call of a tool
 * that needs approval is `awaiting-approval` until a person answers: `running` once approved,
 * `denied` (with an error output the model is told) when not.
 */
export const ToolState = z.enum(['running', 'done', 'error', 'interrupted', 'awaiting-approval', 'denied'])
export type ToolState = z.infer<typeof ToolState>
export const ToolPart = z.strictObject({
  type: z.literal('tool'),
  callId: Id,
  name: z.string(),
  input: Json,
  output: Json.optional(),
  isError: z.boolean().optional(),
  state: ToolState,
  /** Imported: the session of the sub-agent this call ran. */
  agentSessionId: Id.optional(),
})
export const MessagePart = z.discriminatedUnion('type', [TextPart, ReasoningPart, ToolPart, FilePart])
export type TextPart = z.infer<typeof TextPart>
export type ReasoningPart = z.infer<typeof ReasoningPart>
export type ToolPart = z.infer<typeof ToolPart>
export type MessagePart = z.infer<typeof MessagePart>

export const MessageRole = z.enum(['user', 'assistant', 'system', 'summary'])
export type MessageRole = z.infer<typeof MessageRole>

/** `streaming` while an assistant message is open; user rows are `complete` when written. */
export const MessageStatus = z.enum(['streaming', 'complete', 'interrupted', 'error'])
export type MessageStatus = z.infer<typeof MessageStatus>

/**
 * A transcript row (`session_message`). `seq` is the seq of the event that created the row and
 * never changes; `id` of a promoted user row is its input id.
 */
export const SessionMessage = z.strictObject({
  id: Id,
  sessionId: Id,
  seq: Seq,
  role: MessageRole,
  turn: z.number().int().nonnegative(),
  parts: z.array(MessagePart),
  status: MessageStatus,
  visibility: Visibility,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  usage: Usage.optional(),
  /** user rows: who authored it. */
  source: MessageSource.optional(),
  /** assistant rows: the step that produced it and how it finished. */
  step: StepNumber.optional(),
  finish: Finish.optional(),
  /** imported rows: what the provider file said of it. */
  model: z.string().optional(),
  agentId: z.string().optional(),
  isMeta: z.boolean().optional(),
  parentId: z.string().optional(),
  /** Imported user rows: how the prompt reached the model (`steer`: typed while it worked). */
  delivery: Delivery.optional(),
  /** Imported: a slash command the user ran, by name and arguments. */
  command: z.strictObject({ name: z.string(), args: z.string() }).optional(),
  /** Imported: shown to the user but never sent to the model (docs/decisions/0009). */
  excludedFromContext: z.literal(true).optional(),
  /**
   * Rows with siblings (other rows under the same parent in the history tree): this row's place
   * among them, 0-based in creation order, and how many there are (docs/decisions/0033).
   */
  branch: z
    .strictObject({ index: z.number().int().nonnegative(), count: z.number().int().min(2) })
    .optional(),
})
export type SessionMessage = z.infer<typeof SessionMessage>

/**
 * Text streamed onto a row a watcher already holds (`watch(…, { textAppends: true })`): `text`
 * goes at the end of part `part` of row `id`, whose text was `from` characters long, or starts a
 * new part of `type` when `part` is the row's part count (`from` 0). Nothing else of the row
 * changed but `updatedAt`.
 */
export const TextAppend = z.strictObject({
  id: Id,
  seq: Seq,
  part: z.number().int().nonnegative(),
  type: z.enum(['text', 'reasoning']),
  from: z.number().int().nonnegative(),
  text: z.string(),
  updatedAt: Timestamp,
})
export type TextAppend = z.infer<typeof TextAppend>
