/**
 * The command rules of core/decide, without Dexie: generated command sequences on three sessions
 * (two native, one imported) with a small pool of reused ids run through `decide`, and a plain
 * reference model of the inbox and the id space says what each must answer. The facts a command
 * is judged on come from an in-memory store that keeps what the decisions wrote.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { type Command, type Decision, decide, type SessionState } from '../../src/core/decide'
import { initFolds } from '../../src/core/folds'
import type { IdOwner } from '../../src/core/ids'
import { rowIdsCreated } from '../../src/core/ids'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import type { InputReceipt } from '../../src/schema/inputs'

const SESSIONS = ['a', 'b', 'imported'] as const
const IDS = ['x', 'y', 'z', 'w'] as const
const TEXTS = ['one', 'two'] as const

type Act =
  | { type: 'admit'; s: number; id: string; text: string; delivery: 'steer' | 'queue' }
  | { type: 'cancel'; s: number; id: string }
  | { type: 'edit'; s: number; id: string; text: string }
  | { type: 'promote'; s: number; mode: 'checkpoint' | 'settled' }
  | { type: 'append'; s: number; kind: 'turn-end' | 'step' | 'user' | 'user-twice'; id: string }

const session = fc.nat(SESSIONS.length - 1)
const id = fc.constantFrom(...IDS)
const text = fc.constantFrom(...TEXTS)
const act: fc.Arbitrary<Act> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('admit' as const),
      s: session,
      id,
      text,
      delivery: fc.constantFrom('steer' as const, 'queue' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('cancel' as const), s: session, id }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('edit' as const), s: session, id, text }) },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('promote' as const),
      s: session,
      mode: fc.constantFrom('checkpoint' as const, 'settled' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('append' as const),
      s: session,
      kind: fc.constantFrom('turn-end' as const, 'step' as const, 'user' as const, 'user-twice' as const),
      id,
    }),
  },
)

/** The reference: plain records and the rules of docs/architecture.md §5 and §10, spelled out by hand. */
interface ModelInput {
  id: string
  session: string
  seq: number
  text: string
  delivery: 'steer' | 'queue'
  status: 'pending' | 'promoted' | 'cancelled'
  revision: number
}
interface ModelSession {
  headSeq: number
  nextInputSeq: number
  lastTurn: number
  openTurn: number | null
  lastStep: number
}
function createModel() {
  const sessions = new Map<string, ModelSession>(
    SESSIONS.map((s) => [s, { headSeq: 1, nextInputSeq: 1, lastTurn: 0, openTurn: null, lastStep: 0 }]),
  )
  const inputs = new Map<string, ModelInput>()
  const rows = new Map<string, string>()
  const owned = (id: string) => inputs.has(id) || rows.has(id)
  const pendingOf = (s: string) =>
    [...inputs.values()]
      .filter((i) => i.session === s && i.status === 'pending')
      .sort((a, b) => a.seq - b.seq)

  /** The expected outcome: an error code, or 'ok' with what the answer must hold. */
  function run(a: Act): { code: string; answer?: unknown } {
    const s = SESSIONS[a.s]!
    const m = sessions.get(s)!
    if (s === 'imported') return { code: 'invalid_state' }
    switch (a.type) {
      case 'admit': {
        const known = inputs.get(a.id)
        if (known) {
          const same = known.session === s && known.text === a.text && known.delivery === a.delivery
          return same ? { code: 'ok', answer: { ...known } } : { code: 'conflict' }
        }
        if (rows.has(a.id)) return { code: 'conflict' }
        const input: ModelInput = {
          id: a.id,
          session: s,
          seq: m.nextInputSeq++,
          text: a.text,
          delivery: a.delivery,
          status: 'pending',
          revision: 0,
        }
        inputs.set(a.id, input)
        return { code: 'ok', answer: { ...input } }
      }
      case 'cancel':
      case 'edit': {
        const known = inputs.get(a.id)
        if (!known || known.session !== s) return { code: 'not_found' }
        if (known.status !== 'pending') return { code: 'invalid_state' }
        if (a.type === 'cancel') {
          known.status = 'cancelled'
          known.revision++
        } else if (known.text !== a.text) {
          known.text = a.text
          known.revision++
        }
        return { code: 'ok', answer: { ...known } }
      }
      case 'promote': {
        if (a.mode === 'checkpoint' && m.openTurn === null) return { code: 'invalid_state' }
        if (a.mode === 'settled' && m.openTurn !== null) return { code: 'invalid_state' }
        const pending = pendingOf(s)
        const steers = pending.filter((i) => i.delivery === 'steer')
        const chosen = steers.length > 0 || a.mode === 'checkpoint' ? steers : pending.slice(0, 1)
        if (chosen.length === 0) return { code: 'ok', answer: [] }
        if (a.mode === 'settled') {
          m.headSeq++
          m.openTurn = ++m.lastTurn
          m.lastStep = 0
        }
        for (const i of chosen) {
          i.status = 'promoted'
          i.revision++
          rows.set(i.id, s)
          m.headSeq++
        }
        return { code: 'ok', answer: chosen.map((i) => i.id) }
      }
      case 'append': {
        if (m.openTurn === null) return { code: 'invalid_state' }
        if (a.kind === 'turn-end') {
          m.openTurn = null
          m.headSeq++
          return { code: 'ok', answer: { headSeq: m.headSeq } }
        }
        if (a.kind === 'user-twice' || owned(a.id)) return { code: 'conflict' }
        rows.set(a.id, s)
        if (a.kind === 'step') m.lastStep++
        m.headSeq += a.kind === 'step' ? 4 : 1
        return { code: 'ok', answer: { headSeq: m.headSeq } }
      }
    }
  }
  return { run, pendingOf, sessions }
}

