import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  admitsInput,
  type ClaimFold,
  claimantAt,
  claimDue,
  claimExpiry,
  foldCoordination,
  inputTarget,
} from '../../src/core/sync-claim'
import { foldMessage, initCanonical, replayStream } from '../../src/core/sync-rebase'
import type { SyncBatch } from '../../src/schema/sync'
import type { SyncClaim, SyncInput } from '../../src/schema/sync-claim'

const claim = (device: string, at: number, ttlMs = 1000): SyncClaim => ({
  v: 1,
  kind: 'claim',
  device,
  at,
  ttlMs,
})
const input = (device: string, to: string, id: string): SyncInput => ({
  v: 1,
  kind: 'input',
  device,
  to,
  id,
  text: `text ${id}`,
  delivery: 'queue',
  at: 1,
})
const created: SyncBatch = {
  v: 1,
  kind: 'batch',
  device: 'd1',
  batchId: 'b1',
  parentHead: null,
  baseTurn: 0,
  events: [{ type: 'session/created', data: { title: 't' }, at: 1 }],
}

const device = fc.constantFrom('d1', 'd2', 'd3')
/** Claims, inputs and what is neither (garbage and a batch), as a stream holds them. */
const message = fc.oneof(
  fc
    .record({ device, at: fc.nat(10_000), ttl: fc.integer({ min: 1, max: 5000 }) })
    .map((c) => claim(c.device, c.at, c.ttl)),
  fc
    .record({ from: device, to: device, id: fc.constantFrom('i1', 'i2', 'i3') })
    .map((i) => input(i.from, i.to, i.id)),
  fc.constant({ v: 1, kind: 'claim', device: 'd1' }), // a claim without its time: not a claim
  fc.constant(created),
  fc.jsonValue(),
)

/** Reference: the last claim in the whole list, and every input in order (both have every field). */
function naive(messages: readonly unknown[]) {
  const whole = (m: unknown, kind: string, fields: number) =>
    m !== null &&
    typeof m === 'object' &&
    (m as { v?: unknown }).v === 1 &&
    (m as { kind?: unknown }).kind === kind &&
    Object.keys(m).length === fields
  const last = messages.filter((m): m is SyncClaim => whole(m, 'claim', 5)).at(-1)
  return {
    claim: last ? { device: last.device, at: last.at, ttlMs: last.ttlMs } : null,
    inputs: messages.filter((m) => whole(m, 'input', 8)),
  }
}

describe('runner claim fold', () => {
  it('folds to the latest claim in stream order however the reads split the stream (differential)', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 30 }), fc.array(fc.nat(30)), (messages, cuts) => {
        const points = [...new Set(cuts.map((c) => Math.min(c, messages.length)))].sort((a, b) => a - b)
        let state: ClaimFold = null
        const inputs: unknown[] = []
        let from = 0
        for (const to of [...points, messages.length]) {
          const folded = foldCoordination(state, messages.slice(from, to))
          state = folded.claim
          inputs.push(...folded.inputs)
          from = to
        }
        const expected = naive(messages)
        expect(state).toEqual(expected.claim)
        expect(inputs).toEqual(expected.inputs)
      }),
    )
  })

  it('a claim holds until its own at + ttl, on the reader’s clock', () => {
    const held = foldCoordination(null, [claim('d1', 100, 50)]).claim
    expect(claimantAt(held, 100)).toBe('d1')
    expect(claimantAt(held, 149)).toBe('d1')
    expect(claimantAt(held, 150)).toBe(null)
    expect(claimantAt(null, 0)).toBe(null)
  })

  it('a later claim wins even over one that still holds; a device claims only when none of another holds', () => {
    const fold = foldCoordination(null, [claim('d1', 100, 1000), claim('d2', 120, 1000)]).claim
    expect(claimantAt(fold, 130)).toBe('d2')
    expect(claimDue(fold, 'd1', 130, 1000)).toBe(false) // d2's holds: d1 stays back
    expect(claimDue(fold, 'd1', 1120, 1000)).toBe(true) // lapsed: d1 may take it
    expect(claimDue(null, 'd1', 0, 1000)).toBe(true)
    // Its own claim is said again half-way through the ttl, not before.
    expect(claimDue(fold, 'd2', 619, 1000)).toBe(false)
    expect(claimDue(fold, 'd2', 620, 1000)).toBe(true)
  })

  it('claims and inputs leave the canonical log as it was, and are not counted as skipped', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 20 }), (messages) => {
        const coordination = messages.filter(
          (m) => foldCoordination(null, [m]).claim !== null || foldCoordination(null, [m]).inputs.length > 0,
        )
        for (const m of coordination)
          expect(foldMessage(initCanonical('s1'), m).outcome.kind).toBe('coordination')
        const withThem = replayStream('s1', [created, ...messages])
        const without = replayStream('s1', [created, ...messages.filter((m) => !coordination.includes(m))])
        expect(withThem).toEqual(without)
      }),
    )
  })
})

