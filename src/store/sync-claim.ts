/**
 * The store side of the runner claim across devices (docs/decisions/0036, amendment "One runner
 * across devices"): the receipts of inputs another device answered, promoted when their rows
 * arrive. (The claim the stream holds is kept with the cursor, committed by each pull:
 * src/store/sync.ts.)
 *
 * @example
 *   const promoted = await promoteArrived(db, 's1', Date.now())
 *   const waiting = await readPending(db, 's1')
 */
import type { InputReceipt } from '../schema/inputs'
import type { SessionlineDb } from './db'
import { pendingReceipts } from './transactions'

/**
 * Receipts still pending here whose input another device promoted: the log holds a user row
 * with the input's id (a promotion makes the row of an input under the input's id). They are
 * promoted into that row as a local promotion would, and the session's `rev` moves so caches
 * read them again. Answers the receipts promoted.
 */
export function promoteArrived(db: SessionlineDb, sessionId: string, now: number): Promise<InputReceipt[]> {
  return db.transaction('rw', [db.sessions, db.messages, db.inputs], async () => {
    const pending = await pendingReceipts(db, sessionId)
    if (pending.length === 0) return []
    const rows = await db.messages.bulkGet(pending.map((r) => r.id))
    const promoted: InputReceipt[] = []
    pending.forEach((receipt, i) => {
      const row = rows[i]
      if (!row || row.sessionId !== sessionId || row.role !== 'user') return
      promoted.push({
        ...receipt,
        status: 'promoted',
        promotedSeq: row.seq,
        updatedAt: now,
        revision: receipt.revision + 1,
      })
    })
    if (promoted.length === 0) return []
    const session = await db.sessions.get(sessionId)
    if (!session) return []
    await Promise.all([db.inputs.bulkPut(promoted), db.sessions.put({ ...session, rev: session.rev + 1 })])
    return promoted
  })
}

/**
 * The session's pending receipts, in inbox order, read from the store (one index read): what the
 * runner claim asks each round, without making the engine's cache load a session a pull just
 * rewrote.
 */
export function readPending(db: SessionlineDb, sessionId: string): Promise<InputReceipt[]> {
  return db.transaction('r', [db.inputs], () => pendingReceipts(db, sessionId))
}
