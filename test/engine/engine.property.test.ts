/**
 * Differential test of the engine against a plain in-memory model of the inbox and the turn
 * grammar: random sequences of admit / cancel / edit / promote / append (with reopen), each call
 * awaited before the next, with the invariants of docs/architecture.md §3–§6 checked after every step, and a
 * watcher whose merged pushes must always equal what the engine serves. Calls issued at once from
 * two engines are concurrent.property.test.ts's.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { MaterializePolicy } from '../../src/core/materialize'
import { replay } from '../../src/core/projection'
import { replayTranscript } from '../../src/core/transcript'
import { turnOutline } from '../../src/core/turn-outline'
import { usage } from '../../src/core/usage'
import type { Engine } from '../../src/engine/types'
import type { Delivery } from '../../src/schema/common'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { InputReceipt } from '../../src/schema/inputs'
import type { SessionMessage } from '../../src/schema/messages'
import type { PromoteMode } from '../../src/schema/requests'
import type { UsageTotals } from '../../src/schema/session'
import { openDb } from '../../src/store/db'
import {
  type EngineFactory,
  engineKinds,
  freshDbName,
  inProcessEngine,
  type TestEngine,
} from '../support/engines'
import { createSignal } from '../support/feed'
import { expectedSlice, outlineMirror, outlineRanges } from '../support/outline'

type AppendStep =
  | 'delta'
  | 'reasoning'
  | 'call'
  | 'endAssistant'
  | 'result'
  | 'endStep'
  | 'endTurn'
  | 'invalid'

type Action =
  | { kind: 'admit'; slot: number; text: number; delivery: Delivery }
  | { kind: 'cancel'; pick: number }
  | { kind: 'edit'; pick: number; text: number }
  | { kind: 'promote'; mode: PromoteMode | 'auto' }
  | { kind: 'append'; steps: AppendStep[] }
  | { kind: 'reopen' }

const TEXTS = ['hello', 'please continue', 'stop there', 'edited!']

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      // 0..5: a reused id (replays and conflicts); 6: a fresh one.
      slot: fc.integer({ min: 0, max: 6 }),
      text: fc.integer({ min: 0, max: 2 }),
      delivery: fc.constantFrom<Delivery>('steer', 'queue'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('edit' as const),
      pick: fc.nat(),
      text: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('promote' as const),
      // `auto`: the mode the runner would use now (the other one is the wrong-state case).
      mode: fc.constantFrom<PromoteMode | 'auto'>('checkpoint', 'settled', 'auto', 'auto'),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      steps: fc.array(
        fc.oneof(
          {
            weight: 12,
            arbitrary: fc.constantFrom<AppendStep>(
              'delta',
              'reasoning',
              'call',
              'endAssistant',
              'result',
              'endStep',
            ),
          },
          { weight: 2, arbitrary: fc.constant<AppendStep>('endTurn') },
          { weight: 1, arbitrary: fc.constant<AppendStep>('invalid') },
        ),
        { minLength: 1, maxLength: 5 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
)

interface ModelInput {
  id: string
  seq: number
  delivery: Delivery
  text: string
  status: 'pending' | 'promoted' | 'cancelled'
  promotedSeq?: number
}

/** The plain reference: the inbox rules and the turn grammar, nothing else. */
class Model {
  inputs = new Map<string, ModelInput>()
  nextInputSeq = 1
  headSeq = 1
  lastTurn = 0
  openTurn: number | null = null
  openStep: number | null = null
  lastStep = 0
  streaming: string | undefined
  running: string[] = []
  private nextMessage = 0
  private nextCall = 0
  private fresh = 0

  inputId(slot: number): string {
    return slot < 6 ? `in-${slot}` : `in-fresh-${this.fresh++}`
  }

  pending(): ModelInput[] {
    return [...this.inputs.values()].filter((i) => i.status === 'pending').sort((a, b) => a.seq - b.seq)
  }

  pick(n: number): ModelInput | undefined {
    const all = [...this.inputs.values()]
    return all.length === 0 ? undefined : all[n % all.length]
  }

