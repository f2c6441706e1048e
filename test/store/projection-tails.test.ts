/**
 * A cold load reads the fold heads and the last chunks of the outline in one wave: chunk rows are
 * named so they sort by index, and a reverse range read over a list's names finds its last chunks
 * without the count its head holds. Held here to the read that asks the heads first and then the
 * chunks they name (no `tails`), on states of any length, with a chunked array beside the list and
 * with rows stored past a list's end, in fake-indexeddb.
 */

import { IDBKeyRange } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { LIST_CHUNK, listFrom } from '../../src/core/chunked-list'
import { openDb } from '../../src/store/db'
import { type ListTail, projectionStates, putProjectionStates } from '../../src/store/transactions'
import { freshDbName } from '../support/engines'
import { createReadCountingFactory } from '../support/read-counting-factory'

const TAIL: ListTail = { name: 'outline', key: 'entries' }

interface Case {
  /** Items of the list. */
  items: number
  /** Items of a plain array beside it (chunked past LIST_CHUNK, read whole). */
  array: number
  /** Items of a longer list stored first, whose chunks past the list's end stay behind. */
  before: number | undefined
}

const arbCase: fc.Arbitrary<Case> = fc.record({
  items: fc.oneof(
    fc.integer({ min: 0, max: LIST_CHUNK * 6 }),
    fc.constantFrom(LIST_CHUNK, 2 * LIST_CHUNK + 1),
  ),
  array: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: LIST_CHUNK * 2 + 3 })),
  before: fc.option(fc.integer({ min: 1, max: LIST_CHUNK * 3 }), { nil: undefined }),
})

const stateOf = (items: number, array: number) => ({
  entries: listFrom(Array.from({ length: items }, (_, n) => ({ n }))),
  array: Array.from({ length: array }, (_, n) => -n),
  open: items,
})

async function stored(c: Case) {
  const reads = createReadCountingFactory()
  const db = openDb(freshDbName('tails'), { indexedDB: reads.factory, IDBKeyRange })
  if (c.before !== undefined)
    await putProjectionStates(db, 's', 1, [
      { name: 'outline', version: 1, state: stateOf(c.items + c.before, 0) },
    ])
  await putProjectionStates(db, 's', 2, [{ name: 'outline', version: 1, state: stateOf(c.items, c.array) }])
  // Another session's chunks sort right after this one's range: the read must not reach them.
  await putProjectionStates(db, 't', 1, [{ name: 'outline', version: 1, state: stateOf(LIST_CHUNK * 3, 0) }])
  await putProjectionStates(db, 's', 2, [{ name: 'other', version: 1, state: { n: 1 } }])
  return { db, reads }
}

describe('the outline tail read beside the heads', () => {
  test('answers what reading the heads and then the chunks they name answers', async () => {
    await fc.assert(
      fc.asyncProperty(arbCase, async (c) => {
        const { db } = await stored(c)
        try {
          const names = ['outline', 'other', 'absent']
          const read = (tails?: ListTail[]) =>
            db.transaction('r', db.projections, () => projectionStates(db, 's', names, tails))
          // Heads first, then the chunks they name: the same answer, unloaded chunks included.
          expect(await read([TAIL])).toEqual(await read())
          // And against every row of the session read by range and decoded whole (no tail logic).
          const oneWave = await read([TAIL])
          const whole = await db.transaction('r', db.projections, () => projectionStates(db, 's'))
          expect([...oneWave.keys()].sort()).toEqual(['other', 'outline'])
          expect(oneWave.get('other')).toEqual(whole.get('other'))
          const outline = oneWave.get('outline')?.state as ReturnType<typeof stateOf>
          const reference = whole.get('outline')?.state as ReturnType<typeof stateOf>
          expect(outline.entries.length).toBe(c.items)
          expect(reference.entries.length).toBe(c.items)
          outline.entries.chunks.forEach((chunk, index) => {
            if (chunk !== undefined) expect(chunk, `chunk ${index}`).toEqual(reference.entries.chunks[index])
          })
          expect(outline.array).toEqual(stateOf(c.items, c.array).array)
          expect(outline.open).toBe(c.items)
          // The last two chunks are loaded, the earlier ones left for `listChunks`.
          const loaded = outline.entries.chunks.map((chunk) => chunk !== undefined)
          expect(loaded.filter(Boolean).length).toBe(Math.min(2, loaded.length))
          expect(loaded.slice(-2).every(Boolean)).toBe(true)
        } finally {
          db.close()
        }
      }),
      { seed: 28, numRuns: 60 },
    )
  })

  test('asks nothing after the heads when the tail read found every chunk they name', async () => {
    for (const items of [0, 1, LIST_CHUNK, LIST_CHUNK + 1, LIST_CHUNK * 5 + 7]) {
      const { db, reads } = await stored({ items, array: 0, before: undefined })
      try {
        reads.reset()
        await db.transaction('r', db.projections, () => projectionStates(db, 's', ['outline'], [TAIL]))
        // One get for the head and one reverse cursor for the tail: the wave a cold load waits for.
        expect(reads.requests('projections'), `${items} items`).toBe(2)
        expect(reads.records('projections'), `${items} items`).toBe(
          1 + Math.min(2, Math.ceil(items / LIST_CHUNK)),
        )
        reads.reset()
        await db.transaction('r', db.projections, () => projectionStates(db, 's', ['outline']))
        // Without the tail read, a second wave for the chunks once the head is back.
        expect(reads.requests('projections')).toBe(1 + Math.min(2, Math.ceil(items / LIST_CHUNK)))
      } finally {
        db.close()
      }
    }
  })
})
