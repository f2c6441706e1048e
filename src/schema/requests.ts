import { z } from 'zod'
import { Seq } from './common'
import { SessionMessage } from './messages'

/** Largest page `page` serves in one call. */
export const MAX_PAGE_LIMIT = 1000
export const DEFAULT_PAGE_LIMIT = 50
/** Page size `loadThrough` uses when none is given (docs/architecture.md §7). */
export const DEFAULT_JUMP_PAGE = 200

/**
 * A page of rows below `beforeSeq` (newest first: the `limit` rows just below it), or with
 * `afterSeq`, the `limit` rows just above `afterSeq` (and below `beforeSeq`, when given):
 * how a sparse window pages into a gap from its lower end.
 */
export const PageRequest = z.strictObject({
  beforeSeq: Seq.optional(),
  afterSeq: z.number().int().nonnegative().optional(),
  limit: z.number().int().positive().max(MAX_PAGE_LIMIT).default(DEFAULT_PAGE_LIMIT),
  includeInactive: z.boolean().default(false),
})
export type PageRequest = z.input<typeof PageRequest>

/**
 * How a watcher wants its changes. `textAppends`: a streaming row that only gained text since the
 * version this watcher last got arrives as a `TextAppend` in `appends`, not whole in `rows`, so
 * what crosses to the page grows with the answer, not with its square.
 */
export const WatchOptions = z.strictObject({
  textAppends: z.boolean().default(false),
})
export type WatchOptions = z.input<typeof WatchOptions>

export const LoadThroughRequest = z.strictObject({
  seq: z.number().int().nonnegative(),
  beforeSeq: Seq.optional(),
  pageSize: z.number().int().positive().max(MAX_PAGE_LIMIT).default(DEFAULT_JUMP_PAGE),
  includeInactive: z.boolean().default(false),
})
export type LoadThroughRequest = z.input<typeof LoadThroughRequest>

/**
 * A view's first read (`Engine.firstRead`): the tail page of `tail` rows, or, with `seq`, every
 * row from `seq` up filled to a page of `pageSize` as `loadThrough` reads them (the tail after
 * all when that leaves older rows and fewer than `tail`: a `seq` above every row).
 */
export const FirstReadRequest = z.strictObject({
  tail: z.number().int().positive().max(MAX_PAGE_LIMIT).default(DEFAULT_PAGE_LIMIT),
  seq: z.number().int().nonnegative().optional(),
  pageSize: z.number().int().positive().max(MAX_PAGE_LIMIT).optional(),
  includeInactive: z.boolean().default(false),
})
export type FirstReadRequest = z.input<typeof FirstReadRequest>

/** Outline entries `outline` reads when no range is given: the newest ones, a rail's first screen. */
export const DEFAULT_OUTLINE_SLICE = 200

/**
 * A range of positions in a session's turn outline, `start` (inclusive) to `end` (exclusive),
 * clamped to the outline. Without `start`: the DEFAULT_OUTLINE_SLICE entries just below `end`
 * (the outline's end when none is given), so `{}` reads the newest entries.
 */
export const OutlineRequest = z
  .strictObject({
    start: z.number().int().nonnegative().optional(),
    end: z.number().int().nonnegative().optional(),
  })
  .refine((r) => r.start === undefined || r.end === undefined || r.start <= r.end, {
    message: 'start must not be past end',
    path: ['start'],
  })
export type OutlineRequest = z.input<typeof OutlineRequest>

export const EventsRequest = z.strictObject({
  afterSeq: z.number().int().nonnegative().default(0),
  limit: z.number().int().positive().max(10_000).default(1000),
})
export type EventsRequest = z.input<typeof EventsRequest>

/** A window of transcript rows, ascending by seq. `baseSeq` is the lowest seq returned (0 when empty). */
export const MessagePage = z.strictObject({
  messages: z.array(SessionMessage),
  baseSeq: z.number().int().nonnegative(),
  headSeq: z.number().int().nonnegative(),
  hasOlder: z.boolean(),
  /** Pages read with `afterSeq` only: another readable row exists above the last returned (below `beforeSeq`). */
  hasNewer: z.boolean().optional(),
})
export type MessagePage = z.infer<typeof MessagePage>

export const PromoteMode = z.enum(['checkpoint', 'settled'])
export type PromoteMode = z.infer<typeof PromoteMode>
