/**
 * Tool approvals in the pure core: generated sequences of requests, answers, results and a turn
 * end over one step's three calls, run through `decide`. A plain model of each call's state says
 * which must be refused (a refusal writes nothing), and the rows the decisions folded equal a
 * plain replay of the events they wrote (incremental fold against reference replay).
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { type Command, decide, type SessionState } from '../../src/core/decide'
import { initFolds } from '../../src/core/folds'
import { rowIdsCreated } from '../../src/core/ids'
import { replayTranscript } from '../../src/core/transcript'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'

const CALLS = ['c1', 'c2', 'c3'] as const
type Act =
  | { type: 'request'; call: number }
  | { type: 'result'; call: number }
  | { type: 'respond'; call: number; approved: boolean }
  | { type: 'turn-end' }

const call = fc.nat(CALLS.length - 1)
const act: fc.Arbitrary<Act> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ type: fc.constant('request' as const), call }) },
  {
    weight: 3,
    arbitrary: fc.record({ type: fc.constant('respond' as const), call, approved: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('result' as const), call }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('turn-end' as const) }) },
)

const opening: SessionEvent[] = [
  { type: 'turn/start', data: { turn: 1 } },
  { type: 'user/message', data: { inputId: 'u1', text: 'go', delivery: 'steer', source: 'user' } },
  { type: 'step/start', data: { turn: 1, step: 1 } },
  { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
  ...CALLS.map(
    (callId): SessionEvent => ({
      type: 'tool/call',
      data: { messageId: 'm1', callId, name: 'deploy', input: {} },
    }),
  ),
  { type: 'assistant/end', data: { messageId: 'm1', finish: 'tool-calls' } },
]

type Model = 'running' | 'awaiting' | 'settled'

describe('tool approvals in core', () => {
  test('respond is accepted exactly for a waiting call, and the folded rows equal a plain replay', () => {
    fc.assert(
      fc.property(fc.array(act, { maxLength: 14 }), (acts) => {
        let state: SessionState = {
          sessionId: 's',
          source: 'native',
          headSeq: 0,
          nextInputSeq: 1,
          folds: initFolds(),
          pending: [],
        }
        const log: StoredEvent[] = []
        const rows = new Map<string, SessionMessage>()
        const run = (command: Command) => {
          const decision = decide(state, command, 1000 + log.length)
          if (isSessionlineError(decision)) return decision
          log.push(...decision.events)
          for (const row of decision.rows) rows.set(row.id, row)
          if (decision.next) state = decision.next
          return undefined
        }
        const append = (events: SessionEvent[]) =>
          run({ type: 'append', events, owners: rowIdsCreated(events).map(() => undefined) })
        expect(append(opening)).toBeUndefined()

        const model: Model[] = CALLS.map(() => 'running')
        let open = true
        for (const a of acts) {
          const before = log.length
          if (a.type === 'turn-end') {
            const refused = append([
              { type: 'step/end', data: { turn: 1, step: 1 } },
              { type: 'turn/end', data: { turn: 1, reason: 'aborted' } },
            ])
            expect(refused === undefined).toBe(open)
            if (open) model.fill('settled')
            open = false
            continue
          }
          const callId = CALLS[a.call]!
          const expected = model[a.call]
          let refused: unknown
          if (a.type === 'request') {
            refused = append([{ type: 'tool/approval-request', data: { callId } }])
            expect(refused === undefined).toBe(expected === 'running')
            if (!refused) model[a.call] = 'awaiting'
          } else if (a.type === 'result') {
            refused = append([{ type: 'tool/result', data: { callId, output: 1, isError: false } }])
            expect(refused === undefined).toBe(expected === 'running')
            if (!refused) model[a.call] = 'settled'
          } else {
            refused = run({ type: 'respond', callId, approved: a.approved, remember: 'call' })
            expect(refused === undefined).toBe(expected === 'awaiting')
            if (refused) expect(refused).toMatchObject({ code: 'invalid_state', details: { callId } })
            else model[a.call] = a.approved ? 'running' : 'settled'
          }
          // A refusal writes nothing.
          if (refused) expect(log.length).toBe(before)
        }
        const replayed = replayTranscript(log)
        expect(replayed.map((row) => rows.get(row.id))).toEqual(replayed)
        const parts = replayed.find((row) => row.id === 'm1')!.parts
        const states = parts.flatMap((part) => (part.type === 'tool' ? [part.state] : []))
        states.forEach((state, i) => {
          if (model[i] === 'awaiting') expect(state).toBe('awaiting-approval')
          if (model[i] === 'running') expect(state).toBe('running')
        })
      }),
      { numRuns: 300 },
    )
  })
})
