/**
 * One runner per synced session across devices (docs/decisions/0036, amendment "One runner
 * across devices"), the part of a session's sync loop that follows the stream's claims:
 *
 * - a device whose engine runs turns claims the session when no other device's claim holds and
 *   it has something to run (an input pending here, a turn of its own not yet confirmed) or had
 *   lately (`lingerMs`; starting to sync counts), and says its claim again half-way through its
 *   ttl while that lasts. An idle claimant stops saying it and its claim lapses: an idle session
 *   appends nothing and wakes no device;
 * - while another device's claim holds and the stream answers, this engine's runner is held
 *   back (`setRunnerGate`) and this device's pending inputs travel as input records to the
 *   claimant, which admits them under their ids and runs them (and, having something to run,
 *   says its claim again). An input is sent only while the claim has a quarter of its ttl
 *   left: one sent later could reach a claimant whose idle claim lapsed meanwhile while its
 *   sender, seeing the lapse, claims and runs it too. It waits for the lapse instead, and its
 *   device claims then;
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
import {
  admitsInput,
  type ClaimFold,
  type Coordination,
  claimantAt,
  claimDue,
  claimExpiry,
  inputTarget,
} from '../core/sync-claim'
import type { SyncHost } from '../engine/types'
import { isSessionlineError } from '../schema/errors'
import { SYNC_CLAIM_VERSION, type SyncClaim, type SyncInput } from '../schema/sync-claim'
import { promoteArrived, readPending } from '../store/sync-claim'

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
  /**
   * How long after it last had something to run this device still says its claim (default: the
   * ttl). Starting counts as having had something, so a device that starts syncing claims a
   * session nobody holds.
   */
  lingerMs?: number
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
   * A round at the stream's tail: claims or renews when due and this device has something to
   * run (its pending inputs, or `localWork`: events of its own not yet confirmed, a running
   * turn's among them) or had lately, sets the runner's gate, sends this device's pending inputs
   * to another claimant. Answers when to look again (ms on the host's clock: a renewal this
   * device may make, or the lapse of another's claim while an input waits here), or undefined.
   */
  round(localWork: boolean): Promise<number | undefined>
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
  const lingerMs = options.lingerMs ?? ttlMs
  let claim = options.initial
  /**
   * Input id → the claimant it was sent to, and whether its claim had lapsed then: sent again
   * when the claim moves to another device (or, from a device that runs no turns, lapses).
   */
  const sentTo = new Map<string, { to: string; lapsed: boolean }>()
  /** Until when this device says its claim though it has nothing to run (see `lingerMs`). */
  let activeUntil = host.now() + lingerMs

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
      // Admitted here, the input is pending: this device has something to run and says its
      // claim again next round (at once when half its ttl has gone).
      const now = host.now()
      await admitSent(
        folded.inputs.filter((input) => admitsInput(claim, device, now, host.runsTurns(), input)),
      )
      // Rows only arrive in batches: a pull of claims and inputs leaves the receipts as they are.
      if (rowsArrived || sweepOwed) await sweep()
    },

    sweep,

    async round(localWork) {
      clearLapse()
      const now = host.now()
      // A device that runs no turns and knows no claimant has nothing to claim and nowhere to send.
      const pending = host.runsTurns() || claim !== null ? await readPending(host.db, sessionId) : []
      const busy = localWork || pending.length > 0
      if (busy) activeUntil = Math.max(activeUntil, now + lingerMs)
      const keen = busy || now < activeUntil
      if (keen && host.runsTurns() && claimDue(claim, device, now, ttlMs)) {
        const said: SyncClaim = { v: SYNC_CLAIM_VERSION, kind: 'claim', device, at: now, ttlMs }
        await post(said)
        // Read back with the next pull; a later claim by another device then wins there.
        claim = { device, at: now, ttlMs }
      }
      gate()
      if (claim === null) return undefined
      const holder = claimantAt(claim, now)
      if (holder === device) {
        // Looks again at renewal time only if it may renew then.
        const renewAt = claim.at + Math.min(claim.ttlMs, ttlMs) / 2
        return busy || renewAt < activeUntil ? renewAt : undefined
      }
      // Another device runs the session (or ran it last, for a device that runs no turns).
      const target = inputTarget(claim, device, now, host.runsTurns())
      for (const input of target ? pending : []) {
        const { to, lapsed } = target!
        const sent = sentTo.get(input.id)
        // Attachments' bytes do not travel: such an input waits for a runner here.
        if (input.attachments?.length || (sent?.to === to && (sent.lapsed || !lapsed))) continue
        await post({
          v: SYNC_CLAIM_VERSION,
          kind: 'input',
          device,
          to,
          id: input.id,
          text: input.text,
          delivery: input.delivery,
          at: now,
        })
        sentTo.set(input.id, { to, lapsed })
      }
      // With an input waiting here, look again when the claim lapses: this device claims then.
      return busy && holder !== null ? claimExpiry(claim) : undefined
    },

    async offline() {
      clearLapse()
      const now = host.now()
      const holder = claimantAt(claim, now)
      if (claim !== null && holder !== null && holder !== device) {
        const waiting = await readPending(host.db, sessionId).catch(() => [])
        if (waiting.some((input) => sentTo.get(input.id)?.to === holder)) {
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
