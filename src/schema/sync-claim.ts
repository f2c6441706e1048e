/**
 * The messages beside batches on a session's stream that decide who runs its turns
 * (docs/decisions/0036, amendment "One runner across devices"):
 *
 * - `SyncClaim`: a device with a runner says it runs the session's turns until `at + ttlMs`,
 *   and says it again while it is live. The claim latest in stream order, while unexpired, names
 *   the session's runner on every device.
 * - `SyncInput`: an input admitted on a device that does not hold the claim, sent so the
 *   claimant admits it (by the same id) and runs it.
 *
 * @example
 *   const claim = SyncClaim.parse({ v: 1, kind: 'claim', device: 'laptop', at: Date.now(), ttlMs: 60_000 })
 */
import { z } from 'zod'
import { Delivery, Id, Timestamp } from './common'
import { MAX_INPUT_TEXT } from './limits'

export const SYNC_CLAIM_VERSION = 1

/** A device claims (or renews) the runner of a session until `at + ttlMs`. */
export const SyncClaim = z.strictObject({
  v: z.literal(SYNC_CLAIM_VERSION),
  kind: z.literal('claim'),
  /** The device that claims (its producer id on the stream). */
  device: Id,
  /** The claiming device's clock when it wrote the claim. */
  at: Timestamp,
  /** How long the claim holds without being said again, in ms. */
  ttlMs: z.number().int().positive(),
})
export type SyncClaim = z.infer<typeof SyncClaim>

/**
 * An input a device admitted while another device held the claim. Its attachments' bytes do not
 * travel: an input with attachments is not sent (it waits for its own device's runner).
 */
export const SyncInput = z.strictObject({
  v: z.literal(SYNC_CLAIM_VERSION),
  kind: z.literal('input'),
  /** The device that admitted it and holds its receipt. */
  device: Id,
  /** The device whose claim it was sent to (the claimant admits only what was sent to it). */
  to: Id,
  /** The receipt's id: the claimant admits it under this id, so its row is the receipt's row. */
  id: Id,
  text: z.string().min(1).max(MAX_INPUT_TEXT),
  delivery: Delivery,
  /** When it was sent, on the sending device's clock. */
  at: Timestamp,
})
export type SyncInput = z.infer<typeof SyncInput>

/** A stream message that coordinates the runner: a claim or an input. */
export const SyncCoordination = z.discriminatedUnion('kind', [SyncClaim, SyncInput])
export type SyncCoordination = z.infer<typeof SyncCoordination>
