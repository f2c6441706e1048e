/**
 * fromLanguageModel driving a real engine on fake-indexeddb: what a watcher saw live is what
 * the durable log replays to, for any part sequence (coalescing loses nothing and doubles
 * nothing), and a fresh engine on the same database reads the same rows.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { replayTranscript } from '../../src/core/transcript'
import { createDemoTools } from '../../src/engine/tools'
import type { SessionMessage } from '../../src/schema/messages'
import { fromLanguageModel } from '../../worker/index'
import { inProcessEngine } from '../support/engines'
import { allEvents, allRows, expectWellFormed, startEngine, untilTurnsEnded } from './harness'
import {
  finish,
  mockModel,
  type NeutralPart,
  partStream,
  SPEC_VERSIONS,
  type SpecVersion,
  text,
  toolCall,
} from './language-model-fixtures'

const piece = fc.string({ minLength: 0, maxLength: 6 })
/** One element of a step's stream, before its ending. */
const element = fc.oneof(
  { weight: 4, arbitrary: piece.map((delta) => ({ kind: 'text' as const, delta })) },
  { weight: 2, arbitrary: piece.map((delta) => ({ kind: 'reasoning' as const, delta })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 99 }).map((n) => ({ kind: 'call' as const, n })) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 99 }).map((n) => ({ kind: 'provider-call' as const, n })),
  },
)
const ending = fc.constantFrom('finish', 'finish-no-usage', 'no-finish', 'error-part', 'throw', 'bad-json')
type Element = typeof element extends fc.Arbitrary<infer T> ? T : never
type Ending = typeof ending extends fc.Arbitrary<infer T> ? T : never

/** The parts of the first step; block ids change with the kind, as providers do. */
function partsOf(elements: readonly Element[], end: Ending): { parts: NeutralPart[]; throws: boolean } {
  const parts: NeutralPart[] = []
  let calls = 0
  elements.forEach((e, i) => {
    switch (e.kind) {
      case 'text':
        parts.push({ type: 'text-delta', id: `t${i}`, delta: e.delta })
        break
      case 'reasoning':
        parts.push({ type: 'reasoning-delta', id: `r${i}`, delta: e.delta })
        break
      case 'call':
        parts.push(...toolCall(`call_${++calls}`, 'calculator', JSON.stringify({ expression: `${e.n} * 2` })))
        break
      case 'provider-call': {
        const id = `ws_${++calls}`
        parts.push(
          {
            type: 'tool-call',
            toolCallId: id,
            toolName: 'web_search',
            input: `{"q":"${e.n}"}`,
            providerExecuted: true,
          },
          { type: 'tool-result', toolCallId: id, toolName: 'web_search', result: { hits: e.n } },
        )
        break
      }
    }
  })
  switch (end) {
    case 'finish':
      parts.push(finish(calls > 0 ? 'tool-calls' : 'stop', { input: 10, output: parts.length }))
      break
    case 'finish-no-usage':
      parts.push(finish('stop'))
      break
    case 'error-part':
      parts.push({ type: 'error', error: 'overloaded' })
      break
    case 'bad-json':
      parts.push(...toolCall('call_bad', 'calculator', '{"expression":'), finish('tool-calls'))
      break
    case 'no-finish':
    case 'throw':
      break
  }
  return { parts, throws: end === 'throw' }
}

/** The rows a watcher holds after every change, live and durable, upserted by id. */
function rowsWatcher() {
  const rows = new Map<string, SessionMessage>()
  /** Every text an assistant row was seen with, in order. */
  const seenTexts = new Map<string, string[]>()
  return {
    rows,
    seenTexts,
    listener(change: { rows: readonly SessionMessage[] }) {
      for (const row of change.rows) {
        rows.set(row.id, row)
        if (row.role !== 'assistant') continue
        const texts = seenTexts.get(row.id) ?? []
        texts.push(joined(row))
        seenTexts.set(row.id, texts)
      }
    },
  }
}

/** The streamed text of a row, by kind, tool parts left out (consecutive pieces of a kind join). */
const joined = (row: SessionMessage) =>
  row.parts
    .flatMap((p) => (p.type === 'text' ? [`t:${p.text}`] : p.type === 'reasoning' ? [`r:${p.text}`] : []))
    .reduce<string[]>((out, piece) => {
      const last = out.at(-1)
      if (last?.slice(0, 2) === piece.slice(0, 2)) out[out.length - 1] = last + piece.slice(2)
      else out.push(piece)
      return out
    }, [])
    .join('\u0000')

