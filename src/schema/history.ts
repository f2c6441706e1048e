/**
 * What the history verbs take and answer on the engine's surface (DESIGN.md §11,
 * docs/decisions/0033).
 */
import { z } from 'zod'
import { Id, MAX_INPUT_TEXT } from './common'
import type { SessionMessage } from './messages'

/** `resend(sessionId, messageId, request)`: the prompt's new text, and its input id (default: a new one). */
export const ResendRequest = z.strictObject({
  text: z
    .string()
    .max(MAX_INPUT_TEXT, `text is longer than ${MAX_INPUT_TEXT} characters`)
    .refine((t) => t.trim().length > 0, 'text is empty'),
  id: Id.optional(),
})
export type ResendRequest = z.infer<typeof ResendRequest>

/** `rewind`'s answer: the text of the prompt rewound, for the composer. */
export interface RewindAnswer {
  text: string
}

/** `context(sessionId)`'s answer: the rows the model gets at the next step, in the order it gets them. */
export interface ContextAnswer {
  rows: SessionMessage[]
}
