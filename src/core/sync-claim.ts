/**
 * Who runs a synced session's turns (docs/decisions/0036, amendment "One runner across
 * devices"): a pure fold of the stream's claims in stream order, like the batches' fold. The
 * claim latest in stream order holds until its own `at + ttlMs`; a claimant renews it while it
 * is live, so a device that died or lost the server lets it lapse and another takes over.
 *
 * The fold is the same on every device; whether the claim still holds is read against the
 * reader's clock (`claimantAt`), so devices' clocks must agree within a small part of the ttl.
 *
 * @example
 *   const { claim, inputs } = foldCoordination(state.claim, read.messages)
 *   if (claimantAt(claim, Date.now()) === myDevice) ...
 */
import { type SyncClaim, SyncCoordination, type SyncInput } from '../schema/sync-claim'

/** The latest claim of a session's stream, as every device folds it. */
export type ClaimFold = Pick<SyncClaim, 'device' | 'at' | 'ttlMs'> | null

/** What a run of stream messages says about the runner: the claim after them, the inputs in them. */
export interface Coordination {
  claim: ClaimFold
  inputs: SyncInput[]
}

/** Whether a stream message is a claim or an input (not a batch, not garbage). */
export const isCoordination = (message: unknown): boolean => SyncCoordination.safeParse(message).success

/** Folds stream messages (any JSON, in stream order) after `claim`: the later claim wins. */
export function foldCoordination(claim: ClaimFold, messages: Iterable<unknown>): Coordination {
  let latest = claim
  const inputs: SyncInput[] = []
  for (const message of messages) {
    const parsed = SyncCoordination.safeParse(message)
    if (!parsed.success) continue
    if (parsed.data.kind === 'claim') {
      const { device, at, ttlMs } = parsed.data
      latest = { device, at, ttlMs }
    } else inputs.push(parsed.data)
  }
  return { claim: latest, inputs }
}

/** When the claim lapses (ms on the claimant's clock). */
export const claimExpiry = (claim: NonNullable<ClaimFold>): number => claim.at + claim.ttlMs

/** The device that runs the session's turns at `now`, or null when no claim holds. */
export function claimantAt(claim: ClaimFold, now: number): string | null {
  if (claim === null || now >= claimExpiry(claim)) return null
  return claim.device
}

/**
 * Whether `device` may say its claim now: no other device's claim holds, and its own (if it
 * holds) has run half its ttl. Whether it says it is the caller's: a device that runs turns and
 * has something to run (src/sync/runner-claim.ts), so a busy claimant's claim never lapses.
 */
export function claimDue(claim: ClaimFold, device: string, now: number, ttlMs: number): boolean {
  const holder = claimantAt(claim, now)
  if (holder === null) return true
  if (holder !== device) return false
  return now >= claim!.at + Math.min(claim!.ttlMs, ttlMs) / 2
}

/**
 * Where `device` sends its pending inputs at `now`, or null: to another device whose claim
 * holds with a quarter of its ttl left (an idle claim in its last quarter may lapse before its
 * holder reads the record and renews, while this device claims at the lapse and runs the input
 * too: the input waits for the lapse instead); and, from a device that runs no turns (it cannot
 * claim), to the device whose claim lapsed (`lapsed`), since nobody else would run it.
 */
export function inputTarget(
  claim: ClaimFold,
  device: string,
  now: number,
  runsTurns: boolean,
): { to: string; lapsed: boolean } | null {
  if (claim === null || claim.device === device) return null
  const holder = claimantAt(claim, now)
  if (holder === null) return runsTurns ? null : { to: claim.device, lapsed: true }
  return claimExpiry(claim) - now > claim.ttlMs / 4 ? { to: holder, lapsed: false } : null
}

/**
 * Whether `device` admits (and runs) an input record it reads at `now`, the claim folded
 * through it: one sent to it while its claim holds here, or one sent to its lapsed claim after
 * the lapse (`inputTarget` of a device that runs no turns) while no other claim holds. A record
 * sent before the lapse and read after it is its sender's to run: the sender has it pending,
 * claims at the lapse and runs it.
 */
export function admitsInput(
  claim: ClaimFold,
  device: string,
  now: number,
  runsTurns: boolean,
  input: Pick<SyncInput, 'device' | 'to' | 'at'>,
): boolean {
  if (input.to !== device || input.device === device || claim === null || claim.device !== device)
    return false
  if (claimantAt(claim, now) === device) return true
  return runsTurns && input.at >= claimExpiry(claim)
}
