/**
 * What session sync puts on a Durable Streams stream, and what `engine.sync`, `unsync` and
 * `syncStatus` take and answer (docs/architecture.md §11, docs/decisions/0036).
 *
 * A session's stream is a JSON stream of messages; each message this library writes is one
 * `SyncBatch`: a settled run of one device's log (it starts and ends with no turn open), with
 * where the device stood when it wrote it (`parentHead`, `baseTurn`) so every reader can place
 * it on the history tree the same way.
 *
 * @example
 *   const batch = SyncBatch.parse(JSON.parse(message))
 *   await engine.sync('s1', { url: 'https://streams.example.com', deviceId: 'laptop' })
 */
import { z } from 'zod'
import { Id, Timestamp } from './common'
import type { ErrorCode } from './errors'
import { SessionEvent } from './events'

/** An event as a batch carries it: the authored event and the time its device stamped on it. */
export type SyncEvent = SessionEvent & { at: number }

const SyncEventSchema = z.looseObject({ at: Timestamp }).transform((value, ctx): SyncEvent => {
  const { at, ...rest } = value
  const parsed = SessionEvent.safeParse(rest)
  if (!parsed.success) {
    ctx.addIssue({ code: 'custom', message: parsed.error.issues[0]?.message ?? 'not an event' })
    return z.NEVER
  }
  return { ...parsed.data, at }
})

export const SYNC_BATCH_VERSION = 1

/** One message of a session's stream: a settled run of events one device wrote. */
export const SyncBatch = z.strictObject({
  v: z.literal(SYNC_BATCH_VERSION),
  kind: z.literal('batch'),
  /** The device that wrote it (its producer id on the stream). */
  device: Id,
  /** Unique per device: a batch sent twice (by a restarted engine) is folded once. */
  batchId: Id,
  /** The head row of the device's log before these events (`null`: the empty path). */
  parentHead: Id.nullable(),
  /** The last turn number of the device's log before these events (0: none). */
  baseTurn: z.number().int().nonnegative(),
  events: z.array(SyncEventSchema).min(1),
})
export type SyncBatch = z.infer<typeof SyncBatch>

/** `engine.sync(sessionId, options)`: the Durable Streams server and this device's id. */
export const SyncOptions = z.strictObject({
  /** The server's base URL, http or https (the stream is `${url}/v1/stream/sessionline/<sessionId>`). */
  url: z.url({ protocol: /^https?$/, error: 'url must be an http or https URL' }),
  /** This device's producer id on the stream (default: one made once and kept in the database). */
  deviceId: Id.optional(),
})
export type SyncOptions = z.infer<typeof SyncOptions>

/**
 * Where a synced session stands: `live` (caught up, nothing to send), `pulling`, `pushing`,
 * `offline` (the server cannot be reached; retrying), `fenced` (a newer engine took over this
 * device's pushing) or `error` (the stream is gone or unusable; see `error`).
 */
export const SyncStateName = z.enum(['live', 'offline', 'pushing', 'pulling', 'fenced', 'error'])
export type SyncStateName = z.infer<typeof SyncStateName>

/** What went wrong with a request to the stream, by what the sync does about it. */
export const StreamFailureKind = z.enum([
  /** No answer (network down, request lost): retry later, `offline`. */
  'network',
  /** 429 or 5xx: retry after `retryAfterMs` or a backoff, `offline`. */
  'busy',
  /** 403: a newer engine pushes for this device (its epoch is higher): `fenced`, stopped. */
  'fenced',
  /** 409 with `Producer-Expected-Seq`: send again with that seq. */
  'gap',
  /** 404: the stream does not exist (deleted, or never created): `error`, stopped. */
  'not_found',
  /** 410: the offset is older than what the server retains: `error`, stopped. */
  'gone',
  /**
   * The stream was closed (end of stream: it takes no more appends, what it holds stays
   * readable): `error`, stopped once what it holds is read; this device's events stay pending.
   */
  'closed',
  /**
   * What the stream holds cannot be stored here: its rows take ids another session of this
   * database holds (a stream forked on the server from a session this device holds): `error`,
   * stopped; nothing of it applied.
   */
  'conflict',
  /** An answer the protocol does not allow (a body that is not a JSON array, a missing header): retried, `error`. */
  'bad_response',
  /** Another 4xx: the server refused the request itself: `error`, stopped. */
  'refused',
  /** This device's own storage failed (IndexedDB unavailable for a moment): retried, `error`. */
  'local',
])
export type StreamFailureKind = z.infer<typeof StreamFailureKind>

/**
 * `SyncStatus.error.code`: the kind of the stream failure, `dropped` (a batch of this device no
 * longer folds), or the engine's error code when the sync could not start.
 */
export type SyncErrorCode = StreamFailureKind | 'dropped' | ErrorCode

/** `engine.syncStatus(sessionId)` and a view snapshot's `sync`. */
export interface SyncStatus {
  state: SyncStateName
  /** Local events not yet confirmed by the stream. */
  pending: number
  /** Stream messages that could not be folded (garbage, unknown events, a broken grammar), skipped. */
  skipped?: number
  /** Why the state is `error` or `fenced`, or what the last failure was. */
  error?: { code: SyncErrorCode; message: string }
  /**
   * The device whose runner claim holds (it runs the session's turns across devices,
   * docs/decisions/0036 amendment); absent when none does. Answered by `syncStatus` only.
   */
  runner?: string
}
