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

/** One edit of a window as the view makes them: a delta, a new row, older rows paged in, a row gone, a gap. */
const edit = fc.oneof(
  fc.record({
    kind: fc.constant('grow' as const),
    at: fc.nat(),
    text: fc.constantFrom(' more', '\nnext line', ''),
  }),
  fc.record({ kind: fc.constant('same' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('append' as const),
    newTurn: fc.boolean(),
    role: fc.constantFrom('user' as const, 'assistant' as const),
  }),
  fc.record({ kind: fc.constant('prepend' as const), count: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('hasOlder' as const) }),
  fc.record({ kind: fc.constant('breaks' as const), at: fc.nat() }),
)

test('walking again from the first changed row gives what a fresh walk gives, over any edits (fixed seed)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 12 }), fc.array(edit, { maxLength: 25 }), (turnCount, edits) => {
      let seq = 1000
      const row = (turn: number, role: 'user' | 'assistant', text: string): MessageRow => {
        const id = `r${seq}`
        return {
          key: id,
          kind: 'message',
          message: {
            id,
            sessionId: 's',
            seq: seq++,
            role,
            turn,
            parts: [{ type: 'text', text }],
            status: 'complete',
            visibility: 'visible',
            createdAt: 0,
            updatedAt: 0,
          },
        }
      }
      let rows: MessageRow[] = []
      for (let t = 1; t <= turnCount; t++)
        rows.push(row(t, 'user', `ask ${t}`), row(t, 'assistant', `answer ${t}`))
      let hasOlder = true
      let breaks: number[] = []
      let oldest = 1
      const derive = createLoadedTurns()
      let before = derive(rows, hasOlder, breaks)
      for (const e of edits) {
        const next = rows.slice()
        if (e.kind === 'grow' && next.length > 0) {
          const at = e.at % next.length
          const { message } = next[at]!
          const text = (message.parts[0] as { text: string }).text + e.text
          next[at] = { ...next[at]!, message: { ...message, parts: [{ type: 'text', text }] } }
        } else if (e.kind === 'same' && next.length > 0) {
          const at = e.at % next.length
          next[at] = { ...next[at]! } // a new object, the same words
        } else if (e.kind === 'append') {
          const lastTurn = next.at(-1)?.message.turn ?? 0
          next.push(row(e.newTurn || lastTurn === 0 ? lastTurn + 1 : lastTurn, e.role, `said ${seq}`))
        } else if (e.kind === 'prepend') {
          const older = Array.from({ length: e.count }, () =>
            row(Math.max(0, --oldest), 'assistant', `old ${seq}`),
          )
          next.unshift(...older.reverse())
          breaks = breaks.map((b) => b + e.count)
        } else if (e.kind === 'remove' && next.length > 0) {
          const at = e.at % next.length
          next.splice(at, 1)
          breaks = breaks.filter((b) => b !== at).map((b) => (b > at ? b - 1 : b))
        } else if (e.kind === 'hasOlder') hasOlder = !hasOlder
        else if (e.kind === 'breaks' && next.length > 1) {
          const at = 1 + (e.at % (next.length - 1))
          breaks = breaks.includes(at)
            ? breaks.filter((b) => b !== at)
            : [...breaks, at].sort((a, b) => a - b)
        }
        const previous = rows
        rows = next
        const after = derive(rows, hasOlder, breaks)
        expect(after).toEqual(createLoadedTurns()(rows, hasOlder, breaks))
        // With the same segments, a turn whose rows are the very same objects keeps its mark.
        if (e.kind === 'grow' || e.kind === 'same' || e.kind === 'append') {
          const rowsOf = (list: MessageRow[], turn: number) => list.filter((r) => r.message.turn === turn)
          for (const turn of after) {
            const was = before.find((t) => t.turn === turn.turn)
            const now = rowsOf(rows, turn.turn)
            const then = rowsOf(previous, turn.turn)
            if (was && now.length === then.length && now.every((r, i) => r === then[i]))
              expect(turn).toBe(was)
          }
        }
        before = after
      }
    }),
    { seed: 42, numRuns: 300 },
  )
})
