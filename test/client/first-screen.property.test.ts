/**
 * The page's first read (store/first-screen.ts) is a second read path beside the engine's: for
 * any session and any first read a view can ask, it answers exactly what the engine's `page` or
 * `loadThrough` and `pending` answer (as a view's first read asks them), or nothing. Sessions
 * here have streaming rows that lag the log, superseded branches (inactive rows), steers and
 * queued inputs in a reordered inbox, and a turn left open; and imported sessions (a Pi tree
 * with abandoned branches, Codex files with hidden envelopes and a compaction). The engine's
 * `firstRead`, the one call a view opens with through the worker, answers the same rows and
 * inbox, with the outline `outline` answers. A history longer than the read's first range is
 * read in ranges asked together, and answers the same.
 */
import { readFileSync } from 'node:fs'
import { IDBIndex, IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import { openDb } from '../../src/store/db'
import {
  FIRST_RANGE_SEQS,
  type FirstScreenReader,
  type FirstScreenRequest,
  firstScreenReader,
  RANGES_AFTER_FIRST,
  rangesAbove,
} from '../../src/store/first-screen'
import { freshDbName, immediateSchedule } from '../support/engines'
import { createReadCountingFactory } from '../support/read-counting-factory'
import { expectHonestReadHints } from '../support/read-hints'
import { turnEvents } from './harness'

/** One step of building a session. */
type Step =
  | { kind: 'turn'; deltas: number }
  | { kind: 'resend'; back: number }
  | { kind: 'admit'; queue: boolean }
  | { kind: 'reorder' }

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('turn' as const), deltas: fc.integer({ min: 1, max: 4 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resend' as const), back: fc.nat(6) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('admit' as const), queue: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reorder' as const) }) },
)

const request = fc.record({
  tail: fc.integer({ min: 1, max: 12 }),
  floor: fc.option(fc.integer({ min: 1, max: 90 }), { nil: undefined }),
  includeInactive: fc.boolean(),
})

/** An engine on fake-indexeddb; `lagging`: rows rewritten rarely, so most streaming rows lag the log. */
const engineOn = (dbName: string, { lagging = false } = {}) =>
  createEngine({
    indexedDB,
    IDBKeyRange,
    dbName,
    schedule: immediateSchedule,
    broadcast: false,
    ...(lagging ? { materialize: { minLag: 40, deltaWeight: 8 } } : {}),
  })

/** A turn whose answer streams in `deltas` appends (rows lag the log between rewrites). */
async function streamTurn(engine: Engine, turn: number, deltas: number, finish: boolean): Promise<void> {
  const [start, prompt, stepStart, answerStart, , ...end] = turnEvents(turn)
  await engine.append('s', [start, prompt, stepStart, answerStart] as SessionEvent[])
  for (let d = 0; d < deltas; d++)
    await engine.append('s', [
      { type: 'assistant/delta', data: { messageId: `a-${turn}`, text: `part ${d} ` } },
    ])
  if (finish) await engine.append('s', end as SessionEvent[])
}

/** What a view's first read gets from the engine (session-view's `#firstRows` and `pending`). */
async function engineFirstRead(
  engine: Engine,
  {
    sessionId = 's',
    tail,
    floor,
    includeInactive,
  }: Omit<FirstScreenRequest, 'sessionId'> & { sessionId?: string },
) {
  const tailPage = () => engine.page(sessionId, { limit: tail, includeInactive })
  let page =
    floor === undefined
      ? await tailPage()
      : await engine.loadThrough(sessionId, { seq: floor, pageSize: tail, includeInactive })
  if (floor !== undefined && page.hasOlder && page.messages.length < tail) page = await tailPage()
  return { page, pending: await engine.pending(sessionId) }
}

/** The same first read asked of the engine in one call (`firstRead`), as session-view sends it. */
const firstReadOf = ({ tail, floor, includeInactive }: Omit<FirstScreenRequest, 'sessionId'>) =>
  floor === undefined ? { tail, includeInactive } : { tail, seq: floor, pageSize: tail, includeInactive }

/** Imported files: a Pi tree with abandoned branches and a compaction, Codex with hidden envelopes. */
/**
 * A read as a view makes it: started at once, its rows asked in a microtask of the same task, or
 * (`late`) in a later task, when the started transaction is over and the read starts again.
 */
