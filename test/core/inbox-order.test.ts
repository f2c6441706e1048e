/**
 * reorder and setDelivery (core/inbox-order) against a plain array: random moves, delivery
 * changes, admissions and promotions of a session's inbox. After every step the pending view is
 * the array's order, every receipt keeps its id, a change bumps the revision of exactly the
 * receipts it rewrites, and a promotion takes the first queued input of that order.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { decide, type SessionState } from '../../src/core/decide'
import { initFolds } from '../../src/core/folds'
import { decideReorder, decideSetDelivery } from '../../src/core/inbox-order'
import { pendingView } from '../../src/core/pending'
import { isSessionlineError } from '../../src/schema/errors'
import type { InputReceipt } from '../../src/schema/inputs'

type Act =
  | { type: 'admit'; delivery: 'steer' | 'queue' }
  | { type: 'reorder'; pick: number; before: number | null }
  | { type: 'delivery'; pick: number; delivery: 'steer' | 'queue' }
  | { type: 'promote' }

const act: fc.Arbitrary<Act> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('admit' as const),
      delivery: fc.constantFrom('steer' as const, 'queue' as const),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      type: fc.constant('reorder' as const),
      pick: fc.nat(9),
      before: fc.option(fc.nat(9), { nil: null }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('delivery' as const),
      pick: fc.nat(9),
      delivery: fc.constantFrom('steer' as const, 'queue' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('promote' as const) }) },
)

describe('reorder and setDelivery against a plain array', () => {
  test('the inbox keeps the order the moves made, with ids and revisions as edit keeps them', () => {
    fc.assert(
      fc.property(fc.array(act, { maxLength: 60 }), (acts) => {
        let state: SessionState = {
          sessionId: 's',
          source: 'native',
          headSeq: 1,
          nextInputSeq: 1,
          folds: initFolds(),
          pending: [],
        }
        const stored = new Map<string, InputReceipt>()
        let order: string[] = []
        let n = 0
        let clock = 0
        for (const a of acts) {
          const ids = [...order]
          switch (a.type) {
            case 'admit': {
              const d = decide(
                state,
                {
                  type: 'admit',
                  input: { id: `i${n++}`, text: 't', delivery: a.delivery },
                  stored: undefined,
                  rowOwner: undefined,
                },
                ++clock,
              )
              if (isSessionlineError(d)) throw d
              state = d.next!
              for (const r of d.receipts) stored.set(r.id, r)
              order.push(d.answer.id)
              break
            }
            case 'reorder': {
              const id = ids[a.pick] ?? 'missing'
              const before = a.before === null ? null : (ids[a.before] ?? 'missing')
              const d = decideReorder(
                state,
                {
                  inputId: id,
                  before,
                  stored: stored.get(id),
                  storedBefore: before === null ? undefined : stored.get(before),
                },
                ++clock,
              )
              if (id === 'missing' || before === 'missing') {
                expect(isSessionlineError(d) && d.code).toBe('not_found')
                break
              }
              if (before === id) {
                expect(isSessionlineError(d) && d.code).toBe('invalid_input')
                break
              }
              if (isSessionlineError(d)) throw d
              const without = order.filter((x) => x !== id)
              const to = before === null ? without.length : without.indexOf(before)
              const moved = [...without.slice(0, to), id, ...without.slice(to)]
              if (moved.join() === order.join()) expect(d.receipts).toEqual([])
              order = moved
              expect(d.answer.id).toBe(id)
              for (const r of d.receipts) {
                expect(r.revision).toBe(stored.get(r.id)!.revision + 1)
                stored.set(r.id, r)
              }
              if (d.next) state = d.next
              break
            }
            case 'delivery': {
              const id = ids[a.pick] ?? 'missing'
              const d = decideSetDelivery(
                state,
                { inputId: id, delivery: a.delivery, stored: stored.get(id) },
                ++clock,
              )
              if (id === 'missing') {
                expect(isSessionlineError(d) && d.code).toBe('not_found')
                break
              }
              if (isSessionlineError(d)) throw d
              const before = stored.get(id)!
              expect(d.receipts.length).toBe(before.delivery === a.delivery ? 0 : 1)
              for (const r of d.receipts) stored.set(r.id, r)
              if (d.next) state = d.next
              expect(stored.get(id)!.delivery).toBe(a.delivery)
              break
            }
            case 'promote': {
              const d = decide(state, { type: 'promote', mode: 'settled' }, ++clock)
              if (isSessionlineError(d)) throw d
              const steers = order.filter((id) => stored.get(id)!.delivery === 'steer')
              const expected =
                steers.length > 0
                  ? steers
                  : order.filter((id) => stored.get(id)!.delivery === 'queue').slice(0, 1)
              expect(d.receipts.map((r) => r.id)).toEqual(expected)
              for (const r of d.receipts) stored.set(r.id, r)
              order = order.filter((id) => !expected.includes(id))
              if (d.next) state = d.next
              // Close the turn so the next promotion may open one.
              if (expected.length > 0) {
                const turn = state.folds.transcript.openTurn!
                const end = decide(
                  state,
                  {
                    type: 'append',
                    events: [{ type: 'turn/end', data: { turn, reason: 'completed' } }],
                    owners: [],
                  },
                  ++clock,
                )
                if (isSessionlineError(end)) throw end
                state = end.next!
              }
              break
            }
          }
          expect(state.pending.map((r) => r.id)).toEqual(order)
          expect(pendingView(stored.values()).map((r) => r.id)).toEqual(order)
        }
      }),
      { seed: 23, numRuns: 300 },
    )
  })

  test('moving a promoted input is refused and writes nothing', () => {
    const receipt: InputReceipt = {
      id: 'p',
      sessionId: 's',
      seq: 1,
      delivery: 'queue',
      text: 't',
      status: 'promoted',
      admittedAt: 0,
      revision: 1,
    }
    const state: SessionState = {
      sessionId: 's',
      source: 'native',
      headSeq: 1,
      nextInputSeq: 2,
      folds: initFolds(),
      pending: [],
    }
    const d = decideReorder(state, { inputId: 'p', before: null, stored: receipt }, 1)
    expect(isSessionlineError(d) && d.code).toBe('invalid_state')
    const imported = decideSetDelivery(
      { ...state, source: 'pi' },
      { inputId: 'p', delivery: 'steer', stored: receipt },
      1,
    )
    expect(isSessionlineError(imported) && imported.code).toBe('invalid_state')
  })

  test('moves into one gap past what halving can split rank the inbox anew, in the same order', () => {
    let state: SessionState = {
      sessionId: 's',
      source: 'native',
      headSeq: 1,
      nextInputSeq: 1,
      folds: initFolds(),
      pending: [],
    }
    const stored = new Map<string, InputReceipt>()
    for (const id of ['a', 'b', 'c']) {
      const d = decide(
        state,
        {
          type: 'admit',
          input: { id, text: 't', delivery: 'queue' },
          stored: undefined,
          rowOwner: undefined,
        },
        0,
      )
      if (isSessionlineError(d)) throw d
      state = d.next!
      stored.set(id, d.answer)
    }
    let renumbered = 0
    // Each move puts the last input between the first and the one after it: the gap halves every time.
    for (let k = 0; k < 80; k++) {
      const order = state.pending.map((r) => r.id)
      const last = order[order.length - 1]!
      const d = decideReorder(state, { inputId: last, before: order[1]!, stored: stored.get(last) }, k)
      if (isSessionlineError(d)) throw d
      if (d.receipts.length > 1) renumbered++
      for (const r of d.receipts) stored.set(r.id, r)
      state = d.next!
      expect(state.pending.map((r) => r.id)).toEqual([order[0], last, ...order.slice(1, -1)])
    }
    expect(renumbered).toBeGreaterThan(0)
  })
})