  /** Events `steps` produce from the current state; a step that cannot apply makes the grammar's next move instead. */
  plan(steps: AppendStep[]): { events: SessionEvent[]; invalid: boolean; commit: () => void } {
    const s = {
      openTurn: this.openTurn,
      openStep: this.openStep,
      lastStep: this.lastStep,
      streaming: this.streaming,
      running: [...this.running],
      nextMessage: this.nextMessage,
      nextCall: this.nextCall,
    }
    const events: SessionEvent[] = []
    let invalid = false
    /** The grammar's natural next move: open a step, open a message, stream into it. */
    const progress = () => {
      const turn = s.openTurn
      if (turn === null) return
      if (s.openStep === null) {
        s.openStep = ++s.lastStep
        events.push({ type: 'step/start', data: { turn, step: s.openStep } })
      } else if (s.streaming === undefined) {
        s.streaming = `m-${s.nextMessage++}`
        events.push({ type: 'assistant/start', data: { messageId: s.streaming, turn, step: s.openStep } })
      } else {
        events.push({ type: 'assistant/delta', data: { messageId: s.streaming, text: 'word ' } })
      }
    }
    for (const step of steps) {
      const turn = s.openTurn
      switch (step) {
        case 'delta':
          progress()
          break
        case 'reasoning':
          if (s.streaming)
            events.push({ type: 'assistant/delta', data: { messageId: s.streaming, reasoning: 'hmm ' } })
          else progress()
          break
        case 'call':
          if (s.streaming) {
            const callId = `c-${s.nextCall++}`
            s.running.push(callId)
            events.push({
              type: 'tool/call',
              data: { messageId: s.streaming, callId, name: 'read', input: { n: s.nextCall } },
            })
          } else progress()
          break
        case 'endAssistant':
          if (s.streaming) {
            events.push({
              type: 'assistant/end',
              data: {
                messageId: s.streaming,
                finish: s.running.length ? 'tool-calls' : 'stop',
                usage: { input: 3, output: 2 },
              },
            })
            s.streaming = undefined
          } else progress()
          break
        case 'result': {
          const callId = s.running.shift()
          if (callId)
            events.push({ type: 'tool/result', data: { callId, output: { ok: callId }, isError: false } })
          else progress()
          break
        }
        case 'endStep':
          if (turn !== null && s.openStep !== null && s.streaming === undefined) {
            events.push({
              type: 'step/end',
              data: { turn, step: s.openStep, usage: { input: 5, output: 1 } },
            })
            s.openStep = null
          } else progress()
          break
        case 'endTurn':
          if (turn !== null) {
            events.push({ type: 'turn/end', data: { turn, reason: 'completed' } })
            s.openTurn = null
            s.openStep = null
            s.streaming = undefined
            s.running = []
          }
          break
        case 'invalid':
          invalid = true
          events.push({ type: 'tool/result', data: { callId: 'no-such-call', output: null, isError: true } })
          break
      }
    }
    const commit = () => {
      this.openTurn = s.openTurn
      this.openStep = s.openStep
      this.lastStep = s.lastStep
      this.streaming = s.streaming
      this.running = s.running
      this.nextMessage = s.nextMessage
      this.nextCall = s.nextCall
      this.headSeq += events.length
    }
    return { events, invalid, commit }
  }
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
    return undefined
  } catch (error) {
    if (isSessionlineError(error)) return error.code
    throw error
  }
}

/** Everything a reader can observe of a session. */
async function observe(engine: Engine, sessionId: string) {
  const events: StoredEvent[] = []
  for (;;) {
    const batch = await engine.events(sessionId, { afterSeq: events.at(-1)?.seq ?? 0, limit: 10_000 })
    events.push(...batch)
    if (batch.length < 10_000) break
  }
  const [rows, pending, outline, totals, session] = await Promise.all([
    engine.loadThrough(sessionId, { seq: 0, includeInactive: true }),
    engine.pending(sessionId),
    engine.projection(sessionId, 'turnOutline'),
    engine.projection(sessionId, 'usage'),
    engine.getSession(sessionId),
  ])
  return { events, rows: rows.messages, pending, outline, totals, session }
}

