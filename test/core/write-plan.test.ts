/**
 * The batch planner of core/write-plan on plain snapshots, without Dexie: a batch decided in one
 * plan answers and ends exactly as the same writes decided one by one (the facts of a batch are
 * read once, before it, which is why a write whose ids an earlier write touched waits for the next
 * batch); a refusal fails alone and changes nothing; the base snapshot is never changed.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { Command } from '../../src/core/decide'
import { initFolds } from '../../src/core/folds'
import { type IdOwner, rowIdsCreated } from '../../src/core/ids'
import { DEFAULT_MATERIALIZE } from '../../src/core/materialize'
import {
  type BatchJudge,
  type PlanOutcome,
  type PlanSnapshot,
  planBatch,
  planCommand,
} from '../../src/core/write-plan'
import { isSessionlineError, SessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import type { InputReceipt } from '../../src/schema/inputs'

const AT = 7_000
const POLICY = DEFAULT_MATERIALIZE
const IDS = ['x', 'y', 'z', 'taken'] as const

type Act =
  | { type: 'admit'; id: string; text: string }
  | { type: 'cancel'; id: string }
  | { type: 'edit'; id: string; text: string }
  | { type: 'promote'; mode: 'checkpoint' | 'settled' }
  | { type: 'append'; events: SessionEvent[] }

const fresh = (): PlanSnapshot => ({
  row: { id: 's', source: 'native', headSeq: 1, nextInputSeq: 1, updatedAt: 0, rev: 1 },
  folds: initFolds(),
  pending: [],
})

const user = (inputId: string): SessionEvent => ({
  type: 'user/message',
  data: { inputId, text: 'by hand', delivery: 'steer', source: 'synthetic' },
})

/** What the session's writes are judged on besides its state: stored receipts and row owners. */
function createFacts() {
  const receipts = new Map<string, InputReceipt>()
  const rows = new Map<string, string>()
  // 'taken' belongs to a row of another session: admitting or appending it is a conflict.
  rows.set('taken', 'other')
  const ownerOf = (id: string): IdOwner | undefined => {
    const receipt = receipts.get(id)
    if (receipt) return { kind: 'input', sessionId: receipt.sessionId }
    const row = rows.get(id)
    return row === undefined ? undefined : { kind: 'row', sessionId: row }
  }
  /** The command of `act` on the facts as stored now. */
  function commandOf(act: Act): Command {
    switch (act.type) {
      case 'admit': {
        const row = rows.get(act.id)
        return {
          type: 'admit',
          input: { id: act.id, text: act.text, delivery: 'queue' },
          stored: receipts.get(act.id),
          rowOwner: row === undefined ? undefined : { kind: 'row', sessionId: row },
        }
      }
      case 'cancel':
        return { type: 'cancel', inputId: act.id, stored: receipts.get(act.id) }
      case 'edit':
        return { type: 'edit', inputId: act.id, text: act.text, stored: receipts.get(act.id) }
      case 'promote':
        return { type: 'promote', mode: act.mode }
      case 'append':
        return { type: 'append', events: act.events, owners: rowIdsCreated(act.events).map(ownerOf) }
    }
  }
  /** Stores what a planned write writes, as the commit would. */
  function store(outcome: PlanOutcome): void {
    if (!('planned' in outcome) || !outcome.planned.next) return
    for (const receipt of outcome.planned.decision.receipts) receipts.set(receipt.id, receipt)
    for (const id of outcome.planned.decision.createdRowIds) rows.set(id, 's')
  }
  return { commandOf, store }
}

/** The ids a write's facts are about, as the engine gives them (`WriteSpec.keys`). */
const keysOf = (act: Act): readonly string[] | undefined => {
  if (act.type === 'promote') return undefined
  if (act.type === 'append') return rowIdsCreated(act.events)
  return [act.id]
}

/** An outcome as comparable data: the refusal's code, or the answer and the state it moved to. */
const comparable = (outcome: PlanOutcome) =>
  'refused' in outcome
    ? { code: outcome.refused.code }
    : { answer: outcome.planned.decision.answer, next: outcome.planned.next, write: outcome.planned.write }

