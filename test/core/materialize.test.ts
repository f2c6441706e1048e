/**
 * The materialization policy (core/materialize, docs/decisions/0021) on generated streams: what
 * it stores plus what a reader patches from the log is always the replay, the rewrites of one
 * answer stay linear in its length, and a row never lags by more than the policy allows.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  type LaggingRow,
  type MaterializePolicy,
  materialize,
  patchFrom,
  patchLagging,
} from '../../src/core/materialize'
import {
  applyTranscript,
  initTranscript,
  replayTranscript,
  type TranscriptState,
} from '../../src/core/transcript'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'

const opening: SessionEvent[] = [
  { type: 'turn/start', data: { turn: 1 } },
  { type: 'step/start', data: { turn: 1, step: 1 } },
  { type: 'assistant/start', data: { messageId: 'm', turn: 1, step: 1 } },
]

/** Streams `sizes` as deltas into one message, one commit per `perCommit` deltas, as the write path would. */
function stream(sizes: readonly number[], perCommit: number, policy: MaterializePolicy) {
  const log: StoredEvent[] = []
  let state: TranscriptState = initTranscript()
  let lagging: LaggingRow[] = []
  const stored = new Map<string, SessionMessage>()
  let written = 0
  let maxLag = 0
  const commit = (events: SessionEvent[]) => {
    const base = log.length
    const stamped = events.map((e, i) => ({ ...e, sessionId: 's', seq: base + i + 1, at: 1 }) as StoredEvent)
    const rows = new Map<string, SessionMessage>()
    for (const event of stamped) {
      const step = applyTranscript(state, event)
      state = step.state
      for (const row of step.changed) rows.set(row.id, row)
    }
    log.push(...stamped)
    const created = stamped.flatMap((e) => (e.type === 'assistant/start' ? [e.data.messageId] : []))
    const out = materialize(
      lagging,
      { events: stamped, rows: [...rows.values()], created },
      state.open,
      base,
      policy,
    )
    for (const row of out.write) {
      stored.set(row.id, row)
      written += row.parts.reduce((n, p) => n + ('text' in p ? p.text.length : 0), 0)
    }
    lagging = out.lagging
    for (const lag of lagging) maxLag = Math.max(maxLag, lag.lag - Math.max(policy.minLag, lag.storedChars))
    // What a reader sees: the stored rows, each lagging one patched from the log after its through.
    const from = patchFrom(lagging, stored.keys())
    const after = from === undefined ? [] : log.filter((e) => e.seq > from)
    const read = patchLagging([...stored.values()], lagging, after)
    expect(read).toEqual(replayTranscript(log))
  }
  commit(opening)
  for (let i = 0; i < sizes.length; i += perCommit) {
    commit(
      sizes.slice(i, i + perCommit).map((n, k) => ({
        type: 'assistant/delta',
        data:
          (i + k) % 5 === 4
            ? { messageId: 'm', reasoning: 'r'.repeat(n) }
            : { messageId: 'm', text: 'x'.repeat(n) },
      })),
    )
  }
  const before = written
  commit([{ type: 'assistant/end', data: { messageId: 'm', finish: 'stop' } }])
  return { written: before, final: written - before, lagging, maxLag }
}

const policy = fc.record({
  minLag: fc.integer({ min: 1, max: 400 }),
  deltaWeight: fc.integer({ min: 1, max: 40 }),
})

