import Dexie from 'dexie'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { expect, test } from 'vitest'
import type { Visibility } from '../../src/schema/common'
import type { SessionMessage } from '../../src/schema/messages'
import { openDb } from '../../src/store/db'
import { inRowsRead, inWrite, rowsBelow, rowsFrom } from '../../src/store/transactions'
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

test('a read answers outside its transaction: writes, reads and nested reads right after it work, in any interleaving', async () => {
  // A read answers before its transaction completes. Resolved from inside Dexie's zone, a
  // caller's next write could join the readonly transaction and fail: that is timing-dependent,
  // and the two-engine bursts of group-commit.test.ts and multi-engine.test.ts are what failed
  // then. This property holds the rest: what a read answers, and reads nested in writes.
  const db = openDb(freshDbName('answer-read'), { indexedDB, IDBKeyRange })
  try {
    await db.messages.bulkPut([row(1, 'visible'), row(2, 'visible')])
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('read', 'write', 'nested'), { minLength: 1, maxLength: 8 }),
        async (steps) => {
          const done = await Promise.all(
            steps.map(async (step, i) => {
              // Native awaits inside the scope, as the engine's reads have: Dexie echoes its zone then.
              const [seen] = await inRowsRead(db, async () => {
                const both = await Promise.all([db.messages.get('r1'), db.sessions.get('s')])
                return both
              })
              expect(seen?.seq).toBe(1)
              if (step === 'read') return inRowsRead(db, () => db.messages.count())
              if (step === 'write') return inWrite(db, () => db.messages.put(row(10 + i, 'visible')))
              // A read inside a write joins it and sees the write's own put.
              return inWrite(db, async () => {
                await db.messages.put(row(10 + i, 'visible'))
                return inRowsRead(db, async () => (await db.messages.get(`r${10 + i}`))?.seq)
              })
            }),
          )
          steps.forEach((step, i) => {
            if (step === 'nested') expect(done[i]).toBe(10 + i)
          })
        },
      ),
      { seed: 11, numRuns: 30 },
    )
    // A failing read rejects with its error, and nothing of it lingers.
    await expect(
      inRowsRead(db, async () => {
        await db.messages.get('r1')
        throw new RangeError('bad read')
      }),
    ).rejects.toThrow('bad read')
    await expect(inWrite(db, () => db.messages.put(row(3, 'visible')))).resolves.toBe('r3')
  } finally {
    db.close()
  }
})

test("writes to sessionline's database tell no Dexie liveQuery about it; a plain Dexie database still does", async () => {
  const fired: unknown[] = []
  const listen = (parts: unknown) => void fired.push(parts)
  Dexie.on('storagemutated', listen)
  const ours = openDb(freshDbName('quiet'), { indexedDB, IDBKeyRange })
  const plain = new Dexie(freshDbName('plain'), { indexedDB, IDBKeyRange })
  plain.version(1).stores({ items: 'id' })
  try {
    // Opening a new database announces all of it once (an upgrade); the writes after say nothing.
    await ours.open()
    await plain.open()
    fired.length = 0
    await inWrite(ours, () => ours.messages.put(row(1, 'visible')))
    await ours.messages.bulkPut([row(2, 'visible')])
    expect(fired).toEqual([])
    // The control: the listener does hear a database with Dexie's default middleware.
    await plain.table('items').put({ id: 'a' })
    expect(fired.length).toBeGreaterThan(0)
  } finally {
    Dexie.on('storagemutated').unsubscribe(listen)
    ours.close()
    plain.close()
  }
})
