/**
 * A log read over a known seq range keeps several requests in flight (`inSeqWindows`): held to a
 * plain read of the session's whole range filtered in memory, on logs with holes, beside other
 * sessions whose events sort right before and after, at any bounds; with the requests counted
 * (never more than `REQUESTS_IN_FLIGHT` at once, each inside the read's transaction) and a
 * failed request failing the read. In fake-indexeddb.
 */
import Dexie from 'dexie'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { StoredEvent } from '../../src/schema/events'
import { MAX_KEY, MIN_KEY, openDb } from '../../src/store/db'
import {
  eventsBetween,
  inSeqWindows,
  REQUESTS_IN_FLIGHT,
  ROWS_PER_REQUEST,
} from '../../src/store/transactions'
import { freshDbName } from '../support/engines'
import { createReadCountingFactory } from '../support/read-counting-factory'

const event = (sessionId: string, seq: number): StoredEvent => ({
  sessionId,
  seq,
  at: 1_700_000_000_000 + seq,
  type: 'session/created',
  data: { title: `t${seq}` },
})

interface Case {
  /** The session's seqs: 1…length with the marked ones left out (a log with holes). */
  holes: boolean[]
  after: number
  through: number
}

const arbCase: fc.Arbitrary<Case> = fc.integer({ min: 0, max: ROWS_PER_REQUEST * 7 + 3 }).chain((length) =>
  fc.record({
    holes: fc.array(fc.boolean(), { minLength: length, maxLength: length }).map((marks) =>
      // Mostly dense, as a log is; some cases with many holes.
      marks.map((hole, i) => hole && i % 3 === 0),
    ),
    after: fc.integer({ min: 0, max: length + 2 }),
    through: fc.integer({ min: 0, max: length + ROWS_PER_REQUEST }),
  }),
)

describe('a log read over a known seq range', () => {
  test('answers what one read of the whole session answers, filtered', async () => {
    const reads = createReadCountingFactory()
    await fc.assert(
      fc.asyncProperty(arbCase, async ({ holes, after, through }) => {
        const db = openDb(freshDbName('seq-windows'), { indexedDB: reads.factory, IDBKeyRange })
        try {
          const seqs = holes.flatMap((hole, i) => (hole ? [] : [i + 1]))
          await db.events.bulkAdd([
            ...[1, 2, 3].map((seq) => event('r', seq)),
            ...seqs.map((seq) => event('s', seq)),
            ...[1, 2, 3].map((seq) => event('t', seq)),
          ])
          const whole = await db.events
            .where('[sessionId+seq]')
            .between(['s', MIN_KEY], ['s', MAX_KEY])
            .toArray()
          const expected = whole.filter((e) => e.seq > after && e.seq <= through)
          reads.reset()
          const got = await db.transaction('r', db.events, () => eventsBetween(db, 's', after, through))
          expect(got).toEqual(expected)
          // One request per window of seqs, whatever the holes.
          expect(reads.requests('events')).toBe(Math.max(0, Math.ceil((through - after) / ROWS_PER_REQUEST)))
        } finally {
          db.close()
        }
      }),
      { seed: 40, numRuns: 80 },
    )
  })

  test(`keeps ${REQUESTS_IN_FLIGHT} requests in flight, all in the read's transaction, in order`, async () => {
    const db = new Dexie(freshDbName('seq-windows-flight'), { indexedDB, IDBKeyRange })
    db.version(1).stores({ t: 'k' })
    const table = db.table<{ k: number }, number>('t')
    await table.add({ k: 1 })
    const windows = 2_000
    let inFlight = 0
    let most = 0
    const seqs = await db.transaction('r', table, () =>
      inSeqWindows(7, 7 + windows * ROWS_PER_REQUEST - 3, (after, through) => {
        inFlight++
        most = Math.max(most, inFlight)
        // A real read in the transaction: it throws if the request left the transaction's scope.
        return table.get(1).then(() => {
          inFlight--
          return Array.from({ length: through - after }, (_, i) => after + i + 1)
        })
      }),
    )
    expect(most).toBe(REQUESTS_IN_FLIGHT)
    expect(seqs.length).toBe(windows * ROWS_PER_REQUEST - 3)
    expect(seqs.every((seq, i) => seq === 8 + i)).toBe(true)
    db.close()
  }, 30_000)

  test('a failed request fails the read', async () => {
    const db = new Dexie(freshDbName('seq-windows-failure'), { indexedDB, IDBKeyRange })
    db.version(1).stores({ t: 'k' })
    const table = db.table<{ k: number }, number>('t')
    await table.add({ k: 1 })
    const failure = await db
      .transaction('r', table, () =>
        inSeqWindows(0, 10 * ROWS_PER_REQUEST, (after, through) =>
          after === 3 * ROWS_PER_REQUEST
            ? Dexie.Promise.reject(new Error('request failed'))
            : table.get(1).then(() => Array.from({ length: through - after }, (_, i) => after + i + 1)),
        ),
      )
      .catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(Error)
    expect((failure as Error).message).toBe('request failed')
    db.close()
  })
})