async function checkInvariants(engine: Engine, dbName: string, sessionId: string, model: Model) {
  const seen = await observe(engine, sessionId)
  const { events, rows } = seen

  // The log is dense from 1 and the session row agrees with the model.
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
  expect(seen.session).toMatchObject({ headSeq: model.headSeq, nextInputSeq: model.nextInputSeq })

  // Rows: ascending by seq, each created by the event at its seq, equal to a full replay.
  expect(rows.map((r) => r.seq)).toEqual([...rows.map((r) => r.seq)].sort((a, b) => a - b))
  for (const row of rows) {
    const event = events[row.seq - 1]
    const creates =
      (event?.type === 'user/message' && event.data.inputId === row.id) ||
      (event?.type === 'assistant/start' && event.data.messageId === row.id)
    expect(creates, `row ${row.id} at seq ${row.seq}`).toBe(true)
  }
  expect(rows).toEqual(replayTranscript(events))
  const outline = turnOutline.view(replay(turnOutline, events))
  expect(seen.outline).toEqual(outline)
  // Sliced reads (a cold open reads only the outline's last chunk) agree with the replay too.
  for (const range of outlineRanges(outline.length))
    expect(await engine.outline(sessionId, range), JSON.stringify(range)).toEqual(
      expectedSlice(outline, range, model.headSeq),
    )
  expect(seen.totals).toEqual(usage.view(replay(usage, events)))

  // The inbox: admission seqs dense; each receipt promoted at most once, never lost.
  const reader = openDb(dbName, { indexedDB, IDBKeyRange })
  let receipts: InputReceipt[]
  try {
    receipts = await reader.inputs
      .where('[sessionId+seq]')
      .between([sessionId, 0], [sessionId, Infinity])
      .toArray()
  } finally {
    reader.close()
  }
  expect(receipts.map((r) => r.seq)).toEqual(receipts.map((_, i) => i + 1))
  const promotions = new Map<string, number[]>()
  for (const e of events) {
    if (e.type === 'user/message')
      promotions.set(e.data.inputId, [...(promotions.get(e.data.inputId) ?? []), e.seq])
  }
  for (const receipt of receipts) {
    const expected = model.inputs.get(receipt.id)
    expect(receipt).toMatchObject({ seq: expected?.seq, status: expected?.status, text: expected?.text })
    const seqs = promotions.get(receipt.id) ?? []
    if (receipt.status === 'promoted') expect(seqs).toEqual([receipt.promotedSeq])
    else expect(seqs).toEqual([])
  }
  expect(receipts).toHaveLength(model.inputs.size)
  expect(seen.pending.map((r) => r.id)).toEqual(model.pending().map((i) => i.id))
  return seen
}

/**
 * What a page holds when it reads once and then merges every pushed change: after each step it
 * must equal what the engine serves (the change feed misses nothing and reorders nothing).
 */
async function mirror(engine: Engine, sessionId: string) {
  const state = {
    rows: new Map<string, SessionMessage>(),
    pending: [] as readonly InputReceipt[],
    outline: outlineMirror(
      () => engine.outline(sessionId, { start: 0 }),
      () => pushed.notify(),
    ),
    totals: undefined as UsageTotals | undefined,
    headSeq: 0,
  }
  const pushed = createSignal()
  const stop = await engine.watch(sessionId, (change) => {
    expect(change.durable).toBe(true)
    expect(change.headSeq).toBeGreaterThanOrEqual(state.headSeq)
    state.headSeq = change.headSeq
    for (const row of change.rows) state.rows.set(row.id, row)
    if (change.views.pending) state.pending = change.views.pending
    state.outline.push(change.views.outline, change.reset === true)
    if (change.views.usage) state.totals = change.views.usage
    pushed.notify()
  })
  const seen = await observe(engine, sessionId)
  for (const row of seen.rows) state.rows.set(row.id, row)
  state.pending = seen.pending
  state.outline.set(await engine.outline(sessionId, { start: 0 }))
  state.totals = seen.totals
  state.headSeq = Math.max(state.headSeq, seen.session?.headSeq ?? 0)
  return { state, stop, pushed }
}

