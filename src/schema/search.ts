import { z } from 'zod'
import { Id, Seq } from './common'
import { MessageRole } from './messages'

/** Largest number of hits one search returns. */
export const MAX_SEARCH_LIMIT = 500
export const DEFAULT_SEARCH_LIMIT = 20

export const SearchQuery = z.string().max(1000)

export const SearchOptions = z.strictObject({
  /** Only this session; every session when left out. */
  sessionId: Id.optional(),
  limit: z.number().int().positive().max(MAX_SEARCH_LIMIT).default(DEFAULT_SEARCH_LIMIT),
  /** Also rows attested as superseded (abandoned branches, compacted history). */
  includeInactive: z.boolean().default(false),
})
export type SearchOptions = z.input<typeof SearchOptions>

/**
 * One row that matches a search, best first. `snippet` is a short excerpt of the row's text
 * around the first match (an ellipsis marks a cut); `ranges` are the `[start, end)` offsets of
 * the matched words inside `snippet`. Higher `score` is better; scores compare within one answer.
 */
export const SearchHit = z.strictObject({
  sessionId: Id,
  messageId: Id,
  seq: Seq,
  turn: z.number().int().nonnegative(),
  role: MessageRole,
  snippet: z.string(),
  ranges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])),
  score: z.number(),
})
export type SearchHit = z.infer<typeof SearchHit>
