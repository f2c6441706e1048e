import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { foldEvents, initFolds } from '../../src/core/folds'
import { replay } from '../../src/core/projection'
import {
  applyTranscript,
  createTranscriptReplay,
  initTranscript,
  openRowOf,
  replayTranscript,
  revisedRow,
  type TranscriptState,
  toolPartWith,
  transcript,
} from '../../src/core/transcript'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import { SessionMessage, ToolPart } from '../../src/schema/messages'
import { arbSessionLog, stamp } from '../support/arb-log'

const SEED = 20261130
const RUNS = 500

/** Folds one event at a time the way the engine does: upsert every changed row by id. */
function foldStepwise(
  events: readonly StoredEvent[],
  from = initTranscript(),
  rows = new Map<string, SessionMessage>(),
) {
  let state = from
  for (const event of events) {
    const next = applyTranscript(state, event)
    state = next.state
    for (const row of next.changed) rows.set(row.id, row)
  }
  return { state, rows }
}

const sorted = (rows: Map<string, SessionMessage>) => [...rows.values()].sort((a, b) => a.seq - b.seq)

/**
 * An independent reading of a valid log, written the obvious mutable way, to check the fold
 * against something that is not itself.
 */
function referenceRows(events: readonly StoredEvent[]): SessionMessage[] {
  const rows = new Map<string, SessionMessage>()
  const callRow = new Map<string, SessionMessage>()
  let turn = 0
  const appendTo = (row: SessionMessage, type: 'text' | 'reasoning', text: string) => {
    const last = row.parts.at(-1)
    if (last?.type === type) last.text += text
    else row.parts.push({ type, text })
  }
  for (const e of events) {
    const base = {
      sessionId: e.sessionId,
      seq: e.seq,
      visibility: 'visible',
      createdAt: e.at,
      updatedAt: e.at,
    } as const
    switch (e.type) {
      case 'turn/start':
        turn = e.data.turn
        break
      case 'user/message':
        rows.set(e.data.inputId, {
          ...base,
          id: e.data.inputId,
          role: 'user',
          turn,
          parts: [{ type: 'text', text: e.data.text }],
          status: 'complete',
          source: e.data.source,
        })
        break
      case 'assistant/start':
        rows.set(e.data.messageId, {
          ...base,
          id: e.data.messageId,
          role: 'assistant',
          turn: e.data.turn,
          step: e.data.step,
          parts: [],
          status: 'streaming',
        })
        break
      case 'assistant/delta': {
        const row = rows.get(e.data.messageId)!
        if (e.data.reasoning) appendTo(row, 'reasoning', e.data.reasoning)
        if (e.data.text) appendTo(row, 'text', e.data.text)
        if (e.data.reasoning || e.data.text) row.updatedAt = e.at
        break
      }
      case 'tool/call': {
        const row = rows.get(e.data.messageId)!
        const { callId, name, input } = e.data
        row.parts.push({ type: 'tool', callId, name, input, state: 'running' })
        row.updatedAt = e.at
        callRow.set(callId, row)
        break
      }
      case 'tool/result': {
        const row = callRow.get(e.data.callId)!
        callRow.delete(e.data.callId)
        const part = row.parts.find((p) => p.type === 'tool' && p.callId === e.data.callId)!
        Object.assign(part, {
          output: e.data.output,
          isError: e.data.isError,
          state: e.data.isError ? 'error' : 'done',
        })
        row.updatedAt = e.at
        break
      }
      case 'assistant/end': {
        const row = rows.get(e.data.messageId)!
        const { finish, usage } = e.data
        row.status = finish === 'aborted' ? 'interrupted' : finish === 'error' ? 'error' : 'complete'
        row.finish = finish
        if (usage) row.usage = usage
        row.updatedAt = e.at
        break
      }
      case 'turn/end':
        for (const row of rows.values()) {
          const running = row.parts.filter((p) => p.type === 'tool' && p.state === 'running')
          if (row.status !== 'streaming' && running.length === 0) continue
          for (const part of running) Object.assign(part, { state: 'interrupted' })
          if (row.status === 'streaming')
            row.status = e.data.reason === 'completed' ? 'complete' : 'interrupted'
          row.updatedAt = e.at
        }
        callRow.clear()
        break
    }
  }
  return [...rows.values()].sort((a, b) => a.seq - b.seq)
}

const arbStampedLog = arbSessionLog().map((log) => stamp(log, 'session-1'))

