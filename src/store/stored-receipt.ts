/**
 * A receipt as stored, as every reader returns it. Dexie-free, so the page's read-only first read
 * (store/first-read.ts) and the engine's transactions share it.
 */
import type { InputReceipt } from '../schema/inputs'

/** Receipts written before `revision` existed read as revision 0. */
export const receiptOf = (stored: InputReceipt): InputReceipt =>
  stored.revision === undefined ? { ...stored, revision: 0 } : stored