async function expectMirrored(view: Awaited<ReturnType<typeof mirror>>, engine: Engine, sessionId: string) {
  const seen = await observe(engine, sessionId)
  const check = () => {
    expect([...view.state.rows.values()].sort((a, b) => a.seq - b.seq)).toEqual(seen.rows)
    expect(view.state.pending).toEqual(seen.pending)
    expect(view.state.outline.entries).toEqual(seen.outline)
    expect(view.state.totals).toEqual(seen.totals)
  }
  const holds = () => {
    try {
      check()
      return true
    } catch {
      return false
    }
  }
  // Pushes through Comlink travel on their own port: wait for them, then let `check` show any difference.
  await view.pushed.until(holds, 'the mirror to catch up').catch(() => undefined)
  check()
}

/**
 * How far streaming rows may lag in `messages`: the default (in these short runs a streaming row
 * lags until its step ends), one that rewrites a row every few deltas (crossing the boundary
 * often), and one that rewrites it at every delta.
 */
const POLICIES: ReadonlyArray<MaterializePolicy | undefined> = [
  undefined,
  { minLag: 12, deltaWeight: 4 },
  { minLag: 1, deltaWeight: 1 },
]

/**
 * What the stored rows say beside the log: a row the session row lists as lagging is stored as
 * the replay through its `through` made it, every other row as the whole replay makes it; and
 * the tail page (a plain `page`, patched like `loadThrough`) equals the replay's tail.
 */
async function checkStoredRows(engine: Engine, dbName: string, sessionId: string, events: StoredEvent[]) {
  const reader = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    const [session, stored] = await Promise.all([
      reader.sessions.get(sessionId),
      reader.messages.where('[sessionId+seq]').between([sessionId, 0], [sessionId, Infinity]).toArray(),
    ])
    const lagging = new Map((session?.lagging ?? []).map((lag) => [lag.id, lag.through]))
    for (const row of stored) {
      const through = lagging.get(row.id) ?? events.length
      const expected = replayTranscript(events.slice(0, through)).find((r) => r.id === row.id)
      expect(row, `stored row ${row.id} (through ${through})`).toEqual(expected)
    }
    for (const [id, through] of lagging) {
      expect(through, `lagging row ${id}`).toBeLessThan(events.length)
      expect(stored.some((row) => row.id === id)).toBe(true)
    }
  } finally {
    reader.close()
  }
  const replayed = replayTranscript(events).filter((row) => row.visibility === 'visible')
  const tail = await engine.page(sessionId, { limit: 3 })
  expect(tail.messages).toEqual(replayed.slice(-3))
}

