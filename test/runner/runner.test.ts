import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { clampPrompt, clampResponse } from '../../src/core/preview'
import { createEngineWithHost } from '../../src/engine/engine'
import { acquireLock, createInProcessLocks, runnerLockName } from '../../src/engine/locks'
import type { ModelProvider, Tools } from '../../src/engine/provider'
import { createRunner } from '../../src/engine/runner'
import { createDemoTools } from '../../src/engine/tools'
import type { SessionlineError } from '../../src/schema/errors'
import type { StoredEvent } from '../../src/schema/events'
import { comlinkEngine, freshDbName, inProcessEngine } from '../support/engines'
import { sse, sseHead, startServer, textChunk } from './fixtures'
import {
  allEvents,
  allRows,
  beforeFinish,
  countOf,
  expectWellFormed,
  holdingProvider,
  scripted,
  startEngine,
  turnsOf,
  untilEvent,
  untilTurnsEnded,
  waitFor,
} from './harness'

const types = (events: readonly StoredEvent[]) => events.map((e) => e.type)
const userInputs = (events: readonly StoredEvent[]) =>
  events.flatMap((e) => (e.type === 'user/message' ? [e.data.inputId] : []))

/** The runner reports provider failures through console.warn; these tests read what it said. */
function captureWarnings(): string[] {
  const warnings: string[] = []
  vi.spyOn(console, 'warn').mockImplementation((message: unknown) => {
    warnings.push(String(message))
  })
  return warnings
}
afterEach(() => {
  vi.restoreAllMocks()
})

