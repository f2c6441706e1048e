/**
 * Sparse windows (docs/decisions/0016), as a property: random sequences of jumpTo, loadOlder,
 * loadThrough, gap extends from either end, admissions, promotions and streaming on sessions of
 * up to 1,000 turns. After every step the snapshot's rows are checked against the rows read
 * straight from the engine: every segment is contiguous (it holds exactly the engine's rows of
 * the seq range it spans), segments are disjoint and in seq order, each gap row is exactly the
 * seq range between two segments, and pending steers come after the last segment.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView, TimelineRow, TimelineSnapshot } from '../../src/client/types'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import type { SessionMessage } from '../../src/schema/messages'
import { freshDbName, immediateSchedule } from '../support/engines'
import { seedTurns, until } from './harness'

type Step =
  | { kind: 'jumpTo'; at: number }
  | { kind: 'loadOlder' }
  | { kind: 'loadThrough'; at: number }
  | { kind: 'gap'; pick: number; end: 'older' | 'newer' }
  | { kind: 'admit'; delivery: 'steer' | 'queue' }
  | { kind: 'promote' }
  | { kind: 'delta' }
  | { kind: 'end' }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('jumpTo' as const),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'loadOlder' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('loadThrough' as const),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('gap' as const),
      pick: fc.nat(),
      end: fc.constantFrom('older' as const, 'newer' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      delivery: fc.constantFrom('steer' as const, 'queue' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'promote' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'delta' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'end' as const }) },
)

async function allRows(engine: Engine, sessionId: string): Promise<SessionMessage[]> {
  const rows: SessionMessage[] = []
  let beforeSeq: number | undefined
  for (;;) {
    const page = await engine.page(sessionId, { beforeSeq, limit: 1000 })
    rows.unshift(...page.messages)
    if (!page.hasOlder || page.messages.length === 0) return rows
    beforeSeq = page.messages[0]!.seq
  }
}

/** The checks of the header, on one snapshot against the engine's rows and pending steers. */
function checkSnapshot(
  snapshot: TimelineSnapshot,
  rows: readonly SessionMessage[],
  steerIds: readonly string[],
) {
  const keys = snapshot.rows.map((r) => r.key)
  expect(new Set(keys).size, 'unique keys').toBe(keys.length)
  const firstInput = snapshot.rows.findIndex((r) => r.kind === 'input')
  const body = firstInput < 0 ? snapshot.rows : snapshot.rows.slice(0, firstInput)
  const inputs = firstInput < 0 ? [] : snapshot.rows.slice(firstInput)
  expect(
    inputs.every((r) => r.kind === 'input'),
    'pending rows after the live tail',
  ).toBe(true)
  expect(inputs.map((r) => r.key)).toEqual(steerIds)

  // Segments between gap rows.
  const segments: SessionMessage[][] = [[]]
  const gaps: Extract<TimelineRow, { kind: 'gap' }>[] = []
  for (const row of body) {
    if (row.kind === 'gap') {
      expect(segments.at(-1)!.length, 'a gap follows a non-empty segment').toBeGreaterThan(0)
      gaps.push(row)
      segments.push([])
    } else if (row.kind === 'message') segments.at(-1)!.push(row.message)
  }
  const seqs = body.flatMap((r) => (r.kind === 'message' ? [r.message.seq] : []))
  for (let i = 1; i < seqs.length; i++) expect(seqs[i]!, 'seq order').toBeGreaterThan(seqs[i - 1]!)
  for (const [i, gap] of gaps.entries()) {
    expect(gap.fromSeq).toBeGreaterThan(segments[i]!.at(-1)!.seq)
    expect(gap.toSeq).toBeGreaterThanOrEqual(gap.fromSeq)
    if (segments[i + 1]!.length > 0) expect(gap.toSeq).toBeLessThan(segments[i + 1]![0]!.seq)
  }
  // Each segment holds exactly the engine's rows of the range it spans (gaps are the rest).
  for (const [i, segment] of segments.entries()) {
    const from = i === 0 ? (snapshot.hasOlder ? (segment[0]?.seq ?? 1) : 1) : gaps[i - 1]!.toSeq + 1
    const to = i < gaps.length ? gaps[i]!.fromSeq - 1 : Number.POSITIVE_INFINITY
    const expected = rows.filter((r) => r.seq >= from && r.seq <= to)
    expect(
      segment.map((m) => m.id),
      `segment ${i} spans ${from}..${to}`,
    ).toEqual(expected.map((m) => m.id))
    expect(segment).toEqual(expected)
  }
  const lowest = segments[0]![0]
  expect(snapshot.hasOlder, 'hasOlder: rows exist below the first segment').toBe(
    lowest !== undefined && lowest.seq !== rows[0]?.seq,
  )
}