/** The reference: every write decided alone, on the facts stored after its predecessors. */
function oneByOne(acts: readonly Act[]) {
  const facts = createFacts()
  let state = fresh()
  const outcomes: PlanOutcome[] = []
  for (const act of acts) {
    const planned = planCommand(state, facts.commandOf(act), AT, POLICY)
    const outcome: PlanOutcome = isSessionlineError(planned) ? { refused: planned } : { planned }
    facts.store(outcome)
    outcomes.push(outcome)
    if (!isSessionlineError(planned) && planned.next) state = planned.next
  }
  return { outcomes, state }
}

/** The system under test: batches planned together, their facts read once before each batch. */
function inBatches(acts: readonly Act[]) {
  const facts = createFacts()
  let state = fresh()
  let rest = acts
  const outcomes: PlanOutcome[] = []
  const batchSizes: number[] = []
  while (rest.length > 0) {
    const commands = rest.map((act) => facts.commandOf(act))
    const judge: BatchJudge<Act> = { keys: keysOf, command: (_, __, i) => commands[i] }
    const before = structuredClone(state)
    const plan = planBatch(state, rest, judge, AT, POLICY)
    // Pure: the base it was given is left as it was.
    expect(state).toEqual(before)
    const decided = plan.outcomes.length
    expect(decided).toBeGreaterThan(0)
    // It stopped only where the next write's facts are about an id this batch wrote.
    if (decided < rest.length) {
      const touched = new Set(
        plan.plans.flatMap((p) => [...p.decision.receipts.map((r) => r.id), ...p.decision.createdRowIds]),
      )
      expect(keysOf(rest[decided] as Act)?.some((key) => touched.has(key))).toBe(true)
    }
    expect(plan.plans.length).toBe(plan.writers.length)
    expect(plan.refused).toBe(plan.outcomes.some((o) => 'refused' in o))
    for (const outcome of plan.outcomes) facts.store(outcome)
    outcomes.push(...plan.outcomes)
    batchSizes.push(decided)
    state = plan.state
    rest = rest.slice(decided)
  }
  return { outcomes, state, batchSizes }
}

const act: fc.Arbitrary<Act> = fc.oneof(
  fc.record({
    type: fc.constant('admit' as const),
    id: fc.constantFrom(...IDS),
    text: fc.constantFrom('one', 'two'),
  }),
  fc.record({ type: fc.constant('cancel' as const), id: fc.constantFrom(...IDS) }),
  fc.record({
    type: fc.constant('edit' as const),
    id: fc.constantFrom(...IDS),
    text: fc.constantFrom('one', 'two'),
  }),
  fc.record({ type: fc.constant('promote' as const), mode: fc.constantFrom('checkpoint', 'settled') }),
  fc.constantFrom<Act>(
    { type: 'append', events: [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }] },
    { type: 'append', events: [user('u1')] },
    { type: 'append', events: [user('taken')] },
    {
      type: 'append',
      events: [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'm1', text: 'hi' } },
      ],
    },
  ),
)

