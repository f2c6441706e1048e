/**
 * A view opens in one round trip: its watch and its first read (tail, pending, outline, in one
 * call) leave the page together. That is only safe because the engine subscribes within the watch call and
 * orders a page read behind a watch still loading the session; the race below is what would
 * break otherwise: another engine commits while a cold engine loads, and the view must still
 * show that commit.
 */
import type { Endpoint } from 'comlink'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { connect } from '../../src/client/connect'
import { createSessionView, type ViewEngine } from '../../src/client/session-view'
import type { TimelineSnapshot } from '../../src/client/types'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { openDb } from '../../src/store/db'
import { exposeEngine } from '../../worker/index'
import { freshDbName, immediateSchedule } from '../support/engines'
import { openPage, seedTurns, turnEvents, until } from './harness'

const engineOn = (dbName: string, broadcast = true): Engine =>
  createEngine({ indexedDB, IDBKeyRange, schedule: immediateSchedule, dbName, broadcast })

const hasAnswer = (turn: number) => (s: TimelineSnapshot) =>
  s.rows.some((row) => row.kind === 'message' && row.message.id === `a-${turn}`)

/** Waits `ticks` macrotasks (0: none). */
const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 0))
}

describe('opening a view', () => {
  test('sends its watch and its first read (tail, pending, outline) before the first answer comes back', async () => {
    const dbName = freshDbName('open')
    const engine = engineOn(dbName, false)
    await engine.createSession({ id: 's' })
    await seedTurns(engine, 's', 3)
    const { port1, port2 } = new MessageChannel()
    exposeEngine(engine, port1)
    // What crosses the wire, in order: each call the page sends, and each answer it gets.
    const wire: string[] = []
    const endpoint: Endpoint = {
      postMessage(message: { type?: string; path?: string[] }, transfer?: Transferable[]) {
        if (message.type === 'APPLY') wire.push(`call ${message.path?.join('.')}`)
        port2.postMessage(message, transfer ?? [])
      },
      addEventListener(type: string, listener: EventListenerOrEventListenerObject) {
        port2.addEventListener(type, (event) => {
          wire.push('answer')
          if (typeof listener === 'function') listener(event)
          else listener.handleEvent(event)
        })
      },
      removeEventListener: port2.removeEventListener.bind(port2),
      start: () => port2.start(),
    }
    const client = connect(endpoint)
    try {
      await client.listSessions() // the handshake and one call: the connection is up
      wire.length = 0
      const view = client.open('s')
      await until(view, (s) => s.status === 'ready')
      const calls = wire.slice(0, wire.indexOf('answer'))
      expect(calls).toEqual(['call watch', 'call firstRead'])
      expect(hasAnswer(3)(view.getSnapshot())).toBe(true)
      view.dispose()
    } finally {
      await client.close()
      await engine.close()
      port1.close()
      port2.close()
    }
  })

  test('misses no commit another engine makes while a cold engine opens the view, and shows none twice', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.constantFrom('cold', 'rebuild', 'warm'),
        fc.boolean(),
        async (delay, start, wholeHistory) => {
          const dbName = freshDbName('open-race')
          const other = engineOn(dbName)
          await other.createSession({ id: 's' })
          await seedTurns(other, 's', 2)
          if (start === 'rebuild') {
            // No stored fold state: the cold load replays the log over several transactions,
            // a wide window for the other engine's commit.
            const db = openDb(dbName, { indexedDB, IDBKeyRange })
            await db.projections.clear()
            db.close()
          }
          const page = await openPage({ dbName, broadcast: true })
          try {
            // Warm: the worker's cache already holds the session, unwatched (its notes ignored).
            if (start === 'warm') await page.client.pending('s')
            const commit = ticks(delay).then(() => other.append('s', turnEvents(3)))
            const view = page.client.open('s')
            // Every snapshot the view publishes, to check that none shows a row twice or out of order.
            const published: TimelineSnapshot[] = []
            view.subscribe(() => published.push(view.getSnapshot()))
            // Asked in the opening task, the first read is a loadThrough instead of the tail page.
            if (wholeHistory) void view.loadThrough(1)
            await commit
            // Every commit reaches an open view: this one must arrive without another commit.
            const seen = await Promise.race([
              until(view, hasAnswer(3)).then(() => 'shown'),
              ticks(200).then(() => 'missed'),
            ])
            expect(seen).toBe('shown')
            for (const snapshot of published) {
              const seqs = snapshot.rows.flatMap((row) => (row.kind === 'message' ? [row.message.seq] : []))
              expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b))
            }
            // What it ends with is what the database holds: the rows of both engines, in order.
            const all = (await other.loadThrough('s', { seq: 1 })).messages.map((m) => m.id)
            const shown = view
              .getSnapshot()
              .rows.flatMap((row) => (row.kind === 'message' ? [row.message.id] : []))
            expect(shown).toEqual(all.slice(all.length - shown.length))
            view.dispose()
          } finally {
            await page.close()
            await other.close()
          }
        },
      ),
      { numRuns: 60, seed: 20261201 },
    )
  })
})