async function startedRead(reader: FirstScreenReader, { floor, ...start }: FirstScreenRequest, late = false) {
  const started = reader.start(start)
  await (late ? new Promise((resolve) => setTimeout(resolve, 0)) : Promise.resolve())
  return started.rows(floor)
}

const IMPORTED = [
  'pi/agent-history__real_session-01.jsonl',
  'pi/pi-mono__before-compaction.jsonl',
  'codex/agent-history__codex_session_with_compaction.jsonl',
  'codex/agent-history__codex_with_escalation.jsonl',
]

/** Browsers without `IDBIndex.getAllRecords` (before Chromium 141; Firefox, Safari) read a tail another way. */
const withoutRecords = () => {
  const prototype = IDBIndex.prototype as { getAllRecords?: unknown }
  const kept = prototype.getAllRecords
  beforeAll(() => {
    delete prototype.getAllRecords
  })
  afterAll(() => {
    prototype.getAllRecords = kept
  })
}

describe.each([
  ['newest first in one request (getAllRecords)', () => undefined],
  ['through a key cursor and getAll', withoutRecords],
])('the first screen read on the page, %s', (_, setUp) => {
  setUp()
  test('answers what the engine answers, for any session and any first read', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 14 }),
        fc.boolean(),
        fc.array(request, { minLength: 1, maxLength: 4 }),
        async (steps, leaveOpen, requests) => {
          const dbName = freshDbName('first-screen')
          const engine = engineOn(dbName, { lagging: true })
          const reader = firstScreenReader(dbName, { indexedDB, IDBKeyRange })
          try {
            await engine.createSession({ id: 's' })
            let turn = 0
            let inputs = 0
            const prompts: string[] = []
            for (const s of steps) {
              if (s.kind === 'turn') {
                turn++
                await streamTurn(engine, turn, s.deltas, true)
                prompts.push(`u-${turn}`)
              } else if (s.kind === 'resend' && prompts.length > 0) {
                const target = prompts[Math.max(0, prompts.length - 1 - s.back)]!
                await engine.resend('s', target, { text: `again ${turn}`, id: `r-${turn}-${inputs++}` })
                // The resend opened a turn: close it, as a runner would.
                turn = (await engine.outline('s')).total
                await engine.append('s', turnEvents(turn).slice(2) as SessionEvent[])
              } else if (s.kind === 'admit') {
                await engine.admit('s', {
                  id: `in-${inputs++}`,
                  text: 'later',
                  delivery: s.queue ? 'queue' : 'steer',
                })
              } else if (s.kind === 'reorder') {
                const pending = await engine.pending('s')
                const last = pending.at(-1)
                if (last && pending.length > 1) await engine.reorder('s', last.id, { before: pending[0]!.id })
              }
            }
            if (leaveOpen) await streamTurn(engine, turn + 1, 2, false)
            for (const r of requests) {
              const onPage = await reader.read({ sessionId: 's', ...r })
              const separate = await engineFirstRead(engine, r)
              expect(onPage).toEqual(separate)
              // Started with the connection open, its rows asked a microtask later, as a view does.
              expect(await startedRead(reader, { sessionId: 's', ...r })).toEqual(separate)
              expect(await engine.firstRead('s', firstReadOf(r))).toEqual({
                ...separate,
                outline: await engine.outline('s'),
              })
            }
          } finally {
            reader.close()
            await engine.close()
          }
        },
      ),
      { numRuns: 40 },
    )
  }, 120_000)

  test('answers what the engine answers for imported sessions', async () => {
    const dbName = freshDbName('first-screen-imported')
    const engine = engineOn(dbName)
    const reader = firstScreenReader(dbName, { indexedDB, IDBKeyRange })
    try {
      for (const file of IMPORTED) {
        const text = readFileSync(new URL(`../import/fixtures/real/${file}`, import.meta.url), 'utf8')
        const { id } = await engine.importTranscript({ text, name: file })
        await fc.assert(
          fc.asyncProperty(request, async (r) => {
            const separate = await engineFirstRead(engine, { sessionId: id, ...r })
            expect(await reader.read({ sessionId: id, ...r })).toEqual(separate)
            expect(await startedRead(reader, { sessionId: id, ...r })).toEqual(separate)
            expect(await startedRead(reader, { sessionId: id, ...r }, true)).toEqual(separate)
            expect(await engine.firstRead(id, firstReadOf(r))).toEqual({
              ...separate,
              outline: await engine.outline(id),
            })
          }),
          { numRuns: 15 },
        )
      }
    } finally {
      reader.close()
      await engine.close()
    }
  }, 60_000)
})

