import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { expect, test } from 'vitest'
import type { Visibility } from '../../src/schema/common'
import type { SessionMessage } from '../../src/schema/messages'
import { openDb } from '../../src/store/db'
import { inRowsRead, rowsBelow, rowsFrom } from '../../src/store/transactions'
import { freshDbName } from '../support/engines'

const row = (seq: number, visibility: Visibility): SessionMessage => ({
  id: `r${seq}`,
  sessionId: 's',
  seq,
  role: 'user',
  turn: 1,
  parts: [{ type: 'text', text: String(seq) }],
  status: 'complete',
  visibility,
  createdAt: 0,
  updatedAt: 0,
})

test('page reads skip rows a reader may not see and still fill the page', async () => {
  const db = openDb(freshDbName('rows'), { indexedDB, IDBKeyRange })
  try {
    const visibility = fc.constantFrom<Visibility>('visible', 'visible', 'inactive', 'hidden')
    await fc.assert(
      fc.asyncProperty(
        fc.array(visibility, { maxLength: 40 }),
        fc.integer({ min: 0, max: 12 }),
        fc.option(fc.integer({ min: 1, max: 45 }), { nil: undefined }),
        fc.boolean(),
        async (kinds, limit, beforeSeq, includeInactive) => {
          const rows = kinds.map((v, i) => row(i + 1, v))
          await db.messages.clear()
          await db.messages.bulkPut(rows)
          const seen = rows.filter(
            (r) =>
              (r.visibility === 'visible' || (includeInactive && r.visibility === 'inactive')) &&
              (beforeSeq === undefined || r.seq < beforeSeq),
          )
          const window = await inRowsRead(db, () => rowsBelow(db, 's', beforeSeq, limit, includeInactive))
          expect(window.rows).toEqual(limit === 0 ? [] : seen.slice(-limit))
          expect(window.hasOlder).toBe(seen.length > limit)
          const from = await inRowsRead(db, () => rowsFrom(db, 's', 5, beforeSeq, includeInactive))
          expect(from).toEqual(seen.filter((r) => r.seq >= 5))
        },
      ),
      { seed: 7, numRuns: 60 },
    )
  } finally {
    db.close()
  }
})
