/**
 * One runner per synced session across devices (docs/decisions/0036, amendment "One runner
 * across devices"), the part of a session's sync loop that follows the stream's claims:
 *
 * - a device whose engine runs turns claims the session when no other device's claim holds,
 *   and says its claim again while it is live (half-way through its ttl);
 * - while another device's claim holds and the stream answers, this engine's runner is held
 *   back (`setRunnerGate`) and this device's pending inputs travel as input records to the
 *   claimant, which admits them under their ids and runs them;
 * - a receipt here whose row arrives from the claimant is promoted into it;
 * - when the stream does not answer (offline, error, stopped) the gate opens: this device runs
 *   its own turns as on one device, and they become branches if others ran meanwhile.
 *
 * @example
 *   const claims = createRunnerClaim({ host, sessionId, device, ttlMs, post, initial })
 *   const folded = foldCoordination(claims.claim, read.messages) // committed with the cursor
 *   await claims.afterPull(folded, rowsArrived)   // after each committed pull
 *   const wakeAt = await claims.round()           // each round at the tail
 */
import { type ClaimFold, type Coordination, claimantAt, claimDue, claimExpiry } from '../core/sync-claim'
import type { SyncHost } from '../engine/types'
import { isSessionlineError } from '../schema/errors'
import { SYNC_CLAIM_VERSION, type SyncClaim, type SyncInput } from '../schema/sync-claim'
import { promoteArrived } from '../store/sync-claim'

/** How long a claim holds unless said again (default of `SessionSyncOptions.claimTtlMs`). */
export const DEFAULT_CLAIM_TTL_MS = 30_000

export interface RunnerClaimOptions {
  host: SyncHost
  sessionId: string
  /** This device's id on the stream. */
  device: string
  ttlMs: number
  /** Appends one message to the session's stream. */
  post(message: SyncClaim | SyncInput): Promise<void>
  /** The claim kept with the cursor (folded through the stored offset). */
  initial: ClaimFold
}

export interface RunnerClaim {
  /**
   * After a committed pull, with what its messages said (`foldCoordination` from `claim`, kept
   * with the cursor in the pull's transaction): the claim moves, inputs sent here are admitted,
   * and when rows arrived (`rowsArrived`) receipts they answer are promoted.
   */
  afterPull(folded: Coordination, rowsArrived: boolean): Promise<void>
  /**
   * Promotes the receipts whose rows arrived: once when the loop starts (rows may have arrived
   * before this engine stopped), then after each pull that brought rows, and again after one
   * whose promotion failed.
   */
  sweep(): Promise<void>
  /**
   * A round at the stream's tail: claims or renews when due, sets the runner's gate, sends this
   * device's pending inputs to another claimant. Answers when to look again (ms on the host's
   * clock: a renewal or a lapse), or undefined.
   */
  round(): Promise<number | undefined>
  /**
   * The stream does not answer: this device runs its own turns, except while an input it sent
   * to the claimant waits and that claim holds (the claimant is likely answering it; running it
   * here too would answer it twice). The gate then opens when the claim lapses.
   */
  offline(): Promise<void>
  /** The loop ends (`unsync`, closing, fenced, error): this device runs its own turns now. */
  release(): void
  /** The claim as folded (tests, status). */
  readonly claim: ClaimFold
}

export function createRunnerClaim(options: RunnerClaimOptions): RunnerClaim {
  const { host, sessionId, device, ttlMs, post } = options
  let claim = options.initial
  /** Input id → the claimant it was sent to: sent again when the claim moves to another device. */
  const sentTo = new Map<string, string>()

  /** Opens the gate when the claim an offline device's sent inputs wait on lapses. */
  let lapse: ReturnType<typeof setTimeout> | undefined
  const clearLapse = () => {
    clearTimeout(lapse)
    lapse = undefined
  }

  function gate(): void {
    // The runner opens no turns here while another device's claim holds.
    const holder = claimantAt(claim, host.now())
    host.setRunnerGate(sessionId, holder === null || holder === device)
  }

  gate()

  async function admitSent(inputs: readonly SyncInput[]): Promise<void> {
    for (const input of inputs) {
      if (input.to !== device || input.device === device) continue
      try {
        await host.engine.admit(sessionId, { id: input.id, text: input.text, delivery: input.delivery })
      } catch (error) {
        // Already here (sent twice, or its row is in the log): the engine's admit rules answer.
        if (!isSessionlineError(error)) throw error
      }
    }
  }

  /** A sweep is owed until one succeeds (a pull that failed after its commit left one). */
  let sweepOwed = true
  async function sweep(): Promise<void> {
    sweepOwed = true
    const promoted = await promoteArrived(host.db, sessionId, host.now())
    sweepOwed = false
    if (promoted.length > 0) {
      for (const receipt of promoted) sentTo.delete(receipt.id)
      await host.inputsChanged(sessionId)
    }
  }

  return {
    get claim() {
      return claim
    },

    async afterPull(folded, rowsArrived) {
      claim = folded.claim
      // Sent while this device's claim held: admitted unless another device's claim holds now
      // (its sender sends it there too); a lapsed claim of ours is said again next round.
      const holder = claimantAt(claim, host.now())
      if (holder === device || (holder === null && host.runsTurns())) await admitSent(folded.inputs)
      // Rows only arrive in batches: a pull of claims and inputs leaves the receipts as they are.
      if (rowsArrived || sweepOwed) await sweep()
    },

    sweep,

    async round() {
      clearLapse()
      const now = host.now()
      if (host.runsTurns() && claimDue(claim, device, now, ttlMs)) {
        const said: SyncClaim = { v: SYNC_CLAIM_VERSION, kind: 'claim', device, at: now, ttlMs }
        await post(said)
        // Read back with the next pull; a later claim by another device then wins there.
        claim = { device, at: now, ttlMs }
      }
      gate()
      const holder = claimantAt(claim, now)
      if (holder === null || claim === null) return undefined
      if (holder === device) return claim.at + Math.min(claim.ttlMs, ttlMs) / 2
      for (const input of await host.engine.pending(sessionId)) {
        // Attachments' bytes do not travel: such an input waits for a runner here.
        if (input.attachments?.length || sentTo.get(input.id) === holder) continue
        await post({
          v: SYNC_CLAIM_VERSION,
          kind: 'input',
          device,
          to: holder,
          id: input.id,
          text: input.text,
          delivery: input.delivery,
          at: now,
        })
        sentTo.set(input.id, holder)
      }
      return claimExpiry(claim)
    },

    async offline() {
      clearLapse()
      const now = host.now()
      const holder = claimantAt(claim, now)
      if (claim !== null && holder !== null && holder !== device) {
        const waiting = await host.engine.pending(sessionId).catch(() => [])
        if (waiting.some((input) => sentTo.get(input.id) === holder)) {
          host.setRunnerGate(sessionId, false)
          lapse = setTimeout(() => host.setRunnerGate(sessionId, true), claimExpiry(claim) - now)
          return
        }
      }
      host.setRunnerGate(sessionId, true)
    },

    release() {
      clearLapse()
      host.setRunnerGate(sessionId, true)
    },
  }
}
