/**
 * Holds every session's read hint (src/store/read-hint.ts) to the stores it stands for: where a
 * row's hint is current, its pending count and transcript version are what the page's first
 * read would otherwise read, and no stored row lies above the row's head. A hint that lies would
 * show an empty inbox, rows the engine rebuilds or a history without its newest rows, so any test
 * that writes through the engine can check it.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect } from 'vitest'
import { openDb } from '../../src/store/db'
import { currentReadHint } from '../../src/store/read-hint'

/** Checks every session of `dbName`; answers how many had a current hint. */
export async function expectHonestReadHints(dbName: string, where = ''): Promise<number> {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    const [sessions, inputs, folds, messages] = await Promise.all([
      db.sessions.toArray(),
      db.inputs.toArray(),
      db.projections.toArray(),
      db.messages.toArray(),
    ])
    let current = 0
    for (const row of sessions) {
      const hint = currentReadHint(row)
      if (!hint) continue
      current++
      const pending = inputs.filter((input) => input.sessionId === row.id && input.status === 'pending')
      expect(hint.pending, `${where}: pending receipts of ${row.id}`).toBe(pending.length)
      if (hint.transcript !== undefined) {
        const fold = folds.find((f) => f.sessionId === row.id && f.name === 'transcript')
        expect(hint.transcript, `${where}: transcript version of ${row.id}`).toBe(fold?.version)
      }
      const newest = Math.max(0, ...messages.filter((m) => m.sessionId === row.id).map((m) => m.seq))
      expect(newest, `${where}: the newest row of ${row.id} against its head`).toBeLessThanOrEqual(
        row.headSeq,
      )
    }
    return current
  } finally {
    db.close()
  }
}