/** Steps, over all runs, after which the window had a gap, and gap extends that closed one. */
const seen = { gapped: 0, merged: 0 }

test('after every jumpTo, loadOlder, gap extend, promotion and streaming step the segments are contiguous, disjoint, ordered and match the engine', async () => {
  await fc.assert(
    fc.asyncProperty(
      // Small sessions too, so gap extends close gaps and segments merge.
      fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 30, max: 60 })),
      fc.array(stepArb, { minLength: 1, maxLength: 20 }),
      fc.constantFrom(10, 20, 50),
      async (turns, steps, tail) => {
        const engine = createEngine({
          dbName: freshDbName('sparse'),
          indexedDB,
          IDBKeyRange,
          schedule: immediateSchedule,
          broadcast: false,
        })
        let view: SessionView | undefined
        try {
          const { id } = await engine.createSession()
          await seedTurns(engine, id, turns)
          view = createSessionView(engine, id, { tail })
          await until(view, (s) => s.status === 'ready')
          let open: { turn: number; messageId: string } | undefined
          let counter = 0
          const steerIds = () =>
            engine
              .pending(id)
              .then((receipts) => receipts.filter((r) => r.delivery === 'steer').map((r) => r.id))
          for (const step of steps) {
            const gapsBefore = view.getSnapshot().rows.filter((r) => r.kind === 'gap').length
            const head = (await engine.getSession(id))!.headSeq
            if (step.kind === 'jumpTo') await view.jumpTo(Math.max(1, Math.round(step.at * head)))
            else if (step.kind === 'loadOlder') await view.loadOlder()
            else if (step.kind === 'loadThrough') await view.loadThrough(Math.round(step.at * head))
            else if (step.kind === 'gap') {
              const gaps = view.getSnapshot().rows.filter((r) => r.kind === 'gap')
              if (gaps.length > 0) await view.loadGap(gaps[step.pick % gaps.length]!.key, step.end)
            } else if (step.kind === 'admit')
              await view.admit(`input ${++counter}`, { delivery: step.delivery })
            else if (step.kind === 'promote' && !open) {
              const promoted = await engine.promote(id, 'settled')
              if (promoted.length > 0) {
                const turn = promoted[0]!.turn
                open = { turn, messageId: `stream-${turn}` }
                await engine.append(id, [
                  { type: 'step/start', data: { turn, step: 1 } },
                  { type: 'assistant/start', data: { messageId: open.messageId, turn, step: 1 } },
                ])
              }
            } else if (step.kind === 'delta' && open) {
              await engine.append(id, [
                { type: 'assistant/delta', data: { messageId: open.messageId, text: 'more ' } },
              ])
            } else if (step.kind === 'end' && open) {
              const { turn, messageId } = open
              open = undefined
              await engine.append(id, [
                { type: 'assistant/end', data: { messageId, finish: 'stop' } },
                { type: 'step/end', data: { turn, step: 1 } },
                { type: 'turn/end', data: { turn, reason: 'completed' } },
              ])
            }
            const headNow = (await engine.getSession(id))!.headSeq
            const snapshot = await until(view, (s) => s.headSeq >= headNow && !s.loadingOlder)
            checkSnapshot(snapshot, await allRows(engine, id), await steerIds())
            const gapsAfter = snapshot.rows.filter((r) => r.kind === 'gap').length
            if (gapsAfter > 0) seen.gapped++
            if (step.kind === 'gap' && gapsAfter < gapsBefore) seen.merged++
          }
        } finally {
          view?.dispose()
          await engine.close()
        }
      },
    ),
    { numRuns: 20, seed: 20261201 },
  )
  // The generator reaches the interesting states: windows with gaps, and gaps closed by extends.
  expect(seen.gapped).toBeGreaterThan(0)
  expect(seen.merged).toBeGreaterThan(0)
}, 300_000)