/** The system under test: `decide`, fed facts from what its own decisions wrote. */
function createDecided() {
  const states = new Map<string, SessionState>(
    SESSIONS.map((s) => [
      s,
      {
        sessionId: s,
        source: s === 'imported' ? 'pi' : 'native',
        headSeq: 1,
        nextInputSeq: 1,
        folds: initFolds(),
        pending: [],
      },
    ]),
  )
  const receipts = new Map<string, InputReceipt>()
  const rows = new Map<string, string>()
  const ownerOf = (id: string): IdOwner | undefined => {
    const input = receipts.get(id)
    if (input) return { kind: 'input', sessionId: input.sessionId }
    const row = rows.get(id)
    return row === undefined ? undefined : { kind: 'row', sessionId: row }
  }

  function eventsOf(a: Extract<Act, { type: 'append' }>, state: SessionState): SessionEvent[] {
    const turn = state.folds.transcript.openTurn ?? 1
    const step = state.folds.transcript.lastStep + 1
    const user = (inputId: string): SessionEvent => ({
      type: 'user/message',
      data: { inputId, text: 'by hand', delivery: 'steer', source: 'synthetic' },
    })
    switch (a.kind) {
      case 'turn-end':
        return [{ type: 'turn/end', data: { turn, reason: 'completed' } }]
      case 'user':
        return [user(a.id)]
      case 'user-twice':
        return [user(a.id), user(a.id)]
      case 'step':
        return [
          { type: 'step/start', data: { turn, step } },
          { type: 'assistant/start', data: { messageId: a.id, turn, step } },
          { type: 'assistant/end', data: { messageId: a.id, finish: 'stop' } },
          { type: 'step/end', data: { turn, step } },
        ]
    }
  }

  function commandOf(a: Act, state: SessionState): Command {
    switch (a.type) {
      case 'admit':
        return {
          type: 'admit',
          input: { id: a.id, text: a.text, delivery: a.delivery },
          stored: receipts.get(a.id),
          rowOwner: rows.has(a.id) ? { kind: 'row', sessionId: rows.get(a.id)! } : undefined,
        }
      case 'cancel':
        return { type: 'cancel', inputId: a.id, stored: receipts.get(a.id) }
      case 'edit':
        return { type: 'edit', inputId: a.id, text: a.text, stored: receipts.get(a.id) }
      case 'promote':
        return { type: 'promote', mode: a.mode }
      case 'append': {
        const events = eventsOf(a, state)
        return { type: 'append', events, owners: rowIdsCreated(events).map(ownerOf) }
      }
    }
  }

  function run(a: Act, at: number) {
    const s = SESSIONS[a.s]!
    const state = states.get(s)!
    const decided = decide(state, commandOf(a, state), at)
    if (isSessionlineError(decided)) return { code: decided.code, decision: undefined }
    const decision = decided as Decision<unknown>
    if (decision.next) states.set(s, decision.next)
    for (const r of decision.receipts) receipts.set(r.id, r)
    for (const id of decision.createdRowIds) rows.set(id, s)
    return { code: 'ok', decision }
  }
  return { run, states }
}

describe('core decide against a reference model of the inbox and the id space', () => {
  test('every answer, refusal and pending view agrees with the model on 400 generated command sequences', () => {
    fc.assert(
      fc.property(fc.array(act, { minLength: 1, maxLength: 40 }), (acts) => {
        const model = createModel()
        const real = createDecided()
        acts.forEach((a, step) => {
          const expected = model.run(a)
          const got = real.run(a, 1_000 + step)
          expect(got.code, JSON.stringify(a)).toBe(expected.code)
          if (got.decision) {
            const answer = got.decision.answer
            if (a.type === 'promote')
              expect((answer as { id: string }[]).map((r) => r.id)).toEqual(expected.answer)
            else if (a.type === 'append') expect(answer).toEqual(expected.answer)
            else {
              const m = expected.answer as ModelInput
              expect(answer).toMatchObject({
                id: m.id,
                sessionId: m.session,
                seq: m.seq,
                text: m.text,
                delivery: m.delivery,
                status: m.status,
                revision: m.revision,
              })
            }
            // A decision that changes nothing writes nothing.
            if (!got.decision.next) {
              expect([got.decision.events, got.decision.receipts, got.decision.rows]).toEqual([[], [], []])
            }
          }
          for (const s of SESSIONS) {
            const state = real.states.get(s)!
            expect(state.pending.map((r) => [r.id, r.text, r.seq])).toEqual(
              model.pendingOf(s).map((i) => [i.id, i.text, i.seq]),
            )
            expect(state.headSeq).toBe(model.sessions.get(s)!.headSeq)
            expect(state.folds.transcript.openTurn).toBe(model.sessions.get(s)!.openTurn)
          }
        })
      }),
      { numRuns: 400, seed: 20261201 },
    )
  })

  test('a refusal is returned, not thrown, and carries the code of the rule it broke', () => {
    const state: SessionState = {
      sessionId: 'a',
      source: 'native',
      headSeq: 1,
      nextInputSeq: 1,
      folds: initFolds(),
      pending: [],
    }
    const refused = decide(state, { type: 'promote', mode: 'checkpoint' }, 0)
    expect(isSessionlineError(refused) && refused.code).toBe('invalid_state')
    const taken = decide(
      state,
      {
        type: 'admit',
        input: { id: 'r', text: 'hi', delivery: 'steer' },
        stored: undefined,
        rowOwner: { kind: 'row', sessionId: 'b' },
      },
      0,
    )
    expect(taken).toMatchObject({ code: 'conflict', details: { id: 'r', owner: 'row', ownerSessionId: 'b' } })
  })
})