test('the ranges after the first cover every seq above it once, in order, split up to the head', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: -5, max: 5_000 }), fc.double({ min: -5, max: 5_000, noNaN: true })),
      fc.option(fc.integer({ min: -10, max: 20_000 }), { nil: undefined }),
      (lower, head) => {
        const parts = rangesAbove(lower, head)
        expect(parts[0]?.[0]).toBe(lower)
        expect(parts.at(-1)?.[1]).toBe(Number.POSITIVE_INFINITY)
        // Contiguous, each non-empty: IDBKeyRange.bound would throw on an empty one.
        for (const [i, [from, below]] of parts.entries()) {
          expect(below).toBeGreaterThan(from)
          if (i > 0) expect(from).toBe(parts[i - 1]?.[1])
        }
        const splits = head !== undefined && head + 1 - lower > RANGES_AFTER_FIRST
        expect(parts.length).toBe(splits ? RANGES_AFTER_FIRST : 1)
      },
    ),
  )
})

/** The `messages` requests a read from `floor` makes (see `rangesAbove`), by what the session row says. */
function rangeRequests(floor: number, headSeq: number, bounded: boolean): number {
  const firstUpper = floor + FIRST_RANGE_SEQS
  if (bounded && headSeq < firstUpper) return 1
  return 1 + rangesAbove(firstUpper, headSeq).length
}

test('a history longer than the first range is read in ranges asked together, and answers the same', async () => {
  const dbName = freshDbName('first-screen-long')
  const engine = engineOn(dbName, { lagging: true })
  const reads = createReadCountingFactory(indexedDB)
  const reader = firstScreenReader(dbName, { indexedDB: reads.factory, IDBKeyRange })
  try {
    await engine.createSession({ id: 's' })
    // 260 turns of a prompt and a streamed answer, a resend that leaves the last turns' rows
    // inactive, and a last answer still streaming (its row lags the log).
    for (let turn = 1; turn <= 260; turn++) await streamTurn(engine, turn, 1 + (turn % 4), true)
    await engine.resend('s', 'u-254', { text: 'again', id: 'r-1' })
    const resent = (await engine.outline('s')).total
    await engine.append('s', turnEvents(resent).slice(2) as SessionEvent[])
    await streamTurn(engine, resent + 1, 3, false)
    const { headSeq } = await engine.page('s', { limit: 1 })
    expect(headSeq).toBeGreaterThan(FIRST_RANGE_SEQS + 200)
    expect(await expectHonestReadHints(dbName, 'long history')).toBe(1)
    const floors = [1, 2, 40, 300, headSeq - FIRST_RANGE_SEQS - 10, headSeq - FIRST_RANGE_SEQS - 2]
    floors.push(
      headSeq - FIRST_RANGE_SEQS,
      headSeq - FIRST_RANGE_SEQS + 1,
      headSeq - 30,
      headSeq,
      headSeq + 1,
    )
    const readAll = async (bounded: boolean) => {
      for (const floor of floors)
        for (const includeInactive of [false, true]) {
          const r = { tail: 8, floor, includeInactive }
          const separate = await engineFirstRead(engine, r)
          reads.reset()
          expect(await reader.read({ sessionId: 's', ...r }), `floor ${floor}`).toEqual(separate)
          expect(reads.requests('messages'), `floor ${floor}`).toBe(rangeRequests(floor, headSeq, bounded))
          expect(await startedRead(reader, { sessionId: 's', ...r }), `floor ${floor}`).toEqual(separate)
        }
    }
    await readAll(true)
    // From seq 1: the first range, then the rest in four ranges asked together.
    expect(rangeRequests(1, headSeq, true)).toBe(1 + RANGES_AFTER_FIRST)
    expect(rangeRequests(headSeq - 30, headSeq, true)).toBe(1)

    // A row whose hint is not current (a writer that does not keep it) vouches for nothing: a
    // read past the first range asks up to the end of the index.
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    await db.sessions.update('s', (row) => {
      row.rev += 1
    })
    db.close()
    await readAll(false)
    expect(rangeRequests(headSeq - 30, headSeq, false)).toBe(2)
  } finally {
    reader.close()
    await engine.close()
  }
}, 60_000)