describe('materialize', () => {
  test('a commit without events (an inbox write) keeps every lagging row, whatever open rows it is given', () => {
    const lagging: LaggingRow[] = [{ id: 'm1', through: 5, storedChars: 0, lag: 64 }]
    // An inbox write on a stale cache gives the open rows of folds older than the session row:
    // m1 is not among them. Before the fix the lagging list came back empty.
    expect(materialize(lagging, { events: [], rows: [], created: [] }, [], 7)).toEqual({ write: [], lagging })
  })

  test('stored rows patched with the logged deltas after their through equal the replay after every commit of generated streams', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 120 }), { maxLength: 80 }),
        fc.integer({ min: 1, max: 6 }),
        policy,
        (sizes, perCommit, p) => {
          const { lagging } = stream(sizes, perCommit, p)
          expect(lagging).toEqual([])
        },
      ),
      { numRuns: 200 },
    )
  })

  test('a lagging row always lags by less than the policy allows, and its rewrites before the end add up to at most twice its text times the delta weight', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 120 }), { maxLength: 120 }), policy, (sizes, p) => {
        const { written, final, maxLag } = stream(sizes, 1, p)
        const total = sizes.reduce((a, b) => a + b, 0)
        expect(final).toBe(total)
        expect(maxLag).toBeLessThanOrEqual(0)
        // Each rewrite waits for the lag to reach the stored text: sizes at least double in weight.
        const weight = Math.max(1, p.deltaWeight / Math.min(...sizes, p.deltaWeight))
        expect(written).toBeLessThanOrEqual(2 * total * weight + p.minLag + 120)
      }),
      { numRuns: 200 },
    )
  })

  test('one answer of 200 one-K deltas under the default policy is stored once, at its end', () => {
    const { written, final } = stream(Array(200).fill(1024), 1, { minLag: 256 * 1024, deltaWeight: 64 })
    expect(written).toBe(0)
    expect(final).toBe(200 * 1024)
  })

  test('a step end, a tool call and a tool result store a lagging row at once', () => {
    const p = { minLag: 1000, deltaWeight: 1 }
    let state = initTranscript()
    const log: StoredEvent[] = []
    const fold = (events: SessionEvent[]) => {
      const base = log.length
      const stamped = events.map(
        (e, i) => ({ ...e, sessionId: 's', seq: base + i + 1, at: 1 }) as StoredEvent,
      )
      const rows = new Map<string, SessionMessage>()
      for (const e of stamped) {
        const step = applyTranscript(state, e)
        state = step.state
        for (const row of step.changed) rows.set(row.id, row)
      }
      log.push(...stamped)
      return { stamped, rows: [...rows.values()], base }
    }
    fold(opening)
    const delta = fold([{ type: 'assistant/delta', data: { messageId: 'm', text: 'hello' } }])
    const lagged = materialize(
      [],
      { events: delta.stamped, rows: delta.rows, created: [] },
      state.open,
      delta.base,
      p,
    )
    expect(lagged.write).toEqual([])
    expect(lagged.lagging).toEqual([{ id: 'm', through: 3, storedChars: 0, lag: 5 }])
    const call = fold([{ type: 'tool/call', data: { messageId: 'm', callId: 'c', name: 'read', input: {} } }])
    const called = materialize(
      lagged.lagging,
      { events: call.stamped, rows: call.rows, created: [] },
      state.open,
      call.base,
      p,
    )
    expect(called.write.map((r) => r.id)).toEqual(['m'])
    expect(called.lagging).toEqual([])
    const more = fold([{ type: 'assistant/delta', data: { messageId: 'm', text: ' world' } }])
    const again = materialize(
      [],
      { events: more.stamped, rows: more.rows, created: [] },
      state.open,
      more.base,
      p,
    )
    expect(again.lagging).toHaveLength(1)
    // A result for the running call changes the row without naming it.
    const result = fold([{ type: 'tool/result', data: { callId: 'c', output: 1, isError: false } }])
    const resulted = materialize(
      again.lagging,
      { events: result.stamped, rows: result.rows, created: [] },
      state.open,
      result.base,
      p,
    )
    expect(resulted.write.map((r) => r.id)).toEqual(['m'])
    const last = fold([{ type: 'assistant/delta', data: { messageId: 'm', text: '!' } }])
    const lagging = materialize(
      [],
      { events: last.stamped, rows: last.rows, created: [] },
      state.open,
      last.base,
      p,
    ).lagging
    // The step end touches no row, yet the lagging one is stored from the open rows.
    const end = fold([{ type: 'step/end', data: { turn: 1, step: 1 } }])
    const ended = materialize(
      lagging,
      { events: end.stamped, rows: end.rows, created: [] },
      state.open,
      end.base,
      p,
    )
    expect(ended.write).toEqual(state.open)
    expect(ended.lagging).toEqual([])
  })
})
