/**
 * Group commit (docs/decisions/0014): writes issued at once are committed together, and yet each
 * call answers as if it had run alone, in the order it was issued. A refused or conflicting write
 * fails alone; seqs stay dense; two engines racing on one database still agree.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import { openDb } from '../../src/store/db'
import { engineKinds, freshDbName, inProcessEngine } from '../support/engines'
import { createInterruptibleFactory } from '../support/forced-close'

/** A settled call as comparable data: its answer, or the code of its refusal. */
type Outcome = { ok: unknown } | { code: string }

async function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: await promise }
  } catch (error) {
    if (isSessionlineError(error)) return { code: error.code }
    throw error
  }
}

const synthetic = (inputId: string): SessionEvent => ({
  type: 'user/message',
  data: { inputId, text: `by hand ${inputId}`, delivery: 'steer', source: 'synthetic' },
})

async function storedOf(dbName: string) {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    const [events, receipts] = await Promise.all([db.events.toArray(), db.inputs.toArray()])
    return { events, receipts }
  } finally {
    db.close()
  }
}

const dense = (seqs: number[]) => {
  const sorted = [...seqs].sort((a, b) => a - b)
  return sorted.every((seq, i) => seq === i + 1)
}

describe.each(engineKinds)('group commit %s', (_, makeEngine) => {
  test('200 admits issued at once commit together, all but the conflicting and the malformed one, admission seqs dense', async () => {
    const counted = createInterruptibleFactory()
    const { engine, dbName, close } = await makeEngine({ now: () => 1_000, indexedDB: counted.factory })
    try {
      await engine.createSession({ id: 's' })
      await engine.createSession({ id: 'other' })
      await engine.admit('other', { id: 'taken', text: 'elsewhere' })
      const before = counted.readwrites
      const calls = Array.from({ length: 200 }, (_, i) => {
        if (i === 70) return engine.admit('s', { id: 'taken', text: 'mine' })
        if (i === 140) return engine.admit('s', { id: 'bad', text: 42 as unknown as string })
        return engine.admit('s', { id: `in-${i}`, text: `prompt ${i}` })
      })
      const outcomes = await Promise.all(calls.map(outcomeOf))
      // Together: a few batches (the first call alone, the rest behind it; a conflict redoes
      // one), never a transaction per call.
      expect(counted.readwrites - before).toBeLessThanOrEqual(6)
      expect(outcomes[70]).toEqual({ code: 'conflict' })
      expect(outcomes[140]).toEqual({ code: 'invalid_input' })
      const admitted = outcomes.filter((o) => 'ok' in o)
      expect(admitted).toHaveLength(198)
      // Admission order is issue order: the seqs of the answers count up with the calls.
      const seqs = admitted.map((o) => (o as { ok: { seq: number } }).ok.seq)
      expect(seqs).toEqual(seqs.map((_, i) => i + 1))
      const pending = await engine.pending('s')
      expect(pending.map((r) => r.id)).toEqual(admitted.map((o) => (o as { ok: { id: string } }).ok.id))
      const { receipts } = await storedOf(dbName)
      const mine = receipts.filter((r) => r.sessionId === 's')
      expect(mine).toHaveLength(198)
      expect(dense(mine.map((r) => r.seq))).toBe(true)
    } finally {
      await close()
    }
  })

  test('appends issued at once commit all but the one taking a used id and the one breaking the grammar, event seqs dense', async () => {
    const { engine, dbName, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await engine.append('s', [{ type: 'turn/start', data: { turn: 1 } }, synthetic('first')])
      const calls = Array.from({ length: 60 }, (_, i) => {
        if (i === 20) return engine.append('s', [synthetic('first')])
        if (i === 40) return engine.append('s', [{ type: 'turn/start', data: { turn: 1 } }])
        return engine.append('s', [synthetic(`u-${i}`)])
      })
      const outcomes = await Promise.all(calls.map(outcomeOf))
      expect(outcomes[20]).toEqual({ code: 'conflict' })
      expect(outcomes[40]).toEqual({ code: 'invalid_state' })
      const heads = outcomes.flatMap((o) => ('ok' in o ? [(o.ok as { headSeq: number }).headSeq] : []))
      expect(heads).toHaveLength(58)
      // Three events before the burst (created, turn/start, first); each append adds one, in issue order.
      expect(heads).toEqual(heads.map((_, i) => 4 + i))
      const { events } = await storedOf(dbName)
      expect(dense(events.map((e) => e.seq))).toBe(true)
      expect(events).toHaveLength(3 + 58)
      const rows = (await engine.loadThrough('s', { seq: 0 })).messages
      expect(rows.map((r) => r.id)).toEqual([
        'first',
        ...Array.from({ length: 60 }, (_, i) => `u-${i}`).filter((_, i) => i !== 20 && i !== 40),
      ])
    } finally {
      await close()
    }
  })

  test('a cancel and an edit issued with the admit of their input see it, and later admits of that id conflict with the changed receipt', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      const [admitted, edited, cancelled, again, conflict] = await Promise.all([
        outcomeOf(engine.admit('s', { id: 'a', text: 'one', delivery: 'queue' })),
        outcomeOf(engine.edit('s', 'a', { text: 'two' })),
        outcomeOf(engine.cancel('s', 'a')),
        outcomeOf(engine.admit('s', { id: 'a', text: 'one', delivery: 'queue' })),
        outcomeOf(engine.admit('s', { id: 'a', text: 'other', delivery: 'queue' })),
      ])
      expect(admitted).toMatchObject({ ok: { id: 'a', status: 'pending', revision: 0 } })
      expect(edited).toMatchObject({ ok: { id: 'a', text: 'two', revision: 1 } })
      expect(cancelled).toMatchObject({ ok: { id: 'a', status: 'cancelled', revision: 2 } })
      // The stored receipt is cancelled now, with another text: the same payload is not a replay.
      expect(again).toEqual({ code: 'conflict' })
      expect(conflict).toEqual({ code: 'conflict' })
      expect(await engine.pending('s')).toEqual([])
    } finally {
      await close()
    }
  })

  test('two engines admitting and appending at once on one database: one refusal each, every other write lands, seqs dense', async () => {
    const dbName = freshDbName('group')
    const a = await makeEngine({ dbName, now: () => 1_000 })
    const b = await makeEngine({ dbName, now: () => 1_000 })
    try {
      await a.engine.createSession({ id: 's' })
      await a.engine.append('s', [{ type: 'turn/start', data: { turn: 1 } }])
      const burst = (engine: Engine, tag: string) =>
        Array.from({ length: 40 }, (_, i) => {
          if (i === 13) return engine.admit('s', { id: 'shared', text: tag })
          if (i % 2 === 0) return engine.admit('s', { id: `${tag}-in-${i}`, text: 'hi' })
          return engine.append('s', [synthetic(`${tag}-row-${i}`)])
        })
      const outcomes = await Promise.all([...burst(a.engine, 'a'), ...burst(b.engine, 'b')].map(outcomeOf))
      // Both engines claim `shared` with different texts: exactly one admit wins, the other conflicts.
      const shared = [outcomes[13], outcomes[53]]
      expect(shared.filter((o) => o && 'ok' in o)).toHaveLength(1)
      expect(shared.filter((o) => o && 'code' in o)).toEqual([{ code: 'conflict' }])
      expect(outcomes.filter((o) => 'code' in o)).toHaveLength(1)
      const { events, receipts } = await storedOf(dbName)
      expect(dense(events.map((e) => e.seq))).toBe(true)
      // created + turn/start + 19 appends per engine.
      expect(events).toHaveLength(2 + 38)
      expect(receipts).toHaveLength(2 * 20 + 1)
      expect(dense(receipts.map((r) => r.seq))).toBe(true)
      for (const engine of [a.engine, b.engine]) {
        expect((await engine.pending('s')).map((r) => r.seq)).toEqual(receipts.map((_, i) => i + 1))
      }
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe('group commit in one round trip', () => {
  test('a burst of admits on a current cache commits in one readwrite transaction; on a stale cache the guess aborts and the burst is redone once, nothing doubled', async () => {
    const dbName = freshDbName('guess')
    const counted = createInterruptibleFactory()
    const a = await inProcessEngine({ dbName, indexedDB: counted.factory })
    const b = await inProcessEngine({ dbName })
    try {
      await a.engine.createSession({ id: 's' })
      await a.engine.admit('s', { id: 'warm', text: 'loads the cache' })
      const burst = (tag: string, n: number) =>
        Promise.all(
          Array.from({ length: n }, (_, i) => a.engine.admit('s', { id: `${tag}-${i}`, text: 'hi' })),
        )
      let before = counted.readwrites
      const first = await burst('x', 50)
      expect(counted.readwrites - before).toBe(1)
      expect(first.map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2))
      // Another engine commits: a's cache is behind, its guessed batch aborts, the careful one lands.
      await b.engine.admit('s', { id: 'from-b', text: 'b' })
      before = counted.readwrites
      const second = await burst('y', 50)
      expect(counted.readwrites - before).toBe(2)
      expect(second.map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 53))
      // An id stored meanwhile by b fails the guessed add: the careful path answers it as a conflict.
      await b.engine.admit('s', { id: 'taken', text: 'b owns it' })
      const mixed = await Promise.all(
        ['z-1', 'taken', 'z-2'].map((id) => outcomeOf(a.engine.admit('s', { id, text: 'from a' }))),
      )
      expect(mixed.map((o) => ('code' in o ? o.code : 'ok'))).toEqual(['ok', 'conflict', 'ok'])
      const { receipts } = await storedOf(dbName)
      expect(receipts).toHaveLength(1 + 50 + 1 + 50 + 1 + 2)
      expect(dense(receipts.map((r) => r.seq))).toBe(true)
    } finally {
      await a.close()
      await b.close()
    }
  })
})

type Action =
  | { kind: 'admit'; id: number; text: number; delivery: 'steer' | 'queue' }
  | { kind: 'cancel'; id: number }
  | { kind: 'edit'; id: number; text: number }
  | { kind: 'promote'; mode: 'settled' | 'checkpoint' }
  | { kind: 'end' }
  | { kind: 'row'; id: number }

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant('admit' as const),
    id: fc.nat(6),
    text: fc.nat(2),
    delivery: fc.constantFrom('steer' as const, 'queue' as const),
  }),
  fc.record({ kind: fc.constant('cancel' as const), id: fc.nat(6) }),
  fc.record({ kind: fc.constant('edit' as const), id: fc.nat(6), text: fc.nat(2) }),
  fc.record({
    kind: fc.constant('promote' as const),
    mode: fc.constantFrom('settled' as const, 'checkpoint' as const),
  }),
  fc.record({ kind: fc.constant('end' as const) }),
  fc.record({ kind: fc.constant('row' as const), id: fc.nat(6) }),
)

