import fc from 'fast-check'
import { expect, test } from 'vitest'
import { createLoadedTurns } from '../../src/client/loaded-turns'
import type { MessageRow } from '../../src/client/window'
import { replay } from '../../src/core/projection'
import { replayTranscript } from '../../src/core/transcript'
import { turnOutline } from '../../src/core/turn-outline'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import { mergeTurnRailItems } from '../../src/view/rail'

const words = fc.constantFrom('alpha ', 'beta\n', '  gamma', 'δ ', '\n\n', 'a-long-word-that-goes-on ', '')
const chunk = fc.oneof(
  { weight: 9, arbitrary: fc.array(words, { maxLength: 6 }).map((w) => w.join('')) },
  { weight: 1, arbitrary: fc.constant('x'.repeat(5000)) },
)

/** A turn as the runner writes it: prompts (maybe synthetic first), steps with text, reasoning and tools, steers between steps. */
const turnShape = fc.record({
  syntheticFirst: fc.boolean(),
  prompt: chunk,
  steps: fc.array(
    fc.record({
      deltas: fc.array(fc.record({ text: fc.option(chunk, { nil: undefined }), reasoning: fc.boolean() }), {
        maxLength: 4,
      }),
      tool: fc.boolean(),
      steer: fc.option(chunk, { nil: undefined }),
    }),
    { maxLength: 3 },
  ),
})

type TurnShape = typeof turnShape extends fc.Arbitrary<infer T> ? T : never

function logOf(turns: TurnShape[]): StoredEvent[] {
  const events: SessionEvent[] = []
  turns.forEach((shape, i) => {
    const turn = i + 1
    events.push({ type: 'turn/start', data: { turn } })
    if (shape.syntheticFirst)
      events.push({
        type: 'user/message',
        data: { inputId: `s${turn}`, text: 'system nudge', delivery: 'steer', source: 'synthetic' },
      })
    events.push({
      type: 'user/message',
      data: { inputId: `u${turn}`, text: shape.prompt || 'hi', delivery: 'steer', source: 'user' },
    })
    shape.steps.forEach((step, j) => {
      const messageId = `m${turn}-${j + 1}`
      events.push({ type: 'step/start', data: { turn, step: j + 1 } })
      events.push({ type: 'assistant/start', data: { messageId, turn, step: j + 1 } })
      for (const d of step.deltas) {
        if (d.reasoning) events.push({ type: 'assistant/delta', data: { messageId, reasoning: 'hmm ' } })
        if (d.text !== undefined) events.push({ type: 'assistant/delta', data: { messageId, text: d.text } })
      }
      if (step.tool) {
        const callId = `c${turn}-${j + 1}`
        events.push({ type: 'tool/call', data: { messageId, callId, name: 'look', input: {} } })
        events.push({ type: 'assistant/end', data: { messageId, finish: 'tool-calls' } })
        events.push({ type: 'tool/result', data: { callId, output: 'ok', isError: false } })
      } else events.push({ type: 'assistant/end', data: { messageId, finish: 'stop' } })
      events.push({ type: 'step/end', data: { turn, step: j + 1 } })
      if (step.steer !== undefined)
        events.push({
          type: 'user/message',
          data: { inputId: `st${turn}-${j}`, text: `${step.steer} steer`, delivery: 'steer', source: 'user' },
        })
    })
    events.push({ type: 'turn/end', data: { turn, reason: 'completed' } })
  })
  return events.map((event, i) => ({ ...event, sessionId: 's', seq: i + 1, at: 1000 + i }) as StoredEvent)
}

test('a turn shows the same words from any suffix of its rows as from the outline (300 logs, fixed seed)', () => {
  fc.assert(
    fc.property(fc.array(turnShape, { minLength: 1, maxLength: 5 }), fc.nat(), (turns, cutSeed) => {
      const events = logOf(turns)
      const rows: MessageRow[] = replayTranscript(events).map((message) => ({
        key: message.id,
        kind: 'message',
        message,
      }))
      const outline = turnOutline.view(replay(turnOutline, events))
      const cut = cutSeed % rows.length
      const loaded = createLoadedTurns()(rows.slice(cut), cut > 0)
      const rail = mergeTurnRailItems(loaded, outline)
      expect(rail.map(({ turn, prompt, response }) => ({ turn, prompt, response }))).toEqual(
        outline.map(({ turn, prompt, response }) => ({ turn, prompt, response })),
      )
    }),
    { seed: 5150, numRuns: 300 },
  )
})

test('keeps each turn and the array while its rows are the same objects', () => {
  const events = logOf([
    {
      syntheticFirst: false,
      prompt: 'one',
      steps: [{ deltas: [{ text: 'first', reasoning: false }], tool: false, steer: undefined }],
    },
    {
      syntheticFirst: false,
      prompt: 'two',
      steps: [{ deltas: [{ text: 'second', reasoning: false }], tool: false, steer: undefined }],
    },
  ])
  const rows: MessageRow[] = replayTranscript(events).map((message) => ({
    key: message.id,
    kind: 'message',
    message,
  }))
  const derive = createLoadedTurns()
  const first = derive(rows, false)
  expect(derive([...rows], false)).toBe(first)
  const last = rows.at(-1)!
  const changed = [
    ...rows.slice(0, -1),
    { ...last, message: { ...last.message, parts: [{ type: 'text' as const, text: 'second, longer' }] } },
  ]
  const next = derive(changed, false)
  expect(next).not.toBe(first)
  expect(next[0]).toBe(first[0])
  expect(next[1]!.response).toBe('second, longer')
})