describe('runner with the scripted provider on the real engine', () => {
  test('runs a turn for admitted input: one step per request, rows and usage follow the log', async () => {
    const { engine, sessionId, close } = await startEngine({
      provider: { kind: 'scripted', seed: 3, wordDelayMs: 0, toolRate: 1 },
    })
    try {
      const receipt = await engine.admit(sessionId, { text: 'what is 6 * 7?' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      const turn = turnsOf(events).get(1)!
      expect(types(turn).slice(0, 4)).toEqual(['turn/start', 'user/message', 'step/start', 'assistant/start'])
      expect(turn.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
      // toolRate 1: a tool step (call, then its result before step/end), then the answer step.
      expect(countOf(turn, 'step/start')).toBe(2)
      const step1 = types(turn.slice(turn.findIndex((e) => e.type === 'tool/call')))
      expect(step1.slice(0, 4)).toEqual(['tool/call', 'assistant/end', 'tool/result', 'step/end'])
      const rows = await allRows(engine, sessionId)
      expect(rows[0]).toMatchObject({ id: receipt.id, role: 'user', turn: 1 })
      expect(rows.slice(1).map((r) => [r.role, r.step, r.status])).toEqual([
        ['assistant', 1, 'complete'],
        ['assistant', 2, 'complete'],
      ])
      const tool = rows[1]!.parts.find((p) => p.type === 'tool')
      expect(tool).toMatchObject({ name: 'calculator', state: 'done', output: { value: 42 } })
      expect(rows[2]!.parts.find((p) => p.type === 'text')).toMatchObject({
        text: expect.stringContaining('= 42'),
      })
      const usage = await engine.projection(sessionId, 'usage')
      expect(usage.calls).toBe(2)
      expect(await engine.pending(sessionId)).toEqual([])
    } finally {
      await close()
    }
  })

  test('streamed words are coalesced: persisted with what is logged next, one batch per part kind', async () => {
    // A flush window no run reaches: the batches are written with the step's end, whatever the
    // machine's speed (the timer's own flush is what the interrupt and crash tests wait for).
    const dbName = freshDbName('runner-host')
    const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
    const runner = createRunner(host, { provider: scripted(5), flushMs: 600_000, lockScope: dbName })
    try {
      const { id: sessionId } = await engine.createSession()
      await engine.admit(sessionId, { text: 'tell me a long story' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      const rows = await allRows(engine, sessionId)
      const parts = rows[1]!.parts.filter((p) => p.type === 'text' || p.type === 'reasoning')
      const words = parts.map((p) => p.text).join('')
      expect(words.split(/\s+/).length).toBeGreaterThan(8)
      const deltas = events.filter((e) => e.type === 'assistant/delta')
      expect(deltas).toHaveLength(new Set(parts.map((p) => p.type)).size)
      expect(types(events.slice(events.indexOf(deltas.at(-1)!) + 1))[0]).toBe('assistant/end')
    } finally {
      await runner.close()
      await engine.close()
    }
  })

  test('a steer admitted mid-turn lands after the current step and before the next step, in the same turn', async () => {
    let steerId: string | undefined
    let admitSteer!: () => Promise<string>
    // The probe tool admits a steer while step 1's tool runs: deterministic, no timing.
    const tools: Tools = {
      probe: {
        description: 'looks around',
        async run() {
          steerId ??= await admitSteer()
          return { ok: true }
        },
      },
    }
    const { engine, sessionId, close } = await startEngine({ provider: scripted(1, 1), tools })
    admitSteer = async () =>
      (await engine.admit(sessionId, { text: 'also check the time', delivery: 'steer' })).id
    try {
      await engine.admit(sessionId, { text: 'look around' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(countOf(events, 'turn/start')).toBe(1)
      const steerAt = events.findIndex((e) => e.type === 'user/message' && e.data.inputId === steerId)
      const firstStepEnd = events.findIndex((e) => e.type === 'step/end')
      const secondAssistant = events.findIndex((e) => e.type === 'assistant/start' && e.data.step === 2)
      expect(firstStepEnd).toBeGreaterThan(0)
      expect(steerAt).toBe(firstStepEnd + 1)
      expect(secondAssistant).toBeGreaterThan(steerAt)
      expect(events.findIndex((e) => e.type === 'tool/result')).toBeLessThan(steerAt)
      const rows = await allRows(engine, sessionId)
      const steerRow = rows.find((r) => r.id === steerId)!
      expect(steerRow).toMatchObject({ role: 'user', turn: 1 })
      const before = rows.filter((r) => r.seq < steerRow.seq).map((r) => [r.role, r.step])
      const after = rows.filter((r) => r.seq > steerRow.seq).map((r) => [r.role, r.step, r.turn])
      expect(before).toEqual([
        ['user', undefined],
        ['assistant', 1],
      ])
      expect(after[0]).toEqual(['assistant', 2, 1])
    } finally {
      await close()
    }
  })

  test('a steer that arrives while the model is finishing keeps the turn going with another step', async () => {
    let engineRef: { admit: (text: string) => Promise<unknown> } | undefined
    const provider = beforeFinish(
      scripted(2),
      (turn, step) => turn === 1 && step === 1,
      () => engineRef!.admit('one more thing'),
    )
    const { engine, sessionId, close } = await startEngine({ provider })
    engineRef = { admit: (text) => engine.admit(sessionId, { text, delivery: 'steer' }) }
    try {
      await engine.admit(sessionId, { text: 'first question' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(countOf(events, 'turn/start')).toBe(1)
      expect(countOf(events, 'step/start')).toBe(2)
      const turn = types(events.slice(events.findIndex((e) => e.type === 'step/end')))
      expect(turn.slice(0, 3)).toEqual(['step/end', 'user/message', 'step/start'])
      expect(await engine.projection(sessionId, 'turnOutline')).toHaveLength(1)
    } finally {
      await close()
    }
  })

  test('a queued input waits for the turn to end, then opens the next turn', async () => {
    let queuedId: string | undefined
    let admitQueued!: () => Promise<unknown>
    // Step 1 calls a tool, so turn 1 has a safe boundary the queued input must not take.
    const provider = beforeFinish(
      scripted(4, 1),
      (turn, step) => turn === 1 && step === 1,
      () => admitQueued(),
    )
    const { engine, sessionId, close } = await startEngine({ provider, tools: createDemoTools() })
    admitQueued = async () => {
      queuedId = (await engine.admit(sessionId, { text: 'after that, summarize', delivery: 'queue' })).id
    }
    try {
      const first = await engine.admit(sessionId, { text: 'what time is it?' })
      await untilTurnsEnded(engine, sessionId, 2)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      const turns = turnsOf(events)
      expect(countOf(turns.get(1)!, 'step/start')).toBeGreaterThanOrEqual(2)
      expect(userInputs(turns.get(1)!)).toEqual([first.id])
      expect(userInputs(turns.get(2)!)).toEqual([queuedId])
      expect(types(turns.get(2)!).slice(0, 2)).toEqual(['turn/start', 'user/message'])
    } finally {
      await close()
    }
  })

  test('two queued inputs run one per turn, in admission order', async () => {
    const { engine, sessionId, close } = await startEngine({ provider: scripted(6, 0.5) })
    try {
      const q1 = await engine.admit(sessionId, { text: 'queued one', delivery: 'queue' })
      const q2 = await engine.admit(sessionId, { text: 'queued two', delivery: 'queue' })
      await untilTurnsEnded(engine, sessionId, 2)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      const turns = turnsOf(events)
      expect([...turns.keys()]).toEqual([1, 2])
      expect(userInputs(turns.get(1)!)).toEqual([q1.id])
      expect(userInputs(turns.get(2)!)).toEqual([q2.id])
      expect(turns.get(2)!.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    } finally {
      await close()
    }
  })

  test('interrupt ends the turn as aborted, keeps the streamed text and every pending input', async () => {
    const provider = holdingProvider(scripted(7), ['Working ', 'on ', 'it'])
    const { engine, sessionId, close } = await startEngine({ provider })
    try {
      await engine.admit(sessionId, { text: 'start something long' })
      await untilEvent(engine, sessionId, 'assistant/delta')
      const queued = await engine.admit(sessionId, { text: 'then this', delivery: 'queue' })
      const steer = await engine.admit(sessionId, { text: 'and steer this way', delivery: 'steer' })
      await engine.interrupt(sessionId)

      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(types(events.slice(-3))).toEqual(['assistant/end', 'step/end', 'turn/end'])
      expect(events.at(-3)).toMatchObject({ data: { finish: 'aborted' } })
      expect(events.at(-1)).toMatchObject({ data: { turn: 1, reason: 'aborted' } })
      const pending = await engine.pending(sessionId)
      expect(pending.map((r) => [r.id, r.status])).toEqual([
        [queued.id, 'pending'],
        [steer.id, 'pending'],
      ])
      const assistant = (await allRows(engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(assistant).toMatchObject({ status: 'interrupted', finish: 'aborted' })
      expect(assistant.parts).toEqual([{ type: 'text', text: 'Working on it' }])
      // Interrupted: no new turn starts by itself.
      expect(countOf(await allEvents(engine, sessionId), 'turn/start')).toBe(1)

      // New input resumes: the pending steers open turn 2, the queued input waits for turn 3.
      const next = await engine.admit(sessionId, { text: 'ok, go on' })
      await untilTurnsEnded(engine, sessionId, 3)
      const turns = turnsOf(await allEvents(engine, sessionId))
      expect(userInputs(turns.get(2)!)).toEqual([steer.id, next.id])
      expect(userInputs(turns.get(3)!)).toEqual([queued.id])
    } finally {
      await close()
    }
  })

  test('input admitted while an interrupt is being handled still runs, and interrupt waits for its own turn only', async () => {
    const { engine, sessionId, close } = await startEngine({
      provider: holdingProvider(scripted(16), ['busy']),
    })
    try {
      await engine.admit(sessionId, { text: 'first' })
      await untilEvent(engine, sessionId, 'assistant/delta')
      const [, next] = await Promise.all([
        engine.interrupt(sessionId),
        engine.admit(sessionId, { text: 'second' }),
      ])
      await untilTurnsEnded(engine, sessionId, 2)
      const turns = turnsOf(await allEvents(engine, sessionId))
      expect(turns.get(1)!.at(-1)).toMatchObject({ data: { reason: 'aborted' } })
      expect(userInputs(turns.get(2)!)).toEqual([next.id])
      expect(turns.get(2)!.at(-1)).toMatchObject({ data: { reason: 'completed' } })
    } finally {
      await close()
    }
  })

  test('a provider error ends the turn with error and loses no pending input', async () => {
    const failing: ModelProvider = async function* (request) {
      yield { type: 'text', text: 'partial ' }
      if (request.turn === 1) throw new Error('model server fell over')
      yield* scripted(1)(request)
    }
    const errors = captureWarnings()
    const { engine, sessionId, close } = await startEngine({ provider: failing })
    try {
      await engine.admit(sessionId, { text: 'go' })
      const queued = await engine.admit(sessionId, { text: 'later', delivery: 'queue' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-3)).toMatchObject({ type: 'assistant/end', data: { finish: 'error' } })
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'error' } })
      expect((await engine.pending(sessionId)).map((r) => r.id)).toEqual([queued.id])
      expect(errors.join()).toMatch(/model server fell over/)
      const assistant = (await allRows(engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(assistant).toMatchObject({ status: 'error', parts: [{ type: 'text', text: 'partial ' }] })
    } finally {
      await close()
    }
  })

  test('closing the engine mid-stream ends the turn as interrupted; a new engine sees the streamed text', async () => {
    const first = await startEngine({ provider: holdingProvider(scripted(8), ['Half ', 'a ', 'thought']) })
    const { sessionId, dbName } = first
    await first.engine.admit(sessionId, { text: 'think hard' })
    await untilEvent(first.engine, sessionId, 'assistant/delta')
    const queued = await first.engine.admit(sessionId, { text: 'next', delivery: 'queue' })
    await first.close()

    const second = await inProcessEngine({ dbName, provider: scripted(8) })
    try {
      const events = await allEvents(second.engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'interrupted' } })
      const assistant = (await allRows(second.engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(assistant).toMatchObject({
        status: 'interrupted',
        parts: [{ type: 'text', text: 'Half a thought' }],
      })
      expect((await second.engine.pending(sessionId)).map((r) => r.id)).toEqual([queued.id])
    } finally {
      await second.close()
    }
  })

  test('a turn left open by a dead runner is closed as interrupted on open, its persisted text kept', async () => {
    // A runner that died mid-step left this log behind (written here by hand: nothing closed it).
    const crashed = await startEngine()
    const { engine, sessionId, dbName } = crashed
    await engine.admit(sessionId, { text: 'before the crash' })
    await engine.promote(sessionId, 'settled')
    await engine.append(sessionId, [
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
      { type: 'assistant/delta', data: { messageId: 'm1', text: 'persisted batch' } },
      { type: 'tool/call', data: { messageId: 'm1', callId: 'c1', name: 'clock', input: {} } },
    ])
    await crashed.close()

    const reopened = await inProcessEngine({ dbName, provider: scripted(9) })
    try {
      await untilEvent(reopened.engine, sessionId, 'turn/end')
      const events = await allEvents(reopened.engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.slice(-3).map((e) => [e.type, e.data])).toEqual([
        ['assistant/end', { messageId: 'm1', finish: 'aborted' }],
        ['step/end', { turn: 1, step: 1 }],
        ['turn/end', { turn: 1, reason: 'interrupted' }],
      ])
      const row = (await allRows(reopened.engine, sessionId)).find((r) => r.id === 'm1')!
      expect(row.status).toBe('interrupted')
      expect(row.parts).toEqual([
        { type: 'text', text: 'persisted batch' },
        { type: 'tool', callId: 'c1', name: 'clock', input: {}, state: 'interrupted' },
      ])
    } finally {
      await reopened.close()
    }
  })

  test('a turn a live runner owns is not recovered by another engine on the same database', async () => {
    const owner = await startEngine({ provider: holdingProvider(scripted(10), ['still ', 'going']) })
    const { sessionId, dbName } = owner
    const other = await inProcessEngine({ dbName, provider: scripted(10) })
    try {
      await owner.engine.admit(sessionId, { text: 'long job' })
      await untilEvent(owner.engine, sessionId, 'assistant/delta')
      // The other engine touches the session, which asks its runner to recover: that may not
      // end a turn another runner holds (its Stop does: test/runner/two-tabs.test.ts).
      await other.engine.page(sessionId)
      await owner.engine.append(sessionId, []) // a round trip through the log after it
      expect(countOf(await allEvents(other.engine, sessionId), 'turn/end')).toBe(0)

      await owner.engine.interrupt(sessionId)
      const events = await allEvents(other.engine, sessionId)
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
      expect(countOf(events, 'turn/end')).toBe(1)
    } finally {
      await other.close()
      await owner.close()
    }
  })

  test('the turn outline has one entry per turn with its first prompt and final response', async () => {
    const { engine, sessionId, close } = await startEngine({
      provider: { kind: 'scripted', seed: 11, wordDelayMs: 0, toolRate: 0.5 },
    })
    try {
      const prompts = [
        'What is 12 * 12?',
        'And what time is it now, roughly speaking, in UTC terms please?',
        'Search my notes about the inbox',
      ]
      for (const text of prompts) await engine.admit(sessionId, { text, delivery: 'queue' })
      await untilTurnsEnded(engine, sessionId, 3)
      const rows = await allRows(engine, sessionId)
      const outline = await engine.projection(sessionId, 'turnOutline')
      expect(outline.map((e) => e.turn)).toEqual([1, 2, 3])
      outline.forEach((entry, i) => {
        const finalAnswer = rows.filter((r) => r.turn === entry.turn && r.role === 'assistant').at(-1)!
        const text = finalAnswer.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')
        expect(entry.prompt).toBe(clampPrompt(prompts[i]!))
        expect(entry.response).toBe(clampResponse(text))
        expect(entry.response).not.toBe('')
      })
      expect(countOf(await allEvents(engine, sessionId), 'step/start')).toBeGreaterThan(3)
    } finally {
      await close()
    }
  })

  test('host-driven by default; configure picks a provider at run time and runs the waiting input', async () => {
    const { engine, sessionId, close } = await startEngine()
    try {
      const receipt = await engine.admit(sessionId, { text: 'anyone there?' })
      await engine.page(sessionId)
      expect(countOf(await allEvents(engine, sessionId), 'turn/start')).toBe(0)
      await engine.configure({ provider: { kind: 'scripted', seed: 12, wordDelayMs: 0 } })
      await untilTurnsEnded(engine, sessionId, 1)
      expect(userInputs(await allEvents(engine, sessionId))).toEqual([receipt.id])
      await engine.configure({ provider: { kind: 'none' } })
      await expect(
        engine.configure({ provider: { kind: 'scripted', toolRate: 3 } } as never),
      ).rejects.toMatchObject({
        code: 'invalid_input',
      })
    } finally {
      await close()
    }
  })

  test('watchers see streamed text live, before it is durable', async () => {
    // With a flush window no run reaches, the held step's words are in no event yet while
    // watchers already show them.
    const dbName = freshDbName('runner-host')
    const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
    const runner = createRunner(host, {
      provider: holdingProvider(scripted(13), ['Live ', 'words ', 'first']),
      flushMs: 600_000,
      lockScope: dbName,
    })
    const { id: sessionId } = await engine.createSession()
    const live: string[] = []
    const unsubscribe = await engine.watch(sessionId, (change) => {
      if (change.durable) return
      for (const row of change.rows)
        if (row.role === 'assistant')
          live.push(row.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''))
    })
    try {
      await engine.admit(sessionId, { text: 'stream please' })
      await waitFor(engine, sessionId, async () => live.includes('Live words first'))
      expect(countOf(await allEvents(engine, sessionId), 'assistant/delta')).toBe(0)
      // Stopping persists what was shown, with the message's end.
      await runner.interrupt(sessionId)
      const events = await allEvents(engine, sessionId)
      expect(types(events.slice(-4))).toEqual(['assistant/delta', 'assistant/end', 'step/end', 'turn/end'])
      const assistant = (await allRows(engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(assistant.parts).toEqual([{ type: 'text', text: 'Live words first' }])
    } finally {
      unsubscribe()
      await runner.close()
      await engine.close()
    }
  })

  test('through Comlink: a serializable config picks the provider, and interrupt reaches the runner', async () => {
    const { engine, sessionId, close } = await startEngine(
      { provider: holdingProvider(scripted(14), ['held'], (turn) => turn === 2) },
      comlinkEngine,
    )
    try {
      await engine.admit(sessionId, { text: 'first turn runs to the end' })
      await untilTurnsEnded(engine, sessionId, 1)
      await engine.admit(sessionId, { text: 'second turn is held' })
      await untilEvent(
        engine,
        sessionId,
        'assistant/delta',
        (e) => e.type === 'assistant/delta' && e.data.text === 'held',
      )
      await engine.interrupt(sessionId)
      expect((await allEvents(engine, sessionId)).at(-1)).toMatchObject({
        data: { turn: 2, reason: 'aborted' },
      })

      await engine.configure({ provider: { kind: 'scripted', seed: 15, wordDelayMs: 0, toolRate: 1 } })
      await engine.admit(sessionId, { text: 'now with the scripted config and its demo tools' })
      await untilTurnsEnded(engine, sessionId, 3)
      const turn3 = turnsOf(await allEvents(engine, sessionId)).get(3)!
      expect(countOf(turn3, 'tool/result')).toBeGreaterThan(0)
      expect(turn3.at(-1)).toMatchObject({ data: { reason: 'completed' } })
    } finally {
      await close()
    }
  })
})

describe('runner against misbehaving providers and tools', () => {
  test('a model that calls tools forever is stopped after maxSteps, with unknown tools answered as errors', async () => {
    let requests = 0
    const looping: ModelProvider = async function* (request) {
      requests++
      yield {
        type: 'tool-call',
        callId: `c${request.step}`,
        name: request.step % 2 ? 'clock' : 'no_such_tool',
        input: {},
      }
      yield { type: 'finish', finish: 'tool-calls' }
    }
    captureWarnings()
    const { engine, sessionId, close } = await startEngine({
      provider: looping,
      tools: createDemoTools({ now: () => 0 }),
    })
    try {
      await engine.admit(sessionId, { text: 'loop' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ data: { reason: 'error' } })
      expect(requests).toBe(24)
      expect(events.find((e) => e.type === 'tool/result' && e.data.callId === 'c2')).toMatchObject({
        data: { isError: true, output: { error: 'Unknown tool "no_such_tool"' } },
      })
    } finally {
      await close()
    }
  })

  test('interrupt is prompt even when the provider and a tool ignore their abort signal', async () => {
    let toolStarted!: () => void
    const started = new Promise<void>((resolve) => {
      toolStarted = resolve
    })
    const deaf: ModelProvider = async function* (request) {
      if (request.step === 1) {
        yield { type: 'tool-call', callId: 'c1', name: 'stuck', input: {} }
        yield { type: 'finish', finish: 'tool-calls' }
        return
      }
      await new Promise(() => {}) // never answers, never looks at the signal
    }
    const tools: Tools = {
      stuck: {
        run: () => {
          toolStarted()
          return new Promise(() => {})
        },
      },
    }
    const { engine, sessionId, close } = await startEngine({ provider: deaf, tools })
    try {
      await engine.admit(sessionId, { text: 'hang' })
      await started
      await engine.interrupt(sessionId)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(types(events.slice(-2))).toEqual(['step/end', 'turn/end'])
      const row = (await allRows(engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(row.parts).toEqual([
        { type: 'tool', callId: 'c1', name: 'stuck', input: {}, state: 'interrupted' },
      ])
    } finally {
      await close()
    }
  })
})

describe('createRunner on an engine host', () => {
  test('options: maxSteps ends a looping turn with error, told to onError', async () => {
    const dbName = freshDbName('runner-host')
    const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
    const errors: SessionlineError[] = []
    const looping: ModelProvider = async function* (request) {
      yield { type: 'tool-call', callId: `c${request.step}`, name: 'clock', input: {} }
      yield { type: 'finish', finish: 'tool-calls' }
    }
    const runner = createRunner(host, {
      provider: looping,
      tools: createDemoTools({ now: () => 0 }),
      maxSteps: 3,
      onError: (error) => errors.push(error),
      lockScope: dbName,
    })
    try {
      const { id: sessionId } = await engine.createSession()
      await engine.admit(sessionId, { text: 'loop' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(countOf(events, 'step/start')).toBe(3)
      expect(events.at(-1)).toMatchObject({ data: { reason: 'error' } })
      expect(errors.map((e) => e.message)).toEqual(['Turn 1 reached 3 steps and was ended'])
    } finally {
      await runner.close()
      await engine.close()
    }
  })

  test("a fresh engine runs the input a runner that is gone had accepted, unless that runner's last turn was stopped first", async () => {
    // What a worker killed mid-work leaves, written by a host-driven engine (no runner) on a clock
    // of whole seconds: `open` has turn 1 open and an input queued behind it; `done` a completed
    // turn and an input not promoted yet; `stopped` an input queued while turn 1 ran, then the
    // stop; `stoppedThenAsked` the stop, then an input (which lifts the pause).
    let clock = 0
    const left = await inProcessEngine({ now: () => ++clock * 1_000 })
    const { dbName } = left
    const names = ['open', 'done', 'stopped', 'stoppedThenAsked'] as const
    const sessions = {} as Record<(typeof names)[number], string>
    for (const name of names) {
      const { id } = await left.engine.createSession({ title: name })
      sessions[name] = id
      await left.engine.admit(id, { text: `first in ${name}`, id: `${name}-1` })
      await left.engine.promote(id, 'settled')
      const second = () =>
        left.engine.admit(id, { text: `second in ${name}`, id: `${name}-2`, delivery: 'queue' })
      if (name !== 'stoppedThenAsked') await second()
      if (name !== 'open') {
        const reason = name === 'done' ? 'completed' : 'aborted'
        await left.engine.append(id, [{ type: 'turn/end', data: { turn: 1, reason } }])
      }
      if (name === 'stoppedThenAsked') await second()
    }
    await left.close()

    const fresh = await inProcessEngine({ dbName, provider: scripted(5) })
    try {
      // Loading a session's state (a view's open does) is what lets its new engine take over.
      for (const name of ['stopped', ...names] as const) await fresh.engine.pending(sessions[name])
      for (const name of ['open', 'done', 'stoppedThenAsked'] as const)
        await untilTurnsEnded(fresh.engine, sessions[name], 2)
      const open = await allEvents(fresh.engine, sessions.open)
      expect(expectWellFormed(open)).toEqual([])
      expect(open.filter((e) => e.type === 'turn/end').map((e) => e.data)).toEqual([
        { turn: 1, reason: 'interrupted' },
        { turn: 2, reason: 'completed' },
      ])
      for (const name of ['open', 'done', 'stoppedThenAsked'] as const) {
        expect(userInputs(await allEvents(fresh.engine, sessions[name]))).toEqual([`${name}-1`, `${name}-2`])
        expect(await fresh.engine.pending(sessions[name])).toEqual([])
      }

      // A stop pauses the session in any engine that opens it, until new input.
      expect(countOf(await allEvents(fresh.engine, sessions.stopped), 'turn/end')).toBe(1)
      expect((await fresh.engine.pending(sessions.stopped)).map((r) => r.id)).toEqual(['stopped-2'])
      await fresh.engine.admit(sessions.stopped, { text: 'go on', id: 'stopped-3', delivery: 'queue' })
      await untilTurnsEnded(fresh.engine, sessions.stopped, 3)
      expect(userInputs(await allEvents(fresh.engine, sessions.stopped))).toEqual([
        'stopped-1',
        'stopped-2',
        'stopped-3',
      ])
    } finally {
      await fresh.close()
    }
  })

  test('an heir whose session is deleted while it waits for the lock reports nothing', async () => {
    const dbName = freshDbName('runner-heir')
    const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
    const locks = createInProcessLocks()
    const { id: sessionId } = await engine.createSession()
    await engine.admit(sessionId, { text: 'orphan me' })
    await engine.promote(sessionId, 'settled')
    const reported: SessionlineError[] = []
    const runner = createRunner(host, {
      provider: scripted(1),
      locks,
      lockScope: dbName,
      onError: (error) => reported.push(error),
    })
    try {
      const holder = (await acquireLock(runnerLockName(dbName, sessionId), { wait: false }, locks))!
      await runner.recover(sessionId) // waits on the lock as heir
      await engine.deleteSession(sessionId)
      await holder.release()
      // The heir has had the lock once the test gets it back.
      const after = await acquireLock(runnerLockName(dbName, sessionId), { wait: true }, locks)
      await after?.release()
      expect(reported).toEqual([])
    } finally {
      await runner.close()
      await engine.close()
    }
  })

  test('recover leaves a turn whose lock is held, and closes it once the holder is gone', async () => {
    const dbName = freshDbName('runner-host')
    const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
    const locks = createInProcessLocks()
    // The orphan first (host-driven), then a runner with a provider that did not see the input.
    const { id: sessionId } = await engine.createSession()
    await engine.admit(sessionId, { text: 'orphan me' })
    await engine.promote(sessionId, 'settled')
    const runner = createRunner(host, { provider: scripted(1), locks, lockScope: dbName })
    try {
      const holder = (await acquireLock(runnerLockName(dbName, sessionId), { wait: false }, locks))!
      await runner.recover(sessionId)
      expect((await host.turnState(sessionId)).openTurn).toBe(1)
      // It waits on the lock meanwhile, as the holder's heir: no second recover is needed.
      await holder.release()
      await untilEvent(engine, sessionId, 'turn/end')
      expect(await host.turnState(sessionId)).toMatchObject({ openTurn: null, lastTurn: 1 })
      expect((await allEvents(engine, sessionId)).at(-1)).toMatchObject({
        type: 'turn/end',
        data: { reason: 'interrupted' },
      })
    } finally {
      await runner.close()
      await engine.close()
    }
  })
})

describe('runner with the OpenAI-compatible provider against a local HTTP server', () => {
  test('runs a tool step and an answer step, sending the tool result back as a tool message', async () => {
    const server = await startServer((req, res) => {
      sseHead(res)
      const body = req.body as { messages: { role: string }[] }
      if (body.messages.at(-1)?.role === 'user') {
        res.write(sse({ choices: [{ index: 0, delta: { content: 'Let me compute. ' } }] }))
        res.write(
          sse({
            choices: [
              {
                index: 0,
                delta: {
                  tool_calls: [
                    {
                      index: 0,
                      id: 'call_x',
                      type: 'function',
                      function: { name: 'calculator', arguments: '{"expression":"6*7"}' },
                    },
                  ],
                },
                finish_reason: 'tool_calls',
              },
            ],
          }),
        )
        res.write(sse({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 8 } }))
      } else {
        res.write(sse(textChunk('It is ')))
        res.write(sse(textChunk('42.', 'stop')))
        res.write(sse({ choices: [], usage: { prompt_tokens: 50, completion_tokens: 4 } }))
      }
      res.end(sse('[DONE]'))
    })
    const { engine, sessionId, close } = await startEngine({
      provider: { kind: 'openai', baseUrl: server.baseUrl, model: 'local-model' },
      tools: createDemoTools(),
    })
    try {
      await engine.admit(sessionId, { text: 'what is 6*7?' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ data: { reason: 'completed' } })
      expect(events.find((e) => e.type === 'tool/result')).toMatchObject({
        data: { callId: 'call_x', output: { expression: '6*7', value: 42 }, isError: false },
      })
      expect(await engine.projection(sessionId, 'usage')).toEqual({ input: 80, output: 12, calls: 2 })
      expect(server.requests).toHaveLength(2)
      const second = (server.requests[1]!.body as { messages: unknown[] }).messages
      expect(second).toEqual([
        { role: 'user', content: 'what is 6*7?' },
        {
          role: 'assistant',
          content: 'Let me compute. ',
          tool_calls: [
            {
              id: 'call_x',
              type: 'function',
              function: { name: 'calculator', arguments: '{"expression":"6*7"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_x', content: '{"expression":"6*7","value":42}' },
      ])
      const outline = await engine.projection(sessionId, 'turnOutline')
      expect(outline).toEqual([
        expect.objectContaining({ turn: 1, prompt: 'what is 6*7?', response: 'It is 42.' }),
      ])
    } finally {
      await close()
      await server.close()
    }
  })

  test('a malformed chunk mid-stream ends the turn with error (no hang), keeps the text so far and the pending input', async () => {
    let closed!: Promise<void>
    const server = await startServer((_req, res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve()))
      sseHead(res)
      res.write(sse(textChunk('Fine so far. ')))
      // A broken chunk, and then the connection stays open: only the chunk can end the step.
      res.write('data: {"choices": [ {"delta": \n\n')
    })
    const warnings = captureWarnings()
    const { engine, sessionId, close } = await startEngine({
      provider: { kind: 'openai', baseUrl: server.baseUrl, model: 'm' },
    })
    try {
      await engine.admit(sessionId, { text: 'hello?' })
      const later = await engine.admit(sessionId, { text: 'later', delivery: 'queue' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-3)).toMatchObject({ type: 'assistant/end', data: { finish: 'error' } })
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'error' } })
      expect(warnings.join()).toMatch(/malformed stream chunk/)
      const assistant = (await allRows(engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(assistant).toMatchObject({ status: 'error', parts: [{ type: 'text', text: 'Fine so far. ' }] })
      expect((await engine.pending(sessionId)).map((r) => r.id)).toEqual([later.id])
      // The held-open response is let go, not leaked.
      await closed
    } finally {
      await close()
      await server.close()
    }
  })

  test('interrupt during a stalled stream ends the turn as aborted and closes the connection', async () => {
    let closed!: Promise<void>
    const server = await startServer((_req, res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve()))
      sseHead(res)
      res.write(sse(textChunk('Thinking about it')))
      // …and then nothing: the model server stalls.
    })
    const { engine, sessionId, close } = await startEngine({
      provider: { kind: 'openai', baseUrl: server.baseUrl, model: 'm' },
    })
    try {
      await engine.admit(sessionId, { text: 'take your time' })
      await untilEvent(engine, sessionId, 'assistant/delta')
      const queued = await engine.admit(sessionId, { text: 'then this', delivery: 'queue' })
      await engine.interrupt(sessionId)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } })
      const assistant = (await allRows(engine, sessionId)).find((r) => r.role === 'assistant')!
      expect(assistant).toMatchObject({
        status: 'interrupted',
        parts: [{ type: 'text', text: 'Thinking about it' }],
      })
      expect((await engine.pending(sessionId)).map((r) => r.id)).toEqual([queued.id])
      await closed
    } finally {
      await close()
      await server.close()
    }
  })

  test('a non-2xx answer ends the turn with error; the input was promoted, later input stays pending', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' })
      res.end('overloaded')
    })
    const warnings = captureWarnings()
    const { engine, sessionId, close } = await startEngine({
      provider: { kind: 'openai', baseUrl: server.baseUrl, model: 'm' },
    })
    try {
      await engine.admit(sessionId, { text: 'hello?' })
      const later = await engine.admit(sessionId, { text: 'later', delivery: 'queue' })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ data: { reason: 'error' } })
      expect(warnings.join()).toMatch(/503/)
      expect((await engine.pending(sessionId)).map((r) => r.id)).toEqual([later.id])
    } finally {
      await close()
      await server.close()
    }
  })
})
