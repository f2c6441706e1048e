/**
 * Pure rules of the inbox view: which receipts are pending, in what order, and which of them a
 * promotion takes (docs/architecture.md §5). Receipts come from the `inputs` table; nothing here reads it.
 */
import type { InputReceipt } from '../schema/inputs'
import type { PromoteMode } from '../schema/requests'

/** Inbox order: a reordered receipt's rank, else its admission seq; ties by admission. */
export const placeOf = (receipt: InputReceipt): number => receipt.rank ?? receipt.seq
const byAdmission = (a: InputReceipt, b: InputReceipt) => placeOf(a) - placeOf(b) || a.seq - b.seq

/** Pending receipts in inbox order: admission order unless `reorder` moved some (the `pending` projection's view). */
export function pendingView(receipts: Iterable<InputReceipt>): InputReceipt[] {
  return [...receipts].filter((receipt) => receipt.status === 'pending').sort(byAdmission)
}

/**
 * The pending view after some receipts changed (admitted, edited, promoted, cancelled): `changed`
 * replaces receipts by id. Returns `current` itself when the view is the same, so the identity
 * gate pushes nothing.
 */
export function mergePending(
  current: readonly InputReceipt[],
  changed: Iterable<InputReceipt>,
): readonly InputReceipt[] {
  const byId = new Map(current.map((receipt) => [receipt.id, receipt]))
  let touched = false
  for (const receipt of changed) {
    const before = byId.get(receipt.id)
    if (receipt.status === 'pending') {
      if (before !== receipt) touched = true
      byId.set(receipt.id, receipt)
    } else if (before !== undefined) {
      touched = true
      byId.delete(receipt.id)
    }
  }
  return touched ? pendingView(byId.values()) : current
}

/** Pending steers, oldest first (rendered inline after the transcript). */
export const pendingSteers = (pending: Iterable<InputReceipt>): InputReceipt[] =>
  pendingView(pending).filter((receipt) => receipt.delivery === 'steer')

/** Pending queued inputs, oldest first (the queue tray). */
export const queuedInputs = (pending: Iterable<InputReceipt>): InputReceipt[] =>
  pendingView(pending).filter((receipt) => receipt.delivery === 'queue')

/**
 * What `promote(mode)` takes, oldest first: `checkpoint` (inside a turn) every pending steer;
 * `settled` (no open turn) the pending steers, or else the single oldest queued input.
 */
export function selectForPromotion(pending: Iterable<InputReceipt>, mode: PromoteMode): InputReceipt[] {
  const ordered = pendingView(pending)
  const steers = ordered.filter((receipt) => receipt.delivery === 'steer')
  if (mode === 'checkpoint' || steers.length > 0) return steers
  const oldestQueued = ordered.find((receipt) => receipt.delivery === 'queue')
  return oldestQueued ? [oldestQueued] : []
}