/** Runs one action on session `s`; `end` closes turn 1 (refused unless it is open). */
function run(engine: Engine, a: Action): Promise<unknown> {
  switch (a.kind) {
    case 'admit':
      return engine.admit('s', { id: `in-${a.id}`, text: `t${a.text}`, delivery: a.delivery })
    case 'cancel':
      return engine.cancel('s', `in-${a.id}`)
    case 'edit':
      return engine.edit('s', `in-${a.id}`, { text: `t${a.text}` })
    case 'promote':
      return engine.promote('s', a.mode)
    case 'end':
      return engine.append('s', [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }])
    case 'row':
      // Rows under input ids: a conflict whenever that input exists.
      return engine.append('s', [synthetic(`in-${a.id}`)])
  }
}

describe('group commit against a sequential reference', () => {
  test('actions issued at once answer and store exactly what the same actions awaited one by one do', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 2, maxLength: 30 }), async (actions) => {
        const concurrent = await inProcessEngine({ now: () => 7 })
        const sequential = await inProcessEngine({ now: () => 7 })
        try {
          for (const { engine } of [concurrent, sequential]) await engine.createSession({ id: 's' })
          const together = await Promise.all(actions.map((a) => outcomeOf(run(concurrent.engine, a))))
          const oneByOne: Outcome[] = []
          for (const a of actions) oneByOne.push(await outcomeOf(run(sequential.engine, a)))
          expect(together).toEqual(oneByOne)
          const [got, want] = await Promise.all([storedOf(concurrent.dbName), storedOf(sequential.dbName)])
          expect(got).toEqual(want)
          expect(await concurrent.engine.pending('s')).toEqual(await sequential.engine.pending('s'))
          expect(
            (await concurrent.engine.loadThrough('s', { seq: 0, includeInactive: true })).messages,
          ).toEqual((await sequential.engine.loadThrough('s', { seq: 0, includeInactive: true })).messages)
        } finally {
          await concurrent.close()
          await sequential.close()
        }
      }),
      { numRuns: 40 },
    )
  })
})