async function runTurn(version: SpecVersion, first: { parts: NeutralPart[]; throws: boolean }) {
  const mock = mockModel(version, (call) =>
    call === 0
      ? partStream(version, first.parts, first.throws ? 'throw' : 'close')
      : partStream(version, [...text('t', 'The answer is in.'), finish('stop', { input: 3, output: 4 })]),
  )
  const { engine, dbName, sessionId, close } = await startEngine({
    provider: fromLanguageModel(mock.model),
    tools: createDemoTools({ now: () => 0 }),
  })
  const watcher = rowsWatcher()
  const unsubscribe = await engine.watch(sessionId, watcher.listener)
  try {
    await engine.admit(sessionId, { text: 'go' })
    await untilTurnsEnded(engine, sessionId, 1)
    const events = await allEvents(engine, sessionId)
    return { engine, dbName, sessionId, events, watcher }
  } finally {
    unsubscribe()
    await close()
  }
}

describe('fromLanguageModel in a real engine', () => {
  test.each(SPEC_VERSIONS)('%s: a tool step then an answer, logged and replayed alike', async (version) => {
    const { events, dbName, sessionId } = await runTurn(version, {
      parts: [
        { type: 'reasoning-delta', id: 'r', delta: 'Need math.' },
        ...text('t', 'Let me ', 'check.'),
        ...toolCall('call_1', 'calculator', '{"expression":"6 * 7"}'),
        finish('tool-calls', { input: 8, output: 5, cached: 2 }),
      ],
      throws: false,
    })
    expect(expectWellFormed(events)).toEqual([])
    const fresh = await inProcessEngine({ dbName })
    try {
      const rows = await allRows(fresh.engine, sessionId)
      const assistant = rows.filter((r) => r.role === 'assistant')
      expect(assistant.map((r) => r.finish)).toEqual(['tool-calls', 'stop'])
      expect(assistant[0]!.parts).toEqual([
        { type: 'reasoning', text: 'Need math.' },
        { type: 'text', text: 'Let me check.' },
        {
          type: 'tool',
          callId: 'call_1',
          name: 'calculator',
          input: { expression: '6 * 7' },
          output: { expression: '6 * 7', value: 42 },
          isError: false,
          state: 'done',
        },
      ])
      expect(assistant[0]!.usage).toEqual({ input: 8, output: 5, cachedInput: 2 })
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    } finally {
      await fresh.close()
    }
  })

  test.each(SPEC_VERSIONS)(
    '%s: a stream that fails ends the turn `error`, the text before it kept',
    async (version) => {
      const { events } = await runTurn(version, { parts: text('t', 'Half '), throws: true })
      expect(expectWellFormed(events)).toEqual([])
      const rows = replayTranscript(events)
      expect(rows.find((r) => r.role === 'assistant')).toMatchObject({
        parts: [{ type: 'text', text: 'Half ' }],
        finish: 'error',
        status: 'error',
      })
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'error' } })
    },
  )

  test('property: for any part sequence, the live view ends where the durable log replays to', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SPEC_VERSIONS),
        fc.array(element, { maxLength: 12 }),
        ending,
        async (version, elements, end) => {
          const { events, watcher, dbName, sessionId } = await runTurn(version, partsOf(elements, end))
          expect(expectWellFormed(events)).toEqual([])
          const replayed = replayTranscript(events)
          // What the watcher holds last for each row is the row the log replays to.
          expect(replayed.map((r) => watcher.rows.get(r.id))).toEqual(replayed)
          expect(watcher.rows.size).toBe(replayed.length)
          // Nothing shown live was taken back or doubled: the streamed text of every preview is a
          // prefix of the row's last. (Text streamed while a tool call's write is in flight
          // previews before that call's part for a moment, hence tool parts are left out here.)
          for (const [id, texts] of watcher.seenTexts) {
            const last = joined(watcher.rows.get(id)!)
            for (const seen of texts) expect(last.startsWith(seen)).toBe(true)
          }
          // A fresh engine on the same database reads the same rows.
          const fresh = await inProcessEngine({ dbName })
          try {
            expect(await allRows(fresh.engine, sessionId)).toEqual(replayed)
          } finally {
            await fresh.close()
          }
        },
      ),
      { numRuns: 40 },
    )
  })
})
