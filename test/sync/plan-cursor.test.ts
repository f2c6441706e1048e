/**
 * A pull that brings no batch moves only the cursor and the claim (src/sync/plan.ts
 * `planCursorPull`), without the log. Differential: for any run of claims, inputs and garbage,
 * what it plans is what the full fold (`planPull`) commits (the same cursor, skip count and last
 * skip; no log written, the outbox as it was), and it declines any run holding a message that
 * says it is a batch.
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { type ClaimFold, foldCoordination } from '../../src/core/sync-claim'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { SyncBatch } from '../../src/schema/sync'
import type { SessionRow, SyncStateRow } from '../../src/store/db'
import type { SyncView } from '../../src/store/sync'
import { planCursorPull, planCut, planPull } from '../../src/sync/plan'
import { turnEvents } from './turn-events'

/** A session of `turns` turns, canonical through `canonical` of them, the rest cut into the outbox. */
function viewOf(turns: number, canonical: number, skipped: number): SyncView {
  const events: SessionEvent[] = [{ type: 'session/created', data: { title: 't' } }]
  for (let t = 1; t <= turns; t++) events.push(...turnEvents(t))
  const stored = events.map((e, i) => ({ ...e, sessionId: 's', seq: i + 1, at: 10 + i }) as StoredEvent)
  const canonicalSeq = canonical === 0 ? 0 : 1 + canonical * 7
  const row: SessionRow = {
    id: 's',
    title: 't',
    createdAt: 10,
    updatedAt: 10,
    headSeq: stored.length,
    nextInputSeq: 1,
    source: 'native',
    rev: 3,
  }
  const state: SyncStateRow = {
    sessionId: 's',
    url: 'http://x',
    deviceId: 'me',
    epoch: 2,
    nextProducerSeq: 0,
    offset: 'from',
    canonicalSeq,
    seen: [],
    skipped,
    ...(skipped > 0 ? { lastSkip: 'earlier' } : {}),
  }
  const view: SyncView = { row, events: stored, state, outbox: [] }
  let n = 0
  return { ...view, outbox: planCut(view, () => `b${++n}`, 7) }
}

const device = fc.constantFrom('me', 'd2', 'd3')
/** What a stream holds besides batches: claims, inputs, garbage, and near-misses of each. */
const notBatch = fc.oneof(
  fc
    .record({ device, at: fc.nat(10_000), ttlMs: fc.integer({ min: 1, max: 5000 }) })
    .map((c) => ({ v: 1, kind: 'claim', ...c })),
  fc
    .record({ device, to: device, id: fc.constantFrom('i1', 'i2') })
    .map((i) => ({ v: 1, kind: 'input', ...i, text: `text ${i.id}`, delivery: 'queue', at: 1 })),
  fc.constant({ v: 1, kind: 'claim', device: 'd2' }), // no time: garbage
  fc.constant({ v: 2, kind: 'input' }),
  fc.jsonValue().filter((v) => (v as { kind?: unknown } | null)?.kind !== 'batch'),
)
const batch: SyncBatch = {
  v: 1,
  kind: 'batch',
  device: 'd2',
  batchId: 'x1',
  parentHead: null,
  baseTurn: 0,
  events: [{ type: 'session/created', data: { title: 't' }, at: 1 }],
}
const claimFold: fc.Arbitrary<ClaimFold> = fc.option(
  fc.record({ device, at: fc.nat(10_000), ttlMs: fc.integer({ min: 1, max: 5000 }) }),
  { nil: null },
)

test('claims, inputs and garbage plan the cursor the full fold commits, and nothing else', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4 }),
      fc.integer({ min: 0, max: 4 }),
      fc.nat(3),
      fc.array(notBatch, { maxLength: 8 }),
      claimFold,
      (turns, canonicalTurns, skipped, messages, kept) => {
        const view = viewOf(turns, Math.min(turns, canonicalTurns), skipped)
        const claim = foldCoordination(kept, messages).claim
        const planned = planCursorPull(view.state!, messages, 'next', claim)
        const full = planPull(view, messages, 'next', () => undefined)
        expect(full.kind).toBe('commit')
        if (full.kind !== 'commit') return
        expect(full.commit.log).toBeUndefined()
        expect(full.commit.append).toBeUndefined()
        expect(full.rewritten).toBe(false)
        expect(full.commit.outbox).toEqual(view.outbox)
        expect(planned).toEqual({ ...full.commit.state, claim })
      },
    ),
    { numRuns: 200 },
  )
})

test('a run holding anything that says it is a batch is left to the full fold', () => {
  fc.assert(
    fc.property(
      fc.array(notBatch, { maxLength: 4 }),
      fc.array(notBatch, { maxLength: 4 }),
      fc.constantFrom<unknown>(batch, { kind: 'batch' }, { ...batch, events: 'no' }),
      (before, after, odd) => {
        const view = viewOf(1, 1, 0)
        expect(planCursorPull(view.state!, [...before, odd, ...after], 'next', null)).toBeUndefined()
      },
    ),
    { numRuns: 100 },
  )
})
