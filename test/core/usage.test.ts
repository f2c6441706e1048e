import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { replay } from '../../src/core/projection'
import { usage } from '../../src/core/usage'
import type { SessionEvent } from '../../src/schema/events'
import { UsageTotals } from '../../src/schema/session'
import { arbSessionLog, stamp } from '../support/arb-log'

describe('usage totals', () => {
  test('count every step usage once and ignore assistant/end usage', () => {
    const log: SessionEvent[] = [
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'm', turn: 1, step: 1 } },
      { type: 'assistant/end', data: { messageId: 'm', finish: 'stop', usage: { input: 100, output: 7 } } },
      { type: 'step/end', data: { turn: 1, step: 1, usage: { input: 100, output: 7 } } },
      { type: 'step/start', data: { turn: 1, step: 2 } },
      { type: 'step/end', data: { turn: 1, step: 2 } },
      { type: 'turn/end', data: { turn: 1, reason: 'aborted' } },
    ]
    expect(usage.view(replay(usage, stamp(log, 's')))).toEqual({ input: 100, output: 7, calls: 1 })
  })

  test('returns the same state for events that carry no step usage', () => {
    const state = usage.init()
    const [created] = stamp([{ type: 'session/created', data: { title: '' } }], 's')
    expect(usage.apply(state, created!)).toBe(state)
    expect(usage.view(state)).toBe(state)
  })

  test('sum the step usage of 500 generated logs, aborted turns included, and replay in any split', () => {
    fc.assert(
      fc.property(arbSessionLog(), fc.nat(), (log, at) => {
        const events = stamp(log, 's')
        const steps = log.flatMap((e) => (e.type === 'step/end' && e.data.usage ? [e.data.usage] : []))
        const expected = {
          input: steps.reduce((sum, u) => sum + u.input, 0),
          output: steps.reduce((sum, u) => sum + u.output, 0),
          calls: steps.length,
        }
        const totals = replay(usage, events)
        expect(UsageTotals.parse(totals)).toEqual(expected)
        const split = at % (events.length + 1)
        const cached = structuredClone(replay(usage, events.slice(0, split)))
        expect(replay(usage, events.slice(split), cached)).toEqual(totals)
      }),
      { seed: 5_150, numRuns: 500 },
    )
  })
})
