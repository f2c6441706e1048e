/**
 * What the history verbs take and answer on the engine's surface (docs/architecture.md §11,
 * docs/decisions/0033).
 */
import { z } from 'zod'
import { Delivery, Id, MAX_INPUT_TEXT, Seq } from './common'
import { Title } from './events'
import { MAX_EVENT_TEXT } from './limits'
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

/**
 * `branches(sessionId, messageId)`'s answer: the row and its siblings (the rows under the same
 * parent in the history tree), in creation order, so `ids[branch.index]` is the row itself and a
 * picker's arrows name the rows to `switchBranch` to.
 */
export interface BranchesAnswer {
  ids: string[]
}

/** `context(sessionId)`'s answer: the rows the model gets at the next step, in the order it gets them. */
export interface ContextAnswer {
  rows: SessionMessage[]
}

/**
 * `compact(sessionId, request)`: the summary that replaces the active path through the row at or
 * below `throughSeq` (default: all of it). Without `summary`, the engine's provider writes it
 * from the context it replaces (docs/decisions/0033, amendment).
 */
export const CompactRequest = z.strictObject({
  throughSeq: Seq.optional(),
  /** The summary row's id (default: a new one). */
  id: Id.optional(),
  summary: z
    .string()
    .max(MAX_EVENT_TEXT, `summary is longer than ${MAX_EVENT_TEXT} characters`)
    .refine((t) => t.trim().length > 0, 'summary is empty')
    .optional(),
})
export type CompactRequest = z.infer<typeof CompactRequest>

/**
 * `createEngine({compaction})`: compact before a turn whose context is estimated above
 * `contextTokens`, keeping about `keepTokens` of the newest context (less than `contextTokens`,
 * or every compaction would leave the context over budget).
 */
export const CompactionBudget = z
  .strictObject({
    contextTokens: z.number().int().positive(),
    keepTokens: z.number().int().nonnegative(),
  })
  .refine((b) => b.keepTokens < b.contextTokens, {
    message: 'keepTokens must be less than contextTokens',
    path: ['keepTokens'],
  })
export type CompactionBudget = z.infer<typeof CompactionBudget>

/** `reorder(sessionId, inputId, request)`: the pending input to stand before (`null`: the end). */
export const ReorderRequest = z.strictObject({ before: Id.nullable() })
export type ReorderRequest = z.infer<typeof ReorderRequest>

/** `setDelivery(sessionId, inputId, delivery)`: a steer (answered inside the running turn) or queued. */
export const SetDeliveryRequest = Delivery

/** `fork(sessionId, request)`: how much of the source's visible path, and the new session's title and id. */
export const ForkRequest = z.strictObject({
  throughSeq: Seq.optional(),
  /** Default: the source's title. */
  title: Title.optional(),
  /** Default: a new one. */
  id: Id.optional(),
})
export type ForkRequest = z.infer<typeof ForkRequest>

/**
 * The stored history tree of an imported session (docs/decisions/0037): its rows as nodes in the
 * order the file created them (a parent before its children), the head the session shows, and
 * the head the file itself named at import (a re-import keeps a chosen head only while the file
 * still names that one).
 */
export const ImportedTree = z
  .strictObject({
    head: Id.nullable(),
    fileHead: Id.nullable(),
    nodes: z.array(
      z.strictObject({
        id: Id,
        parent: Id.nullable(),
        /** A compaction: the last row of its path it replaces (`null`: none). */
        through: Id.nullable().optional(),
        /** A copy of an earlier message the compaction `copyOf` carries. */
        copyOf: Id.optional(),
        /** On the path but never shown (an empty branch summary). */
        silent: z.literal(true).optional(),
      }),
    ),
  })
  .refine((tree) => new Set(tree.nodes.map((n) => n.id)).size === tree.nodes.length, 'node ids repeat')
export type ImportedTree = z.infer<typeof ImportedTree>
