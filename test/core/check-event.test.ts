import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { applyTranscript, checkEvent, initTranscript, type TranscriptState } from '../../src/core/transcript'
import type { Finish, SessionEvent, StoredEvent, TurnEndReason } from '../../src/schema/events'
import { SessionMessage } from '../../src/schema/messages'
import { arbSessionLog, stamp } from '../support/arb-log'

const SEED = 7_301
const at = (event: SessionEvent, seq = 1): StoredEvent => stamp([event], 's', seq)[0]!

/** Events that cannot follow in a log whose fold state is `state`. */
function invalidAfter(state: TranscriptState): SessionEvent[] {
  const out: SessionEvent[] = [
    { type: 'assistant/delta', data: { messageId: 'no-such-message', text: 'x' } },
    { type: 'tool/call', data: { messageId: 'no-such-message', callId: 'c', name: 'n', input: null } },
    { type: 'assistant/end', data: { messageId: 'no-such-message', finish: 'stop' } },
    { type: 'tool/result', data: { callId: 'no-such-call', output: null, isError: false } },
  ]
  const turn = state.openTurn
  if (state.lastTurn > 0) out.push({ type: 'turn/start', data: { turn: state.lastTurn } })
  if (turn === null) {
    out.push(
      { type: 'user/message', data: { inputId: 'late', text: 't', delivery: 'steer', source: 'user' } },
      { type: 'step/start', data: { turn: state.lastTurn + 1, step: 1 } },
      { type: 'turn/end', data: { turn: Math.max(1, state.lastTurn), reason: 'completed' } },
      { type: 'step/end', data: { turn: Math.max(1, state.lastTurn), step: 1 } },
    )
  } else {
    out.push(
      { type: 'turn/start', data: { turn: state.lastTurn + 1 } },
      { type: 'turn/end', data: { turn: turn + 1, reason: 'completed' } },
      { type: 'step/start', data: { turn: turn + 1, step: state.lastStep + 1 } },
    )
    if (state.openStep === null && state.lastStep > 0)
      out.push({ type: 'step/start', data: { turn, step: state.lastStep } })
    if (state.openStep === null) {
      out.push(
        { type: 'assistant/start', data: { messageId: 'fresh', turn, step: Math.max(1, state.lastStep) } },
        { type: 'step/end', data: { turn, step: Math.max(1, state.lastStep) } },
      )
    } else {
      out.push(
        { type: 'step/start', data: { turn, step: state.openStep + 1 } },
        { type: 'assistant/start', data: { messageId: 'fresh', turn, step: state.openStep + 1 } },
        { type: 'step/end', data: { turn, step: state.openStep + 1 } },
      )
    }
  }
  for (const row of state.open) {
    const { id } = row
    out.push({ type: 'user/message', data: { inputId: id, text: 't', delivery: 'steer', source: 'user' } })
    if (row.role === 'assistant' && row.step !== undefined)
      out.push({ type: 'assistant/start', data: { messageId: id, turn: row.turn, step: row.step } })
    if (row.status !== 'streaming') {
      out.push({ type: 'assistant/delta', data: { messageId: id, text: 'x' } })
      out.push({ type: 'assistant/end', data: { messageId: id, finish: 'stop' } })
    }
  }
  const runningCalls = state.open.flatMap((row) =>
    row.parts.flatMap((part) => (part.type === 'tool' && part.state === 'running' ? [part.callId] : [])),
  )
  for (const callId of runningCalls) {
    for (const row of state.open)
      if (row.status === 'streaming')
        out.push({ type: 'tool/call', data: { messageId: row.id, callId, name: 'n', input: 1 } })
  }
  if (state.lastTurn > 0 || turn !== null) out.push({ type: 'session/created', data: { title: 'again' } })
  return out
}