/**
 * Walks `runs` generated logs (fixed seed) event by event: `step` gets the state before each
 * event and returns the state to go on from.
 */
function alongEveryLog(
  seed: number,
  runs: number,
  step: (state: TranscriptState, event: StoredEvent) => TranscriptState,
): void {
  fc.assert(
    fc.property(arbStampedLog, (events) => {
      let state = initTranscript()
      for (const event of events) state = step(state, event)
    }),
    { seed, numRuns: runs },
  )
}

describe('transcript fold', () => {
  test('incremental, whole-log and reference replays agree on 500 generated logs', () => {
    fc.assert(
      fc.property(arbStampedLog, (events) => {
        const stepwise = foldStepwise(events)
        const reference = referenceRows(events)
        expect(sorted(stepwise.rows)).toEqual(reference)
        expect(replayTranscript(events)).toEqual(reference)
        expect(replay(transcript, events)).toEqual(stepwise.state)
        for (const row of reference) SessionMessage.parse(row)
      }),
      { seed: SEED, numRuns: RUNS },
    )
  })

  test('replaying a prefix, caching the state through structured clone, then the rest changes nothing', () => {
    fc.assert(
      fc.property(arbStampedLog, fc.nat(), (events, at) => {
        const split = at % (events.length + 1)
        const whole = foldStepwise(events)
        const head = foldStepwise(events.slice(0, split))
        const cached = structuredClone(head.state)
        expect(cached).toEqual(head.state)
        expect(JSON.parse(JSON.stringify(head.state))).toEqual(head.state)
        const tail = foldStepwise(events.slice(split), cached, head.rows)
        expect(tail.state).toEqual(whole.state)
        expect(sorted(tail.rows)).toEqual(sorted(whole.rows))
      }),
      { seed: SEED + 1, numRuns: RUNS },
    )
  })

  test('every state along a log survives a JSON round trip, and folding on from the copy agrees', () => {
    alongEveryLog(SEED + 2, RUNS, (state, event) => {
      const copy = JSON.parse(JSON.stringify(state)) as TranscriptState
      const next = applyTranscript(state, event)
      const fromCopy = applyTranscript(copy, event)
      expect(fromCopy.state).toEqual(next.state)
      expect(fromCopy.changed).toEqual(next.changed)
      return next.state
    })
  })

  test('never mutates its input and keeps the identity of rows an event did not touch', () => {
    alongEveryLog(SEED + 3, 200, (state, event) => {
      const before = structuredClone(state)
      const next = applyTranscript(state, event)
      expect(state).toEqual(before)
      const changedIds = new Set(next.changed.map((row) => row.id))
      for (const row of next.state.open) {
        if (changedIds.has(row.id)) expect(row).toBe(next.changed.find((r) => r.id === row.id))
        else expect(row).toBe(openRowOf(state, row.id))
      }
      // Open rows stay in seq order.
      expect(next.state.open.map((r) => r.seq)).toEqual(
        [...next.state.open.map((r) => r.seq)].sort((a, b) => a - b),
      )
      // Rows never change seq, and `changed` is in seq order.
      for (const row of next.changed) {
        const before = openRowOf(state, row.id)
        if (before) expect(row.seq).toBe(before.seq)
      }
      expect(next.changed.map((r) => r.seq)).toEqual(
        [...next.changed.map((r) => r.seq)].sort((a, b) => a - b),
      )
      return next.state
    })
  })

  test('a transient replay in random batches equals the pure fold and never changes a state or row it was given or handed out', () => {
    fc.assert(
      fc.property(arbStampedLog, fc.array(fc.nat(), { maxLength: 6 }), (events, cuts) => {
        const bounds = [...new Set(cuts.map((c) => c % (events.length + 1)))].sort((a, b) => a - b)
        const batches: StoredEvent[][] = []
        let from = 0
        for (const to of [...bounds, events.length]) {
          batches.push(events.slice(from, to))
          from = to
        }
        let state = initTranscript()
        const rows = new Map<string, SessionMessage>()
        // Everything handed out so far, with a copy of how it looked then.
        const handedOut: Array<{ value: unknown; before: unknown }> = []
        for (const batch of batches) {
          const given = { value: state, before: structuredClone(state) }
          const changed = new Map<string, SessionMessage>()
          const replay = createTranscriptReplay(state, (row) => changed.set(row.id, row))
          for (const event of batch) replay.add(event)
          expect(given.value).toEqual(given.before)
          for (const { value, before } of handedOut) expect(value).toEqual(before)
          state = replay.state()
          for (const row of changed.values()) {
            rows.set(row.id, row)
            handedOut.push({ value: row, before: structuredClone(row) })
          }
          handedOut.push({ value: state, before: structuredClone(state) })
        }
        const pure = foldStepwise(events)
        expect(state).toEqual(pure.state)
        expect(sorted(rows)).toEqual(sorted(pure.rows))
        expect(foldEvents(initFolds(), events).rows).toEqual(replayTranscript(events))
      }),
      { seed: SEED + 7, numRuns: RUNS },
    )
  })

  test('nothing stays open after a turn ends', () => {
    fc.assert(
      fc.property(arbSessionLog({ openTail: false }), (log) => {
        const { state } = foldStepwise(stamp(log, 's'))
        expect(state.open).toEqual([])
        expect(state.openTurn).toBeNull()
        expect(state.openStep).toBeNull()
      }),
      { seed: SEED + 4, numRuns: 200 },
    )
  })
})

