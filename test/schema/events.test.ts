import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { isSessionlineError, parseOrThrow, SessionlineError } from '../../src/schema/errors'
import { EVENT_TYPES, SessionEvent } from '../../src/schema/events'
import { arbSessionLog } from '../support/arb-log'

/** The error `parseOrThrow(SessionEvent, …)` throws for `value` (fails the test if it parses). */
function rejection(value: unknown): SessionlineError {
  try {
    parseOrThrow(SessionEvent, value, 'event', ['events', 2])
  } catch (error) {
    if (isSessionlineError(error)) return error
    throw error
  }
  throw new Error(`accepted ${JSON.stringify(value)}`)
}

describe('event schema', () => {
  test('accepts every event of 500 generated logs', () => {
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        for (const event of log) expect(SessionEvent.parse(event)).toEqual(event)
      }),
      { seed: 11, numRuns: 500 },
    )
  })

  test('covers the whole vocabulary', () => {
    expect([...EVENT_TYPES].sort()).toEqual(
      [
        'session/created',
        'turn/start',
        'user/message',
        'step/start',
        'assistant/start',
        'assistant/delta',
        'tool/call',
        'tool/result',
        'tool/approval-request',
        'tool/approval',
        'assistant/end',
        'step/end',
        'turn/end',
        'history/head',
        'history/compact',
      ].sort(),
    )
  })

  test.each([
    ['an unknown type', { type: 'turn/explode', data: { turn: 1 } }, 'events[2].type'],
    [
      'a missing field',
      { type: 'user/message', data: { inputId: 'i', text: 't', delivery: 'steer' } },
      'events[2].data.source',
    ],
    ['a field of the wrong type', { type: 'turn/start', data: { turn: '1' } }, 'events[2].data.turn'],
    ['an extra key in data', { type: 'turn/start', data: { turn: 1, extra: true } }, 'events[2].data.extra'],
    ['an extra key on the event', { type: 'turn/start', data: { turn: 1 }, seq: 4 }, 'events[2].seq'],
    [
      'a delta with neither text nor reasoning',
      { type: 'assistant/delta', data: { messageId: 'm' } },
      'events[2].data.text',
    ],
    [
      'an unknown finish',
      { type: 'assistant/end', data: { messageId: 'm', finish: 'done' } },
      'events[2].data.finish',
    ],
    [
      'negative usage',
      { type: 'step/end', data: { turn: 1, step: 1, usage: { input: -1, output: 0 } } },
      'events[2].data.usage.input',
    ],
  ])('rejects %s with invalid_input naming the field', (_, value, field) => {
    const error = rejection(value)
    expect(error).toBeInstanceOf(SessionlineError)
    expect(error.code).toBe('invalid_input')
    expect(error.message).toContain(`${field}:`)
    expect(error.toJSON()).toMatchObject({ code: 'invalid_input', details: { issues: [{ path: field }] } })
  })
})