describe('checkEvent', () => {
  test('accepts every event of 500 generated valid logs', () => {
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        let state = initTranscript()
        for (const [i, event] of stamp(log, 's').entries()) {
          const reason = checkEvent(state, event)
          if (reason !== undefined) throw new Error(`event ${i} (${event.type}) rejected: ${reason}`)
          state = applyTranscript(state, event).state
        }
      }),
      { seed: SEED, numRuns: 500 },
    )
  })

  test('rejects events that break the grammar anywhere in a log, and the fold ignores them', () => {
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        let state = initTranscript()
        for (const event of stamp(log, 's')) {
          for (const bad of invalidAfter(state)) {
            const reason = checkEvent(state, bad)
            if (reason === undefined)
              throw new Error(`accepted ${JSON.stringify(bad)} in ${JSON.stringify(state)}`)
            const next = applyTranscript(state, at(bad, 999))
            if (next.state !== state || next.changed.length > 0)
              throw new Error(`folded ${JSON.stringify(bad)}`)
          }
          state = applyTranscript(state, event).state
        }
      }),
      { seed: SEED + 1, numRuns: 200 },
    )
  })

  test('rejects a call id that is already running or already used by the message', () => {
    const events = stamp(
      [
        { type: 'turn/start', data: { turn: 1 } },
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'm', turn: 1, step: 1 } },
        { type: 'tool/call', data: { messageId: 'm', callId: 'c', name: 'n', input: 1 } },
        { type: 'tool/result', data: { callId: 'c', output: 2, isError: false } },
      ],
      's',
    )
    let state = initTranscript()
    for (const event of events.slice(0, 4)) state = applyTranscript(state, event).state
    const again: SessionEvent = {
      type: 'tool/call',
      data: { messageId: 'm', callId: 'c', name: 'n', input: 1 },
    }
    expect(checkEvent(state, again)).toMatch(/call id is already used/)
    state = applyTranscript(state, events[4]!).state
    expect(checkEvent(state, again)).toMatch(/call id is already used/)
  })

  test('explains what is wrong', () => {
    const state = initTranscript()
    expect(checkEvent(state, { type: 'assistant/delta', data: { messageId: 'm', text: 'x' } })).toBe(
      'assistant/delta: message m is not streaming',
    )
    const inTurn = applyTranscript(state, at({ type: 'turn/start', data: { turn: 3 } })).state
    expect(checkEvent(inTurn, { type: 'turn/start', data: { turn: 4 } })).toBe(
      'turn/start 4: turn 3 is still open',
    )
    const after = applyTranscript(
      inTurn,
      at({ type: 'turn/end', data: { turn: 3, reason: 'completed' } }),
    ).state
    expect(checkEvent(after, { type: 'turn/start', data: { turn: 2 } })).toBe(
      'turn/start 2: turn numbers must increase (last was 3)',
    )
  })
})

/** Events over tiny id and number pools, so random sequences hit every branch, valid or not. */
const arbAnyEvent: fc.Arbitrary<SessionEvent> = (() => {
  const id = fc.constantFrom('a', 'b', '__proto__', '1')
  const n = fc.integer({ min: 1, max: 3 })
  const text = fc.constantFrom('', 'x', ' y\n')
  return fc.oneof(
    fc.record({ type: fc.constant('session/created' as const), data: fc.record({ title: text }) }),
    fc.record({ type: fc.constant('turn/start' as const), data: fc.record({ turn: n }) }),
    fc.record({
      type: fc.constant('user/message' as const),
      data: fc.record({
        inputId: id,
        text,
        delivery: fc.constantFrom('steer' as const, 'queue' as const),
        source: fc.constantFrom('user' as const, 'synthetic' as const),
      }),
    }),
    fc.record({ type: fc.constant('step/start' as const), data: fc.record({ turn: n, step: n }) }),
    fc.record({
      type: fc.constant('assistant/start' as const),
      data: fc.record({ messageId: id, turn: n, step: n }),
    }),
    fc.record({
      type: fc.constant('assistant/delta' as const),
      data: fc.record({ messageId: id, text, reasoning: text }, { requiredKeys: ['messageId'] }),
    }),
    fc.record({
      type: fc.constant('tool/call' as const),
      data: fc.record({ messageId: id, callId: id, name: fc.constant('t'), input: fc.constant(null) }),
    }),
    fc.record({
      type: fc.constant('tool/result' as const),
      data: fc.record({ callId: id, output: fc.constant(1), isError: fc.boolean() }),
    }),
    fc.record({
      type: fc.constant('assistant/end' as const),
      data: fc.record({
        messageId: id,
        finish: fc.constantFrom<Finish>('stop', 'tool-calls', 'length', 'aborted', 'error'),
      }),
    }),
    fc.record({ type: fc.constant('step/end' as const), data: fc.record({ turn: n, step: n }) }),
    fc.record({
      type: fc.constant('turn/end' as const),
      data: fc.record({
        turn: n,
        reason: fc.constantFrom<TurnEndReason>('completed', 'aborted', 'error', 'interrupted'),
      }),
    }),
  )
})()

describe('the fold is total', () => {
  test('random event sequences never throw, accepted events build valid rows, rejected ones change nothing', () => {
    fc.assert(
      fc.property(fc.array(arbAnyEvent, { maxLength: 60 }), (log) => {
        let state = initTranscript()
        for (const event of stamp(log, 's')) {
          const reason = checkEvent(state, event)
          const next = applyTranscript(state, event)
          if (reason !== undefined) {
            expect(next.state).toBe(state)
            expect(next.changed).toEqual([])
          }
          for (const row of next.changed) SessionMessage.parse(row)
          expect(applyTranscript(structuredClone(state), event)).toEqual(next)
          state = next.state
        }
      }),
      { seed: SEED + 2, numRuns: 500 },
    )
  })
})