describe('transcript rows', () => {
  const log: SessionEvent[] = [
    { type: 'session/created', data: { title: 't' } },
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'user/message', data: { inputId: 'in-1', text: 'hello', delivery: 'steer', source: 'user' } },
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'assistant/start', data: { messageId: 'm-1', turn: 1, step: 1 } },
    { type: 'assistant/delta', data: { messageId: 'm-1', reasoning: 'think' } },
    { type: 'assistant/delta', data: { messageId: 'm-1', reasoning: 'ing', text: 'Hi' } },
    { type: 'assistant/delta', data: { messageId: 'm-1', text: ' there' } },
    { type: 'tool/call', data: { messageId: 'm-1', callId: 'c-1', name: 'read', input: { path: 'a' } } },
    {
      type: 'assistant/end',
      data: { messageId: 'm-1', finish: 'tool-calls', usage: { input: 10, output: 3 } },
    },
    { type: 'tool/result', data: { callId: 'c-1', output: 'text of a', isError: false } },
    { type: 'step/end', data: { turn: 1, step: 1, usage: { input: 10, output: 3 } } },
    { type: 'step/start', data: { turn: 1, step: 2 } },
    { type: 'assistant/start', data: { messageId: 'm-2', turn: 1, step: 2 } },
    { type: 'assistant/delta', data: { messageId: 'm-2', text: 'Half an ans' } },
    { type: 'turn/end', data: { turn: 1, reason: 'aborted' } },
  ]
  const events = stamp(log, 's-1', 1, 1000)

  test('a revised row and a tool part in a new state keep every field their schemas have', () => {
    // The fold copies rows and tool parts field by field (not by spread, for speed): a field the
    // schema gains must be carried over too. Both literals name every field of their schema.
    const part: ToolPart = {
      type: 'tool',
      callId: 'c-1',
      name: 'task',
      input: { prompt: 'look' },
      output: 'seen',
      isError: false,
      state: 'done',
      agentSessionId: 'sub-1',
    }
    const row: SessionMessage = {
      id: 'm-1',
      sessionId: 's-1',
      seq: 4,
      role: 'assistant',
      turn: 1,
      parts: [{ type: 'text', text: 'hi' }, part],
      status: 'complete',
      visibility: 'inactive',
      createdAt: 1000,
      updatedAt: 1001,
      usage: { input: 10, output: 3 },
      source: 'user',
      step: 2,
      finish: 'stop',
      model: 'm',
      agentId: 'a',
      isMeta: true,
      parentId: 'p',
      delivery: 'queue',
      command: { name: 'review', args: '--all' },
      excludedFromContext: true,
      branch: { index: 1, count: 2 },
    }
    expect(Object.keys(row).sort()).toEqual(Object.keys(SessionMessage.shape).sort())
    expect(Object.keys(part).sort()).toEqual(Object.keys(ToolPart.shape).sort())
    expect(SessionMessage.parse(row)).toEqual(row)

    expect(revisedRow(row, row.parts, row.status, row.updatedAt)).toStrictEqual(row)
    expect(revisedRow(row, [], 'error', 2000, 'error', { input: 1, output: 2 })).toStrictEqual({
      ...row,
      parts: [],
      status: 'error',
      updatedAt: 2000,
      finish: 'error',
      usage: { input: 1, output: 2 },
    })
    expect(toolPartWith(part, part.state)).toStrictEqual(part)
    expect(toolPartWith(part, 'error', { output: null, isError: true })).toStrictEqual({
      ...part,
      state: 'error',
      output: null,
      isError: true,
    })
    // Absent fields stay absent (a stored row does not grow `undefined` keys).
    const bare: ToolPart = { type: 'tool', callId: 'c-2', name: 'read', input: null, state: 'running' }
    expect(Object.keys(toolPartWith(bare, 'interrupted')).sort()).toEqual(Object.keys(bare).sort())
  })

  test('a user row takes the input id and the seq of its event', () => {
    expect(replayTranscript(events)[0]).toEqual({
      id: 'in-1',
      sessionId: 's-1',
      seq: 3,
      role: 'user',
      turn: 1,
      parts: [{ type: 'text', text: 'hello' }],
      status: 'complete',
      visibility: 'visible',
      source: 'user',
      createdAt: 1002,
      updatedAt: 1002,
    })
  })

  test('an assistant row gathers reasoning, text and tool parts and keeps the seq of its start', () => {
    const row = replayTranscript(events)[1]
    expect(row).toEqual({
      id: 'm-1',
      sessionId: 's-1',
      seq: 5,
      role: 'assistant',
      turn: 1,
      step: 1,
      parts: [
        { type: 'reasoning', text: 'thinking' },
        { type: 'text', text: 'Hi there' },
        {
          type: 'tool',
          callId: 'c-1',
          name: 'read',
          input: { path: 'a' },
          output: 'text of a',
          isError: false,
          state: 'done',
        },
      ],
      status: 'complete',
      finish: 'tool-calls',
      usage: { input: 10, output: 3 },
      visibility: 'visible',
      createdAt: 1004,
      updatedAt: 1010,
    })
  })

  test('a row stays open while a tool runs and leaves when the result comes', () => {
    const beforeResult = replay(transcript, events.slice(0, 10))
    expect(beforeResult.open.map((row) => row.id)).toEqual(['m-1'])
    expect(
      beforeResult.open[0]!.parts.filter((p) => p.type === 'tool' && p.state === 'running'),
    ).toHaveLength(1)
    const afterResult = replay(transcript, events.slice(0, 11))
    expect(afterResult.open).toEqual([])
  })

  test('an aborted turn interrupts the row still streaming', () => {
    const rows = replayTranscript(events)
    expect(rows[2]).toMatchObject({ id: 'm-2', seq: 14, status: 'interrupted', updatedAt: 1015 })
    expect(rows[2]!.parts).toEqual([{ type: 'text', text: 'Half an ans' }])
  })

  test('a turn end interrupts running tool calls', () => {
    const cut = [
      ...events.slice(0, 10),
      ...stamp([{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }], 's-1', 11, 2000),
    ]
    const rows = replayTranscript(cut)
    expect(rows[1]!.parts[2]).toEqual({
      type: 'tool',
      callId: 'c-1',
      name: 'read',
      input: { path: 'a' },
      state: 'interrupted',
    })
    expect(rows[1]!.status).toBe('complete')
  })

  test('a delta that carries no text changes nothing', () => {
    const state = replay(transcript, events.slice(0, 5))
    const [empty] = stamp([{ type: 'assistant/delta', data: { messageId: 'm-1', text: '' } }], 's-1', 6)
    const next = applyTranscript(state, empty!)
    expect(next.state).toBe(state)
    expect(next.changed).toEqual([])
  })

  test('ids named like Object.prototype members are ordinary ids', () => {
    const tricky = stamp(
      [
        { type: 'turn/start', data: { turn: 1 } },
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: '__proto__', turn: 1, step: 1 } },
        {
          type: 'tool/call',
          data: { messageId: '__proto__', callId: 'constructor', name: 'x', input: null },
        },
      ],
      's',
    )
    const state = replay(transcript, tricky)
    expect(state.open.map((row) => row.id)).toEqual(['__proto__'])
    expect(openRowOf(state, 'constructor')).toBeUndefined()
    expect(Object.getPrototypeOf(state.open[0])).toBe(Object.prototype)
    const copy = structuredClone(state)
    expect(copy.open.map((row) => row.id)).toEqual(['__proto__'])
    const [result] = stamp(
      [{ type: 'tool/result', data: { callId: 'constructor', output: 1, isError: false } }],
      's',
      5,
    )
    expect(applyTranscript(copy, result!).changed[0]!.parts[0]).toMatchObject({ state: 'done', output: 1 })
  })
})