describe('a view asked to load through a seq in the task that opened it', () => {
  const messageRows = (s: TimelineSnapshot) =>
    s.rows.flatMap((row) => (row.kind === 'message' ? [row.message] : []))

  test('reads every row from that seq in its first read, the same rows a later loadThrough loads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 25 }),
        fc.nat({ max: 260 }),
        async (turns, tail, floor) => {
          const page = await openPage()
          try {
            await page.engine.createSession({ id: 's' })
            await seedTurns(page.engine, 's', turns)
            // The reference: every row of the session, read in one go.
            const all = (await page.engine.loadThrough('s', { seq: 1 })).messages
            page.calls.clear()
            const view = page.client.open('s', { tail })
            await view.loadThrough(floor)
            const opened = await until(view, (s) => s.status === 'ready')
            const rows = messageRows(opened)
            // A suffix of the history that holds every row from `floor` and at least a tail.
            expect(rows).toEqual(all.slice(all.length - rows.length))
            expect(rows.length).toBeGreaterThanOrEqual(Math.min(tail, all.length))
            expect(rows.length).toBeGreaterThanOrEqual(all.filter((m) => m.seq >= floor).length)
            expect(opened.hasOlder).toBe(rows.length < all.length)
            // One read; a floor above every row reads nothing there, and the tail in the same read.
            const rowReads =
              (page.calls.get('page') ?? 0) +
              (page.calls.get('loadThrough') ?? 0) +
              (page.calls.get('firstRead') ?? 0)
            expect(rowReads).toBe(1)
            // Differential: opened first and asked later, a view ends up with the same rows from `floor`.
            const later = page.client.open('s', { tail })
            await until(later, (s) => s.status === 'ready')
            await later.loadThrough(floor)
            const fromFloor = (ms: readonly { seq: number }[]) => ms.filter((m) => m.seq >= floor)
            expect(fromFloor(rows)).toEqual(fromFloor(messageRows(later.getSnapshot())))
            view.dispose()
            later.dispose()
          } finally {
            await page.close()
          }
        },
      ),
      {
        numRuns: 40,
        seed: 20261202,
        // Turn t's rows sit at seqs 8t-5 and 8t-3 (the session's creation is seq 1). A floor in
        // the gap below a row, the rows from it filling whole tail pages so no older row is
        // added, an older row left: the window must still know the floor (3,1,4: rows 5…21 from
        // seq 4, a tail of 1; 2,2,8: rows 11 and 13, a tail of 2).
        examples: [
          [3, 1, 4],
          [2, 2, 8],
        ],
      },
    )
  })
})

describe('a view taking streamed text as appends', () => {
  test('reads a row again when an append does not continue the version it shows (a push it never got)', async () => {
    const engine = engineOn(freshDbName('appends'), false)
    try {
      await engine.createSession({ id: 's' })
      await engine.append('s', [
        { type: 'turn/start', data: { turn: 1 } },
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'a', turn: 1, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'a', text: 'one ' } },
      ])
      // The view's engine loses one push carrying appends, as a dropped message would.
      let dropped = 0
      const lossy: ViewEngine = {
        ...engine,
        watch: (sessionId, listener, options) =>
          engine.watch(
            sessionId,
            (change) => {
              if (change.appends?.length && dropped === 0) {
                dropped++
                return
              }
              listener(change)
            },
            options,
          ),
      }
      const view = createSessionView(lossy, 's')
      await until(view, (s) => s.status === 'ready')
      const text = () => {
        const row = view.getSnapshot().rows.find((r) => r.kind === 'message' && r.message.id === 'a')
        const part = row?.kind === 'message' ? row.message.parts[0] : undefined
        return part?.type === 'text' ? part.text : undefined
      }
      for (const word of ['two ', 'three ', 'four ']) {
        await engine.append('s', [{ type: 'assistant/delta', data: { messageId: 'a', text: word } }])
      }
      expect(dropped).toBe(1)
      // Still streaming (no settled row to heal it): the view read the row again.
      await until(view, () => text() === 'one two three four ')
      view.dispose()
    } finally {
      await engine.close()
    }
  })
})
