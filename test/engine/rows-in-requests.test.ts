/**
 * Reads of whole ranges of rows take them in requests of `ROWS_PER_REQUEST` rows, each after the
 * key the last one ended at: `loadThrough` (`rowsFrom` beneath it), the search build's pages,
 * by session (`rowsToIndex`) and in key order (`rowsInKeyOrder`), and the log (`eventsBetween`,
 * beneath `events`, the export, the rebuild and sync). Each against a plain read of
 * the table (one range, filtered as the readers filter), for any start, bound and filter, on a
 * session of several hundred rows with a superseded branch in the middle, so reads cross request
 * boundaries and skip inactive rows on either side of them.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { isReadable } from '../../src/core/visibility'
import type { SessionMessage } from '../../src/schema/messages'
import { openDb, type SessionlineDb } from '../../src/store/db'
import { rowsInKeyOrder, rowsToIndex } from '../../src/store/search'
import { ROWS_PER_REQUEST } from '../../src/store/transactions'
import { inProcessEngine, type TestEngine } from '../support/engines'
import { turnEvents } from '../support/turns'

const TURNS = 170
let made: TestEngine
let sessionId: string
let stored: SessionMessage[]
let db: SessionlineDb

beforeAll(async () => {
  made = await inProcessEngine({ broadcast: false })
  const { engine } = made
  ;({ id: sessionId } = await engine.createSession())
  const prompts: string[] = []
  for (let turn = 1; turn <= TURNS; turn++) {
    const { events, userId } = turnEvents(turn, { prompt: `p${turn}`, answer: `a${turn}` })
    prompts.push(userId)
    await engine.append(sessionId, events)
  }
  // Sent again from turn 60: the turns after it leave the visible branch (inactive rows).
  await engine.resend(sessionId, prompts[59]!, { text: 'again', id: 'again' })
  db = openDb(made.dbName, { indexedDB, IDBKeyRange })
  stored = await db.messages.where('[sessionId+seq]').between([sessionId, 0], [sessionId, Infinity]).toArray()
}, 60_000)

afterAll(async () => {
  db.close()
  await made.close()
})

test('the session crosses several request boundaries and holds inactive rows', () => {
  expect(stored.length).toBeGreaterThan(3 * ROWS_PER_REQUEST)
  expect(stored.filter((row) => !isReadable(row.visibility, false)).length).toBeGreaterThan(ROWS_PER_REQUEST)
})

test('loadThrough reads the rows a plain read of the range reads, for any start, bound and filter', async () => {
  const seqs = stored.map((row) => row.seq)
  const top = seqs.at(-1)! + 2
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: top }),
      fc.option(fc.integer({ min: 1, max: top }), { nil: undefined }),
      fc.boolean(),
      async (seq, beforeSeq, includeInactive) => {
        // Pages of one: no older rows fill the window, so it is exactly the rows from `seq` up.
        const page = await made.engine.loadThrough(sessionId, {
          seq,
          beforeSeq,
          pageSize: 1,
          includeInactive,
        })
        const readable = stored.filter((row) => isReadable(row.visibility, includeInactive))
        const expected = readable.filter(
          (row) => row.seq >= seq && (beforeSeq === undefined || row.seq < beforeSeq),
        )
        expect(page.messages.map((row) => row.id)).toEqual(expected.map((row) => row.id))
        const below = expected[0]?.seq ?? Math.max(1, Math.min(seq, beforeSeq ?? seq))
        expect(page.hasOlder).toBe(readable.some((row) => row.seq < below))
      },
    ),
    { numRuns: 60 },
  )
})

test('requests end exactly on the boundary: starts at each side of one', async () => {
  for (const index of [
    0,
    ROWS_PER_REQUEST - 1,
    ROWS_PER_REQUEST,
    ROWS_PER_REQUEST + 1,
    2 * ROWS_PER_REQUEST,
  ]) {
    const seq = stored[index]!.seq
    const page = await made.engine.loadThrough(sessionId, { seq, pageSize: 1, includeInactive: true })
    expect(page.messages.map((row) => row.seq)).toEqual(stored.slice(index).map((row) => row.seq))
  }
})

test('the search build reads the rows a plain read reads, by session and in key order', async () => {
  const byId = [...stored].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const searchable = (rows: SessionMessage[]) => rows.filter((row) => isReadable(row.visibility, true))
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: stored.length }),
      fc.integer({ min: 1, max: 4 * ROWS_PER_REQUEST + 7 }),
      async (start, limit) => {
        // By session, from the seq of the start-th row (past the end: after every row).
        const fromSeq = stored[start]?.seq ?? stored.at(-1)!.seq + 1
        const page = await rowsToIndex(db, sessionId, fromSeq, limit)
        const taken = stored.slice(start, start + limit)
        expect(page.rows.map((row) => row.id)).toEqual(searchable(taken).map((row) => row.id))
        expect(page.nextSeq).toBe(taken.length === limit ? taken.at(-1)!.seq + 1 : undefined)
        // In key order, after the id of the row before the start-th (from the start for 0).
        const afterId = start === 0 ? undefined : byId[start - 1]!.id
        const keyed = await rowsInKeyOrder(db, afterId, limit, false)
        const inOrder = byId.slice(start, start + limit)
        expect(keyed.rows.map((row) => row.id)).toEqual(searchable(inOrder).map((row) => row.id))
        expect(keyed.nextAfter).toBe(inOrder.length === limit ? inOrder.at(-1)!.id : undefined)
      },
    ),
    { numRuns: 60 },
  )
})

test('the log reads the events a plain read of the range reads, for any start and limit', async () => {
  const log = await db.events
    .where('[sessionId+seq]')
    .between([sessionId, 0], [sessionId, Infinity])
    .toArray()
  expect(log.length).toBeGreaterThan(3 * ROWS_PER_REQUEST)
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: log.length + 2 }),
      fc.integer({ min: 1, max: 4 * ROWS_PER_REQUEST + 7 }),
      async (afterSeq, limit) => {
        const events = await made.engine.events(sessionId, { afterSeq, limit })
        const expected = log.filter((event) => event.seq > afterSeq).slice(0, limit)
        expect(events).toEqual(expected)
      },
    ),
    { numRuns: 60 },
  )
  // The export reads the whole log the same way: it holds every event, in order.
  const exported = await (await made.engine.exportSession(sessionId)).text()
  const seqs = exported
    .split('\n')
    .filter((line) => line.startsWith('{"kind":"event"'))
    .map((line) => (JSON.parse(line) as { event: { seq: number } }).event.seq)
  expect(seqs).toEqual(log.map((event) => event.seq))
})