describe('where inputs go when a claim lapses while idle', () => {
  const held = fc.record({ at: fc.nat(10_000), ttlMs: fc.integer({ min: 4, max: 5000 }) })
  const times = fc.tuple(fc.nat(20_000), fc.nat(20_000)).map(([a, b]) => [Math.min(a, b), Math.max(a, b)])

  it('the claimant admits a record only while the sender cannot claim; a sender that runs turns sends only with a quarter of the ttl left', () => {
    fc.assert(
      fc.property(held, times, fc.boolean(), ({ at, ttlMs }, [sentAt, readAt], senderRuns) => {
        const fold: ClaimFold = { device: 'x', at, ttlMs }
        const target = inputTarget(fold, 's', sentAt!, senderRuns)
        if (target === null) return
        expect(target.to).toBe('x')
        const admitted = admitsInput(fold, 'x', readAt!, true, { device: 's', to: 'x', at: sentAt! })
        if (!target.lapsed) {
          // Sent to a holding claim, with room: never to one in its last quarter.
          expect(claimExpiry(fold) - sentAt!).toBeGreaterThan(ttlMs / 4)
          // Admitted only while the claim holds, when the sender cannot claim it.
          expect(admitted).toBe(readAt! < claimExpiry(fold))
          if (admitted) expect(claimDue(fold, 's', readAt!, ttlMs)).toBe(false)
        } else {
          // Only a device that runs no turns sends to a lapsed claim; its claimant admits it.
          expect(senderRuns).toBe(false)
          expect(admitted).toBe(true)
        }
      }),
    )
  })

  it('a record sent before the lapse and read after it is left to its sender, which may claim then', () => {
    const fold: ClaimFold = { device: 'x', at: 1000, ttlMs: 400 }
    const record = { device: 's', to: 'x', at: 1200 }
    expect(inputTarget(fold, 's', 1200, true)).toEqual({ to: 'x', lapsed: false })
    expect(admitsInput(fold, 'x', 1399, true, record)).toBe(true)
    expect(admitsInput(fold, 'x', 1400, true, record)).toBe(false)
    expect(claimDue(fold, 's', 1400, 400)).toBe(true)
    // In the claim's last quarter nothing is sent: the sender waits for the lapse.
    expect(inputTarget(fold, 's', 1300, true)).toBe(null)
    expect(inputTarget(fold, 's', 1300, false)).toBe(null)
    // Lapsed: a device that runs turns claims instead; one that runs none sends to the last claimant.
    expect(inputTarget(fold, 's', 1400, true)).toBe(null)
    expect(inputTarget(fold, 's', 1400, false)).toEqual({ to: 'x', lapsed: true })
    expect(admitsInput(fold, 'x', 1450, true, { ...record, at: 1400 })).toBe(true)
    // Not to a claimant that runs no turns (it could not run it), nor to another device, nor one's own.
    expect(admitsInput(fold, 'x', 1450, false, { ...record, at: 1400 })).toBe(false)
    expect(admitsInput(fold, 'y', 1300, true, { ...record, to: 'y' })).toBe(false)
    expect(admitsInput(fold, 'x', 1300, true, { ...record, device: 'x' })).toBe(false)
    expect(inputTarget(fold, 'x', 1300, true)).toBe(null)
    expect(inputTarget(null, 's', 0, false)).toBe(null)
  })
})
