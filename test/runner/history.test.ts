/**
 * The built-in runner answers the turns resend and regenerate open (docs/decisions/0033), with
 * the scripted provider on fake-indexeddb: the new prompt, or the prompt again, gets an answer
 * on its new branch, and the context it was given is the active path only; a verb while the
 * runner streams ends that turn `interrupted` first.
 */
import { expect, test } from 'vitest'
import type { ModelProvider } from '../../src/engine/provider'
import {
  allEvents,
  allRows,
  countOf,
  expectWellFormed,
  holdingProvider,
  scripted,
  startEngine,
  untilEvent,
  untilTurnsEnded,
} from './harness'

test('resend and regenerate are answered by the runner on their new branch', async () => {
  const seen: string[][] = []
  const inner = scripted(4)
  // Records what each step was sent (user texts), then answers as the scripted model does.
  const provider: ModelProvider = (request) => {
    seen.push(
      request.context.flatMap((row) =>
        row.role === 'user' ? row.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])) : [],
      ),
    )
    return inner(request)
  }
  const { engine, sessionId, close } = await startEngine({ provider })
  try {
    const first = await engine.admit(sessionId, { text: 'tell me a story', delivery: 'queue' })
    await untilTurnsEnded(engine, sessionId, 1)

    await engine.resend(sessionId, first.id, { id: 'edited', text: 'tell me a poem' })
    await untilTurnsEnded(engine, sessionId, 2)
    let rows = (await allRows(engine, sessionId)).filter((r) => r.visibility === 'visible')
    expect(rows.map((r) => r.role)).toEqual(['user', 'assistant'])
    expect(rows[0]!.id).toBe('edited')
    // The answer was asked for with the edited prompt alone, not the abandoned one.
    expect(seen.at(-1)).toEqual(['tell me a poem'])

    const answer = rows[1]!
    await engine.regenerate(sessionId, answer.id)
    await untilTurnsEnded(engine, sessionId, 3)
    rows = (await allRows(engine, sessionId)).filter((r) => r.visibility === 'visible')
    expect(rows.map((r) => r.id)[0]).toBe('edited')
    expect(rows[1]!.id).not.toBe(answer.id)
    expect(rows[1]!.branch).toEqual({ index: 1, count: 2 })
    expect(seen.at(-1)).toEqual(['tell me a poem'])

    const events = await allEvents(engine, sessionId)
    expect(expectWellFormed(events)).toEqual([])
    expect(countOf(events, 'history/head')).toBe(2)
  } finally {
    await close()
  }
})

test('after a compaction the runner sends the summary first, then what follows it', async () => {
  const seen: string[][] = []
  const inner = scripted(2)
  const provider: ModelProvider = (request) => {
    seen.push(
      request.context.map(
        (row) => `${row.role}:${row.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')}`,
      ),
    )
    return inner(request)
  }
  const { engine, sessionId, close } = await startEngine({ provider })
  try {
    const first = await engine.admit(sessionId, { text: 'first question', delivery: 'queue' })
    await untilTurnsEnded(engine, sessionId, 1)
    const rows = await allRows(engine, sessionId)
    // Keep the answer, replace the question.
    await engine.compact(sessionId, {
      throughSeq: rows.find((r) => r.id === first.id)!.seq,
      summary: 'asked a first question',
    })
    const context = (await engine.context(sessionId)).rows
    expect(context.map((r) => r.role)).toEqual(['summary', 'assistant'])
    await engine.admit(sessionId, { text: 'second question', delivery: 'queue' })
    await untilTurnsEnded(engine, sessionId, 2)
    const sent = seen.at(-1)!
    expect(sent[0]).toBe('summary:asked a first question')
    expect(sent[1]!.startsWith('assistant:')).toBe(true)
    expect(sent.at(-1)).toBe('user:second question')
    expect(sent).toHaveLength(3)
  } finally {
    await close()
  }
})

test('a rewind while the runner streams ends that turn interrupted; queued input stays pending', async () => {
  const { engine, sessionId, close } = await startEngine({
    provider: holdingProvider(scripted(3), ['still ', 'thinking']),
  })
  try {
    const first = await engine.admit(sessionId, { text: 'think hard', delivery: 'queue' })
    await untilEvent(engine, sessionId, 'assistant/delta')
    await engine.admit(sessionId, { id: 'later', text: 'and then this', delivery: 'queue' })
    expect(await engine.rewind(sessionId, first.id)).toEqual({ text: 'think hard' })
    const events = await allEvents(engine, sessionId)
    const ends = events.filter((e) => e.type === 'turn/end')
    expect(ends.map((e) => e.data)).toEqual([{ turn: 1, reason: 'interrupted' }])
    expect(events.at(-1)!.type).toBe('history/head')
    expect(expectWellFormed(events)).toEqual([])
    expect((await engine.pending(sessionId)).map((r) => r.id)).toEqual(['later'])
    expect((await allRows(engine, sessionId)).filter((r) => r.visibility === 'visible')).toEqual([])
  } finally {
    await close()
  }
})
