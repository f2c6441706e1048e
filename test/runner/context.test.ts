import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { ModelProvider, ProviderChunk, Tools } from '../../src/engine/provider'
import { createVisibleRows, watchVisibleContext } from '../../src/engine/runner-context'
import type { Visibility } from '../../src/schema/common'
import type { SessionEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { freshDbName, immediateSchedule } from '../support/engines'
import { allEvents, waitFor } from './harness'

/** What one provider request does besides answering: admit input here or in another tab. */
type Action = 'none' | 'steer' | 'queue' | 'other-tab-steer'

const stepPlan = fc.record({
  words: fc.integer({ min: 0, max: 3 }),
  reasoning: fc.boolean(),
  /** Tool calls of the step: `echo` answers, `missing` is unknown (an error result). */
  tools: fc.array(fc.constantFrom('echo', 'missing'), { maxLength: 2 }),
  action: fc.constantFrom<Action>('none', 'none', 'steer', 'queue', 'other-tab-steer'),
})
type StepPlan = typeof stepPlan extends fc.Arbitrary<infer T> ? T : never

const tools: Tools = {
  echo: { run: async (input) => ({ echoed: input }) },
}

/** A fresh read, as the provider's context is specified: visible rows in seq order, without the step's own row. */
async function freshContext(
  read: () => Promise<readonly SessionMessage[]>,
  turn: number,
  step: number,
): Promise<SessionMessage[]> {
  const rows = await read()
  return rows.filter(
    (row) =>
      row.visibility === 'visible' && !(row.role === 'assistant' && row.turn === turn && row.step === step),
  )
}

describe('the context the runner gives the provider', () => {
  test('equals a fresh read of the visible transcript at every request (steers, queued input, tools, another tab)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepPlan, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 3 }),
        async (plans, firstInputs) => {
          const dbName = freshDbName('context')
          const options = { dbName, indexedDB, IDBKeyRange, schedule: immediateSchedule }
          const seen: { got: SessionMessage[]; fresh: SessionMessage[] }[] = []
          let calls = 0
          let sessionId = ''
          const provider: ModelProvider = (request) =>
            (async function* (): AsyncGenerator<ProviderChunk> {
              seen.push({
                got: [...request.context],
                fresh: await freshContext(
                  async () => (await engine.loadThrough(request.sessionId, { seq: 0 })).messages,
                  request.turn,
                  request.step,
                ),
              })
              const n = ++calls
              const plan: StepPlan = plans[n - 1] ?? { words: 1, reasoning: false, tools: [], action: 'none' }
              if (plan.action === 'steer' || plan.action === 'queue')
                await engine.admit(sessionId, { text: `input ${n}`, delivery: plan.action })
              if (plan.action === 'other-tab-steer') {
                await otherTab.admit(sessionId, { text: `from another tab ${n}`, delivery: 'steer' })
                await otherTab.promote(sessionId, 'checkpoint')
              }
              if (plan.reasoning) yield { type: 'reasoning', text: `thinking ${n}` }
              for (let w = 0; w < plan.words; w++) yield { type: 'text', text: `word${w} ` }
              for (const [i, name] of plan.tools.entries())
                yield { type: 'tool-call', callId: `call_${n}_${i}`, name, input: { i } }
              yield { type: 'finish', finish: plan.tools.length > 0 ? 'tool-calls' : 'stop' }
            })()
          const engine = createEngine({ ...options, provider, tools })
          const otherTab = createEngine(options)
          try {
            sessionId = (await engine.createSession({ title: 'context' })).id
            for (let i = 0; i < firstInputs; i++)
              await engine.admit(sessionId, { text: `first ${i}`, delivery: 'queue' })
            await waitFor(engine, sessionId, async () => {
              const events = await allEvents(engine, sessionId)
              return events.at(-1)?.type === 'turn/end' && (await engine.pending(sessionId)).length === 0
            })
            expect(seen.length).toBeGreaterThan(0)
            for (const { got, fresh } of seen) expect(got).toStrictEqual(fresh)
          } finally {
            await engine.close()
            await otherTab.close()
          }
        },
      ),
      { seed: 20261130, numRuns: 25 },
    )
  })
})

