/**
 * Compaction with a summary the provider writes, and by token budget (docs/decisions/0033,
 * amendment), through the engine's public API on fake-indexeddb with a small model: it answers
 * prompts with a fixed text and, asked to summarise, with a summary naming the rows it was sent.
 * An aborted, failed or overtaken compaction commits nothing and leaves the context as it was;
 * a rewind across a compaction brings back exactly the rows it replaced; a cold engine agrees.
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import type { ModelProvider, ProviderRequest } from '../../src/engine/provider'
import { abortError } from '../../src/engine/providers/abort'
import { SUMMARY_INSTRUCTION_ID } from '../../src/engine/summarize'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionMessage } from '../../src/schema/messages'
import { inProcessEngine } from '../support/engines'
import { allEvents, countOf, startEngine, untilTurnsEnded } from './harness'

const textOf = (row: SessionMessage) => row.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')
const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id)
const isSummaryRequest = (request: ProviderRequest) => request.context.at(-1)?.id === SUMMARY_INSTRUCTION_ID

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isSessionlineError(error)) return error.code
    throw error
  }
  throw new Error('expected a SessionlineError')
}

interface Model {
  provider: ModelProvider
  requests: ProviderRequest[]
  /** When set, a summary request waits for it (or for its signal) before answering. */
  hold: Promise<void> | null
  /** Resolves at the next summary request. */
  summaryAsked(): Promise<void>
  failSummary: boolean
}

/** Answers each prompt with `reply` (usage: its context at 4 chars a token); summarises on request. */
function smallModel(reply = 'an answer of some forty characters here.'): Model {
  let asked: (() => void) | null = null
  const model: Model = {
    requests: [],
    hold: null,
    failSummary: false,
    summaryAsked: () => new Promise<void>((resolve) => (asked = resolve)),
    provider: (request) => {
      model.requests.push(request)
      return (async function* () {
        if (isSummaryRequest(request)) {
          asked?.()
          if (model.hold) {
            const aborted = new Promise<never>((_, reject) =>
              request.signal.addEventListener('abort', () => reject(abortError('model request')), {
                once: true,
              }),
            )
            await Promise.race([model.hold, aborted])
          }
          if (model.failSummary) throw new Error('the model is down')
          const replaced = request.context.slice(0, -1).map((r) => r.id)
          yield { type: 'text' as const, text: `summary of ${replaced.length} rows` }
          yield { type: 'finish' as const, finish: 'stop' as const, usage: { input: 100, output: 7 } }
          return
        }
        const chars = request.context.reduce((n, r) => n + textOf(r).length, 0)
        yield { type: 'text' as const, text: reply }
        yield {
          type: 'finish' as const,
          finish: 'stop' as const,
          usage: { input: Math.ceil(chars / 4), output: 10 },
        }
      })()
    },
  }
  return model
}

const visible = async (engine: Engine, sessionId: string) =>
  (await engine.page(sessionId, { limit: 1000 })).messages.filter((r) => r.visibility === 'visible')
const everyRow = async (engine: Engine, sessionId: string) =>
  (await engine.page(sessionId, { limit: 1000, includeInactive: true })).messages

async function converse(engine: Engine, sessionId: string, prompts: string[]) {
  let ended = countOf(await allEvents(engine, sessionId), 'turn/end')
  for (const text of prompts) {
    await engine.admit(sessionId, { id: text, text, delivery: 'queue' })
    await untilTurnsEnded(engine, sessionId, ++ended)
  }
}