describe('planBatch', () => {
  test('writes planned in batches answer and end exactly as the same writes decided one by one', () => {
    fc.assert(
      fc.property(fc.array(act, { maxLength: 24 }), (acts) => {
        const expected = oneByOne(acts)
        const actual = inBatches(acts)
        expect(actual.outcomes.map(comparable)).toEqual(expected.outcomes.map(comparable))
        expect(actual.state).toEqual(expected.state)
      }),
      { numRuns: 300 },
    )
  })

  test('a refusal fails alone and changes nothing; the writes around it go on, each on the state before it', () => {
    const facts = createFacts()
    const acts: Act[] = [
      { type: 'admit', id: 'x', text: 'one' },
      { type: 'admit', id: 'taken', text: 'mine' },
      { type: 'admit', id: 'y', text: 'two' },
    ]
    const commands = acts.map((a) => facts.commandOf(a))
    const plan = planBatch(fresh(), acts, { keys: keysOf, command: (_, __, i) => commands[i] }, AT, POLICY)
    expect(plan.outcomes.map(comparable).map((o) => ('code' in o ? o.code : 'ok'))).toEqual([
      'ok',
      'conflict',
      'ok',
    ])
    expect(plan.refused).toBe(true)
    expect(plan.undecided).toBe(false)
    expect(plan.writers).toEqual([0, 2])
    // Two writes wrote: admission seqs 1 and 2, two revs, both at the batch's time.
    expect(plan.state.pending.map((r) => [r.id, r.seq])).toEqual([
      ['x', 1],
      ['y', 2],
    ])
    expect(plan.state.row).toMatchObject({ nextInputSeq: 3, rev: 3, updatedAt: AT })
  })

  test('a write whose ids an earlier write of the batch touched ends it, since its facts were read before that write', () => {
    const facts = createFacts()
    const acts: Act[] = [
      { type: 'admit', id: 'x', text: 'one' },
      { type: 'promote', mode: 'settled' },
      { type: 'cancel', id: 'x' },
      { type: 'admit', id: 'y', text: 'two' },
    ]
    const commands = acts.map((a) => facts.commandOf(a))
    const plan = planBatch(fresh(), acts, { keys: keysOf, command: (_, __, i) => commands[i] }, AT, POLICY)
    expect(plan.outcomes).toHaveLength(2)
    expect(plan.undecided).toBe(false)
  })

  test('a write it cannot judge ends the plan as undecided (a guess with nothing to expect)', () => {
    const facts = createFacts()
    const acts: Act[] = [
      { type: 'admit', id: 'x', text: 'one' },
      { type: 'admit', id: 'y', text: 'two' },
      { type: 'admit', id: 'z', text: 'two' },
    ]
    const judge: BatchJudge<Act> = {
      keys: keysOf,
      command: (a) => (a.type === 'admit' && a.id === 'y' ? undefined : facts.commandOf(a)),
    }
    const plan = planBatch(fresh(), acts, judge, AT, POLICY)
    expect(plan.outcomes).toHaveLength(1)
    expect(plan.undecided).toBe(true)
    expect(plan.state.pending.map((r) => r.id)).toEqual(['x'])
  })

  test("a SessionlineError thrown while giving a command is that write's refusal; any other error is thrown", () => {
    const facts = createFacts()
    const acts: Act[] = [
      { type: 'admit', id: 'x', text: 'one' },
      { type: 'admit', id: 'y', text: 'two' },
    ]
    const refusing: BatchJudge<Act> = {
      keys: keysOf,
      command: (a) => {
        if (a.type === 'admit' && a.id === 'x') throw new SessionlineError('invalid_input', 'no')
        return facts.commandOf(a)
      },
    }
    const plan = planBatch(fresh(), acts, refusing, AT, POLICY)
    expect(plan.outcomes.map(comparable).map((o) => ('code' in o ? o.code : 'ok'))).toEqual([
      'invalid_input',
      'ok',
    ])
    const broken: BatchJudge<Act> = {
      keys: keysOf,
      command: () => {
        throw new TypeError('a bug')
      },
    }
    expect(() => planBatch(fresh(), acts, broken, AT, POLICY)).toThrow(TypeError)
  })

  test('an imported session refuses every write, and the plan then writes nothing', () => {
    const facts = createFacts()
    const imported: PlanSnapshot = { ...fresh(), row: { ...fresh().row, source: 'pi' } }
    const acts: Act[] = [
      { type: 'admit', id: 'x', text: 'one' },
      { type: 'promote', mode: 'settled' },
    ]
    const commands = acts.map((a) => facts.commandOf(a))
    const plan = planBatch(imported, acts, { keys: keysOf, command: (_, __, i) => commands[i] }, AT, POLICY)
    expect(plan.plans).toEqual([])
    expect(plan.state).toBe(imported)
    expect(plan.outcomes.every((o) => 'refused' in o && o.refused.code === 'invalid_state')).toBe(true)
  })
})
