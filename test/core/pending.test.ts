import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  mergePending,
  pendingSteers,
  pendingView,
  queuedInputs,
  selectForPromotion,
} from '../../src/core/pending'
import type { Delivery } from '../../src/schema/common'
import type { InputReceipt, InputStatus } from '../../src/schema/inputs'

const receipt = (
  seq: number,
  delivery: Delivery = 'steer',
  status: InputStatus = 'pending',
): InputReceipt => ({
  id: `in-${seq}`,
  sessionId: 's',
  seq,
  delivery,
  text: `text ${seq}`,
  status,
  admittedAt: 1000 + seq,
  revision: 0,
})

describe('pending inputs', () => {
  test('the view holds pending receipts only, in admission order', () => {
    const view = pendingView([
      receipt(3),
      receipt(1, 'queue'),
      receipt(2, 'steer', 'promoted'),
      receipt(4, 'steer', 'cancelled'),
    ])
    expect(view.map((r) => r.seq)).toEqual([1, 3])
    expect(pendingSteers(view).map((r) => r.seq)).toEqual([3])
    expect(queuedInputs(view).map((r) => r.seq)).toEqual([1])
  })

  test('merging keeps the same array when nothing visible changed', () => {
    const current = pendingView([receipt(1), receipt(2)])
    expect(mergePending(current, [])).toBe(current)
    expect(mergePending(current, [receipt(9, 'steer', 'cancelled')])).toBe(current)
    expect(mergePending(current, [current[0]!])).toBe(current)
  })

  test('merging replaces receipts by id and drops those that left the inbox', () => {
    const current = pendingView([receipt(1), receipt(2), receipt(3, 'queue')])
    const edited = { ...receipt(2), text: 'edited' }
    const merged = mergePending(current, [receipt(1, 'steer', 'promoted'), edited, receipt(4)])
    expect(merged.map((r) => [r.seq, r.text])).toEqual([
      [2, 'edited'],
      [3, 'text 3'],
      [4, 'text 4'],
    ])
  })

  test('merging agrees with a fresh view of all receipts', () => {
    const arbReceipt = fc
      .record({
        seq: fc.integer({ min: 1, max: 12 }),
        delivery: fc.constantFrom<Delivery>('steer', 'queue'),
        status: fc.constantFrom<InputStatus>('pending', 'promoted', 'cancelled'),
      })
      .map(({ seq, delivery, status }) => receipt(seq, delivery, status))
    fc.assert(
      fc.property(
        fc.array(arbReceipt, { maxLength: 10 }),
        fc.array(arbReceipt, { maxLength: 10 }),
        (before, changes) => {
          const byId = new Map(before.map((r) => [r.id, r]))
          const current = pendingView(byId.values())
          for (const r of changes) byId.set(r.id, r)
          expect(mergePending(current, changes)).toEqual(pendingView(byId.values()))
        },
      ),
      { seed: 808, numRuns: 300 },
    )
  })

  test('a checkpoint promotes every pending steer, oldest first, and no queued input', () => {
    const pending = [receipt(4), receipt(1, 'queue'), receipt(2), receipt(3, 'steer', 'cancelled')]
    expect(selectForPromotion(pending, 'checkpoint').map((r) => r.seq)).toEqual([2, 4])
    expect(selectForPromotion([receipt(1, 'queue')], 'checkpoint')).toEqual([])
  })

  test('settling promotes the pending steers, or else the single oldest queued input', () => {
    expect(selectForPromotion([receipt(5), receipt(1, 'queue')], 'settled').map((r) => r.seq)).toEqual([5])
    expect(
      selectForPromotion([receipt(7, 'queue'), receipt(3, 'queue')], 'settled').map((r) => r.seq),
    ).toEqual([3])
    expect(selectForPromotion([], 'settled')).toEqual([])
  })
})