describe('watchVisibleContext', () => {
  test('catches up with rows another tab wrote, by a head check or by a reread after a reset', async () => {
    const options = { dbName: freshDbName('context'), indexedDB, IDBKeyRange, broadcast: false }
    const engine = createEngine(options)
    const otherTab = createEngine(options)
    try {
      const { id } = await engine.createSession({ title: 'two tabs' })
      const visible = async () =>
        (await engine.loadThrough(id, { seq: 0 })).messages.filter((r) => r.visibility === 'visible')
      await engine.admit(id, { text: 'first' })
      await engine.promote(id, 'settled')
      const context = watchVisibleContext(engine, id)
      expect(await context.read()).toStrictEqual(await visible())
      // The other tab's row lands; our next write finds the cache behind and returns before
      // the feed has delivered that row.
      await otherTab.admit(id, { text: 'steer from the other tab' })
      await otherTab.promote(id, 'checkpoint')
      const { headSeq } = await engine.append(id, [{ type: 'step/start', data: { turn: 1, step: 1 } }])
      const rows = await context.read(headSeq)
      expect(rows.map((r) => r.parts)).toContainEqual([{ type: 'text', text: 'steer from the other tab' }])
      expect(rows).toStrictEqual(await visible())
      await otherTab.append(id, [{ type: 'step/end', data: { turn: 1, step: 1 } }])
      await otherTab.admit(id, { text: 'and another' })
      await otherTab.promote(id, 'checkpoint')
      expect(await context.read()).toStrictEqual(await visible())
      // More than the feed sends row by row: it says `reset`, and the rows are read again.
      const longRun: SessionEvent[] = [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }]
      for (let turn = 2; longRun.length < 2100; turn++) {
        longRun.push(
          { type: 'turn/start', data: { turn } },
          {
            type: 'user/message',
            data: { inputId: `u${turn}`, text: `${turn}`, delivery: 'queue', source: 'user' },
          },
          { type: 'turn/end', data: { turn, reason: 'completed' } },
        )
      }
      await otherTab.append(id, longRun)
      const afterReset = await context.read()
      expect(afterReset.length).toBeGreaterThan(700)
      expect(afterReset).toStrictEqual(await visible())
      context.close()
      await expect(context.read()).rejects.toMatchObject({ code: 'invalid_state' })
    } finally {
      await engine.close()
      await otherTab.close()
    }
  })
})

describe('createVisibleRows', () => {
  const row = (id: string, seq: number, visibility: Visibility, text: string): SessionMessage => ({
    id,
    sessionId: 's',
    seq,
    role: 'user',
    turn: 1,
    parts: [{ type: 'text', text }],
    status: 'complete',
    visibility,
    createdAt: 0,
    updatedAt: 0,
  })
  const write = fc.record({
    id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    seq: fc.integer({ min: 1, max: 12 }),
    visibility: fc.constantFrom<Visibility>('visible', 'visible', 'inactive'),
    text: fc.string({ maxLength: 3 }),
  })

  test('upserts by id match a naive model: latest row per id, visible only, in seq order, one left out on request', () => {
    fc.assert(
      fc.property(fc.array(write, { maxLength: 8 }), fc.array(write, { maxLength: 30 }), (seed, writes) => {
        // A row's seq is unique within a session: the model keeps one id per seq.
        const model = new Map<string, SessionMessage>()
        const put = (r: SessionMessage) => {
          for (const [id, held] of model) if (held.seq === r.seq && id !== r.id) model.delete(id)
          model.set(r.id, r)
        }
        const rows = createVisibleRows()
        const seeded = seed.map((w) => row(w.id, w.seq, w.visibility, w.text))
        for (const r of seeded) put(r)
        rows.reset([...model.values()].sort((a, b) => a.seq - b.seq))
        for (const w of writes) {
          const r = row(w.id, w.seq, w.visibility, w.text)
          const clash = [...model.values()].find((held) => held.seq === r.seq && held.id !== r.id)
          if (clash) rows.upsert({ ...clash, visibility: 'inactive' })
          put(r)
          rows.upsert(r)
          const expected = [...model.values()]
            .filter((m) => m.visibility === 'visible')
            .sort((a, b) => a.seq - b.seq)
          expect(rows.snapshot()).toStrictEqual(expected)
          expect(rows.snapshot(w.id)).toStrictEqual(expected.filter((m) => m.id !== w.id))
        }
      }),
      { seed: 7, numRuns: 300 },
    )
  })
})