async function runScenario(makeEngine: EngineFactory, actions: Action[], policy?: MaterializePolicy) {
  const dbName = freshDbName('prop')
  const options = { dbName, now: () => 42, ...(policy ? { materialize: policy } : {}) }
  let current: TestEngine = await makeEngine(options)
  const model = new Model()
  try {
    const { id: sessionId } = await current.engine.createSession({ id: 's' })
    let view = await mirror(current.engine, sessionId)
    for (const act of actions) {
      const engine = current.engine
      switch (act.kind) {
        case 'admit': {
          const id = model.inputId(act.slot)
          const text = TEXTS[act.text] as string
          const existing = model.inputs.get(id)
          if (existing) {
            const same = existing.text === text && existing.delivery === act.delivery
            const result = await engine
              .admit(sessionId, { id, text, delivery: act.delivery })
              .catch((e: unknown) => e)
            if (same) expect(result).toMatchObject({ id, seq: existing.seq, status: existing.status })
            else expect(result).toMatchObject({ code: 'conflict' })
          } else {
            const receipt = await engine.admit(sessionId, { id, text, delivery: act.delivery })
            expect(receipt).toMatchObject({
              id,
              seq: model.nextInputSeq,
              status: 'pending',
              delivery: act.delivery,
            })
            model.inputs.set(id, {
              id,
              seq: model.nextInputSeq++,
              delivery: act.delivery,
              text,
              status: 'pending',
            })
          }
          break
        }
        case 'cancel': {
          const input = model.pick(act.pick)
          if (!input) {
            expect(await codeOf(engine.cancel(sessionId, 'ghost'))).toBe('not_found')
          } else if (input.status !== 'pending') {
            expect(await codeOf(engine.cancel(sessionId, input.id))).toBe('invalid_state')
          } else {
            expect(await engine.cancel(sessionId, input.id)).toMatchObject({
              id: input.id,
              status: 'cancelled',
            })
            input.status = 'cancelled'
          }
          break
        }
        case 'edit': {
          const input = model.pick(act.pick)
          const text = TEXTS[act.text] as string
          if (!input) {
            expect(await codeOf(engine.edit(sessionId, 'ghost', { text }))).toBe('not_found')
          } else if (input.status !== 'pending') {
            expect(await codeOf(engine.edit(sessionId, input.id, { text }))).toBe('invalid_state')
          } else {
            expect(await engine.edit(sessionId, input.id, { text })).toMatchObject({ id: input.id, text })
            input.text = text
          }
          break
        }
        case 'promote': {
          const open = model.openTurn !== null
          const mode: PromoteMode = act.mode !== 'auto' ? act.mode : open ? 'checkpoint' : 'settled'
          if ((mode === 'checkpoint') !== open) {
            expect(await codeOf(engine.promote(sessionId, mode))).toBe('invalid_state')
            break
          }
          const pending = model.pending()
          const steers = pending.filter((i) => i.delivery === 'steer')
          const queued = pending.filter((i) => i.delivery === 'queue')
          const chosen = mode === 'checkpoint' || steers.length > 0 ? steers : queued.slice(0, 1)
          const rows = await engine.promote(sessionId, mode)
          expect(rows.map((r) => r.id)).toEqual(chosen.map((i) => i.id))
          if (chosen.length === 0) break
          if (mode === 'settled') {
            model.headSeq++
            model.openTurn = ++model.lastTurn
            model.openStep = null
            model.lastStep = 0
          }
          for (const [k, input] of chosen.entries()) {
            input.status = 'promoted'
            input.promotedSeq = ++model.headSeq
            expect(rows[k]).toMatchObject({
              seq: input.promotedSeq,
              role: 'user',
              source: 'user',
              turn: model.openTurn,
            })
          }
          break
        }
        case 'append': {
          const { events, invalid, commit } = model.plan(act.steps)
          if (invalid) {
            expect(await codeOf(engine.append(sessionId, events))).toBe('invalid_state')
          } else {
            const { headSeq } = await engine.append(sessionId, events)
            commit()
            expect(headSeq).toBe(model.headSeq)
          }
          break
        }
        case 'reopen': {
          const before = await observe(engine, sessionId)
          view.stop()
          await current.close()
          current = await makeEngine(options)
          expect(await observe(current.engine, sessionId)).toEqual(before)
          view = await mirror(current.engine, sessionId)
          break
        }
      }
      const seen = await checkInvariants(current.engine, dbName, sessionId, model)
      await checkStoredRows(current.engine, dbName, sessionId, seen.events)
      await expectMirrored(view, current.engine, sessionId)
      // A cold open of the database at this point serves exactly what the warm engine does.
      const cold = await inProcessEngine({ dbName, now: () => 42 })
      try {
        expect(await observe(cold.engine, sessionId)).toEqual(seen)
      } finally {
        await cold.close()
      }
    }
    // Closing and reopening changes nothing, whatever state the run ended in.
    const before = await observe(current.engine, sessionId)
    await current.close()
    current = await makeEngine(options)
    expect(await observe(current.engine, sessionId)).toEqual(before)
  } finally {
    await current.close()
    await new Promise<void>((resolve) => {
      const request = indexedDB.deleteDatabase(dbName)
      request.onsuccess = request.onerror = request.onblocked = () => resolve()
    })
  }
}

describe.each(engineKinds)('engine %s against the reference model', (kind, makeEngine) => {
  test('random sequences of admit, cancel, edit, promote, append and reopen, each awaited before the next, match the reference model, with streaming rows lagging in storage by any policy', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 30, maxLength: 80, size: 'max' }),
        fc.constantFrom(...POLICIES),
        (actions, policy) => runScenario(makeEngine, actions, policy),
      ),
      { seed: kind === 'in process' ? 20261130 : 11302026, numRuns: kind === 'in process' ? 25 : 10 },
    )
  }, 240_000)
})