test('the provider writes the summary: it gets the context it replaces, usage is counted, a rewind across it brings back exactly those rows, a cold engine agrees', async () => {
  const model = smallModel()
  const started = await startEngine({ provider: model.provider })
  const { engine, sessionId, dbName } = started
  let closed = false
  try {
    await converse(engine, sessionId, ['p1', 'p2', 'p3'])
    const before = await visible(engine, sessionId)
    expect(before.map((r) => r.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant'])
    const usageBefore = await engine.projection(sessionId, 'usage')

    // Through the second answer: p1, its answer, p2 and its answer are replaced; p3 and its answer stay.
    const summary = await engine.compact(sessionId, { throughSeq: before[3]!.seq, id: 'sum-1' })
    const asked = model.requests.at(-1)!
    expect(isSummaryRequest(asked)).toBe(true)
    expect(asked.tools).toEqual([])
    expect(ids(asked.context.slice(0, -1))).toEqual(ids(before.slice(0, 4)))
    expect(summary).toMatchObject({ id: 'sum-1', role: 'summary', visibility: 'visible' })
    expect(textOf(summary)).toBe('summary of 4 rows')
    expect(ids((await engine.context(sessionId)).rows)).toEqual(['sum-1', ...ids(before.slice(4))])
    const usageAfter = await engine.projection(sessionId, 'usage')
    expect(usageAfter).toMatchObject({
      input: usageBefore.input + 100,
      output: usageBefore.output + 7,
      calls: usageBefore.calls + 1,
    })
    const replaced = (await everyRow(engine, sessionId)).filter((r) => r.visibility === 'inactive')
    expect(ids(replaced)).toEqual(ids(before.slice(0, 4)))

    // The next turn is answered from the summary and what it kept.
    await converse(engine, sessionId, ['p4'])
    expect(ids(model.requests.at(-1)!.context)).toEqual(['sum-1', ...ids(before.slice(4)), 'p4'])

    // Rewinding to p2 puts the head on p1's answer: the compaction is off the path, and exactly
    // the rows before p2 are back, nothing of p3 or the summary resurrected.
    const { text } = await engine.rewind(sessionId, 'p2')
    expect(text).toBe('p2')
    expect(ids(await visible(engine, sessionId))).toEqual(ids(before.slice(0, 2)))
    expect(ids((await engine.context(sessionId)).rows)).toEqual(ids(before.slice(0, 2)))
    // Back onto the compacted branch: the summary and what followed it.
    await engine.switchBranch(sessionId, 'p4')
    const context = ids((await engine.context(sessionId)).rows)
    expect(context.slice(0, 4)).toEqual(['sum-1', ...ids(before.slice(4)), 'p4'])

    const warm = {
      rows: await everyRow(engine, sessionId),
      context: await engine.context(sessionId),
      usage: await engine.projection(sessionId, 'usage'),
    }
    await started.close()
    closed = true
    const cold = await inProcessEngine({ dbName })
    try {
      expect(await everyRow(cold.engine, sessionId)).toEqual(warm.rows)
      expect(await cold.engine.context(sessionId)).toEqual(warm.context)
      expect(await cold.engine.projection(sessionId, 'usage')).toEqual(warm.usage)
    } finally {
      await cold.close()
    }
  } finally {
    if (!closed) await started.close()
  }
})

test('an interrupt aborts a compaction the provider is writing: nothing is committed, the context is unchanged', async () => {
  const model = smallModel()
  const { engine, sessionId, close } = await startEngine({ provider: model.provider })
  try {
    await converse(engine, sessionId, ['p1', 'p2'])
    const log = await allEvents(engine, sessionId)
    const context = await engine.context(sessionId)
    let release!: () => void
    model.hold = new Promise<void>((resolve) => (release = resolve))
    const asked = model.summaryAsked()
    const compaction = codeOf(engine.compact(sessionId, {}))
    await asked
    await engine.interrupt(sessionId)
    expect(await compaction).toBe('aborted')
    release()
    expect(await allEvents(engine, sessionId)).toEqual(log)
    expect(await engine.context(sessionId)).toEqual(context)

    // A provider that fails: a typed error, nothing committed.
    model.hold = null
    model.failSummary = true
    expect(await codeOf(engine.compact(sessionId, {}))).toBe('provider_error')
    expect(await allEvents(engine, sessionId)).toEqual(log)
    expect(await engine.context(sessionId)).toEqual(context)
  } finally {
    await close()
  }
})

test('a compaction overtaken by a new turn while its summary was written is refused as a conflict', async () => {
  const model = smallModel()
  const { engine, sessionId, close } = await startEngine({ provider: model.provider })
  try {
    await converse(engine, sessionId, ['p1'])
    let release!: () => void
    model.hold = new Promise<void>((resolve) => (release = resolve))
    const asked = model.summaryAsked()
    const compaction = codeOf(engine.compact(sessionId, {}))
    await asked
    // The runner answers a new prompt meanwhile: the head moves past the one the summary is for.
    await converse(engine, sessionId, ['p2'])
    const log = await allEvents(engine, sessionId)
    const context = await engine.context(sessionId)
    release()
    expect(await compaction).toBe('conflict')
    expect(await allEvents(engine, sessionId)).toEqual(log)
    expect(await engine.context(sessionId)).toEqual(context)
  } finally {
    await close()
  }
})

test('compaction by budget: before a turn whose context would exceed contextTokens, the newest rows within keepTokens stay', async () => {
  // Each answer is 40 characters (10 tokens by characters); prompts are 2.
  const model = smallModel()
  const budget = { contextTokens: 40, keepTokens: 15 }
  const { engine, sessionId, close } = await startEngine({ provider: model.provider, compaction: budget })
  try {
    await converse(engine, sessionId, ['p1', 'p2'])
    // Reported usage of the second step: input ceil((2+40+2)/4) = 11, output 10; with p3's 2
    // characters the estimate is 22 tokens: under budget, no compaction.
    expect(countOf(await allEvents(engine, sessionId), 'history/compact')).toBe(0)
    await converse(engine, sessionId, ['p3', 'p4'])
    // Before p4: the last step reported input ceil((2+40+2+40+2)/4) = 22 and output 10, and p4
    // adds 1: 33, under 40. Before p5: input ceil(128/4)=32 + 10 + 1 = 43 > 40: compaction.
    expect(countOf(await allEvents(engine, sessionId), 'history/compact')).toBe(0)
    const before = await visible(engine, sessionId)
    await converse(engine, sessionId, ['p5'])
    const log = await allEvents(engine, sessionId)
    expect(countOf(log, 'history/compact')).toBe(1)
    // It came before p5's turn opened, and replaced everything but the newest 15 tokens: p4's
    // answer (10) and p4 (1) fit, p3's answer would not.
    const compactAt = log.findIndex((e) => e.type === 'history/compact')
    const p5At = log.findIndex((e) => e.type === 'user/message' && e.data.inputId === 'p5')
    expect(compactAt).toBeLessThan(p5At)
    const summaryRequest = model.requests.filter(isSummaryRequest).at(-1)!
    expect(ids(summaryRequest.context.slice(0, -1))).toEqual(ids(before.slice(0, 6)))
    const answered = model.requests.at(-1)!
    expect(answered.context[0]!.role).toBe('summary')
    expect(ids(answered.context.slice(1))).toEqual([...ids(before.slice(6)), 'p5'])
    // The next turns run from the compacted context; the estimate now rests on characters (no
    // step since the summary) and then on the new step's usage, so it does not compact again at once.
    await converse(engine, sessionId, ['p6'])
    expect(countOf(await allEvents(engine, sessionId), 'history/compact')).toBe(1)
  } finally {
    await close()
  }
})

test('a compaction budget that cannot hold is refused as the engine is created', async () => {
  for (const compaction of [
    { contextTokens: 100, keepTokens: 100 },
    { contextTokens: 0, keepTokens: 0 },
    { contextTokens: 10.5, keepTokens: 1 },
  ]) {
    expect(await codeOf(inProcessEngine({ provider: smallModel().provider, compaction }))).toBe(
      'invalid_input',
    )
  }
})

test('an engine that closes while the provider writes the summary leaves the log as it was: a cold engine reads the same context', async () => {
  const model = smallModel()
  const started = await startEngine({ provider: model.provider })
  const { engine, sessionId, dbName } = started
  await converse(engine, sessionId, ['p1', 'p2'])
  const log = await allEvents(engine, sessionId)
  const context = await engine.context(sessionId)
  model.hold = new Promise<void>(() => {})
  const asked = model.summaryAsked()
  const compaction = codeOf(engine.compact(sessionId, {}))
  await asked
  await started.close()
  expect(await compaction).toBe('aborted')
  const cold = await inProcessEngine({ dbName })
  try {
    expect(await allEvents(cold.engine, sessionId)).toEqual(log)
    expect(await cold.engine.context(sessionId)).toEqual(context)
  } finally {
    await cold.close()
  }
})

test('property: prompts, rewinds and compactions that succeed, abort or fail; a failed one changes nothing, context ⊆ visible, a cold engine agrees', async () => {
  type Action = { type: 'prompt' } | { type: 'compact' | 'abort' | 'fail' | 'rewind'; pick: number }
  const action: fc.Arbitrary<Action> = fc.oneof(
    fc.constant({ type: 'prompt' as const }),
    fc.record({
      type: fc.constantFrom('compact' as const, 'abort' as const, 'fail' as const, 'rewind' as const),
      pick: fc.nat(20),
    }),
  )
  let run = 0
  await fc.assert(
    fc.asyncProperty(fc.array(action, { minLength: 2, maxLength: 7 }), async (actions) => {
      const model = smallModel()
      const started = await startEngine({ provider: model.provider })
      const { engine, sessionId, dbName } = started
      let closed = false
      let n = 0
      try {
        for (const a of actions) {
          const shown = await visible(engine, sessionId)
          const pickRow = (pick: number, rows: SessionMessage[]) => rows[pick % Math.max(rows.length, 1)]
          if (a.type === 'prompt') {
            await converse(engine, sessionId, [`run${run}-p${n++}`])
          } else if (a.type === 'rewind') {
            const prompt = pickRow(
              a.pick,
              shown.filter((r) => r.role === 'user'),
            )
            if (prompt) await engine.rewind(sessionId, prompt.id)
          } else {
            const log = await allEvents(engine, sessionId)
            const context = await engine.context(sessionId)
            const through = pickRow(a.pick, shown)?.seq
            model.failSummary = a.type === 'fail'
            let release!: () => void
            model.hold = a.type === 'abort' ? new Promise<void>((resolve) => (release = resolve)) : null
            const asked = model.summaryAsked()
            const outcome = codeOf(
              engine.compact(sessionId, through === undefined ? {} : { throughSeq: through }),
            )
            if (a.type === 'abort') {
              // Refused before the provider was asked (nothing to compact), or aborted while it writes.
              const first = await Promise.race([asked.then(() => 'asked'), outcome])
              if (first === 'asked') await engine.interrupt(sessionId)
              release()
            }
            const code = await outcome.catch((error: unknown) =>
              error instanceof Error ? 'succeeded' : 'odd',
            )
            if (a.type === 'compact' && code === 'succeeded') {
              expect((await engine.context(sessionId)).rows[0]!.role).toBe('summary')
            } else {
              // Every refusal is typed, and leaves the log and the context as they were.
              expect(['aborted', 'provider_error', 'invalid_input', 'invalid_state']).toContain(code)
              expect(await allEvents(engine, sessionId)).toEqual(log)
              expect(await engine.context(sessionId)).toEqual(context)
            }
            model.failSummary = false
            model.hold = null
          }
          const visibleIds = new Set(ids(await visible(engine, sessionId)))
          for (const row of (await engine.context(sessionId)).rows) expect(visibleIds.has(row.id)).toBe(true)
        }
        const warm = { rows: await everyRow(engine, sessionId), context: await engine.context(sessionId) }
        await started.close()
        closed = true
        const cold = await inProcessEngine({ dbName })
        try {
          expect(await everyRow(cold.engine, sessionId)).toEqual(warm.rows)
          expect(await cold.engine.context(sessionId)).toEqual(warm.context)
        } finally {
          await cold.close()
        }
      } finally {
        run += 1
        if (!closed) await started.close()
      }
    }),
    { numRuns: 12 },
  )
}, 120_000)

test('Stop during an automatic compaction aborts it: nothing committed, the prompt stays pending, the context as it was', async () => {
  const model = smallModel()
  const { engine, sessionId, close } = await startEngine({
    provider: model.provider,
    compaction: { contextTokens: 20, keepTokens: 5 },
  })
  try {
    // The first answer reports input ceil(2/4) = 1 and output 10; p2 is 60 characters (15
    // tokens), so the estimate before p2 is 26 > 20 and the runner compacts first.
    await converse(engine, sessionId, ['p1'])
    const log = await allEvents(engine, sessionId)
    const context = await engine.context(sessionId)
    model.hold = new Promise<void>(() => {})
    const asked = model.summaryAsked()
    await engine.admit(sessionId, { id: 'p2', text: 'x'.repeat(60), delivery: 'queue' })
    await asked
    await engine.interrupt(sessionId)
    expect(await allEvents(engine, sessionId)).toEqual(log)
    expect(await engine.context(sessionId)).toEqual(context)
    expect((await engine.pending(sessionId)).map((p) => p.id)).toEqual(['p2'])
  } finally {
    await close()
  }
})
