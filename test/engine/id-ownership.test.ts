/**
 * Ids are global (docs/architecture.md §10): a transcript row, an input receipt and an imported row never
 * share an id, in one session or across sessions. Every write that would reuse one is a
 * `conflict` and writes nothing, and the owner of the id keeps working afterwards.
 */
import { describe, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import { engineKinds } from '../support/engines'

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isSessionlineError(error)) return error.code
    throw error
  }
  throw new Error('expected a SessionlineError')
}

const userMessage = (inputId: string): SessionEvent => ({
  type: 'user/message',
  data: { inputId, text: 'by hand', delivery: 'steer', source: 'synthetic' },
})
const assistantStart = (messageId: string, turn: number, step: number): SessionEvent[] => [
  { type: 'step/start', data: { turn, step } },
  { type: 'assistant/start', data: { messageId, turn, step } },
]

/** Everything a write could have touched, to prove a refused one wrote nothing. */
async function footprint(engine: Engine, ids: readonly string[]) {
  return Promise.all(
    ids.map(async (id) => ({
      session: await engine.getSession(id),
      events: await engine.events(id),
      rows: (await engine.loadThrough(id, { seq: 0, includeInactive: true })).messages,
      pending: await engine.pending(id),
    })),
  )
}

describe.each(engineKinds)('id ownership %s', (_, makeEngine) => {
  async function withEngine(run: (engine: Engine) => Promise<void>) {
    const { engine, close } = await makeEngine({ now: () => 5_000 })
    try {
      await run(engine)
    } finally {
      await close()
    }
  }

  /**
   * Session `a` has an open turn (step 1 closed) with row `row-a`, a pending steer `pending-a`
   * and a cancelled input `gone-a`; session `b` has row `row-b` and a pending queued `pending-b`.
   */
  async function setUp(engine: Engine) {
    await engine.createSession({ id: 'a' })
    await engine.createSession({ id: 'b' })
    await engine.admit('a', { id: 'row-a', text: 'first' })
    await engine.promote('a', 'settled')
    await engine.admit('b', { id: 'row-b', text: 'first' })
    await engine.promote('b', 'settled')
    await engine.append('b', [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }])
    await engine.admit('a', { id: 'pending-a', text: 'later' })
    await engine.admit('a', { id: 'gone-a', text: 'never mind' })
    await engine.cancel('a', 'gone-a')
    await engine.admit('b', { id: 'pending-b', text: 'queued', delivery: 'queue' })
  }

  test('an append never creates a row under an id a row or an input of any session owns, and writes nothing', () =>
    withEngine(async (engine) => {
      await setUp(engine)
      const before = await footprint(engine, ['a', 'b'])
      const taken = ['pending-a', 'pending-b', 'gone-a', 'row-a', 'row-b']
      for (const id of taken) {
        expect(await codeOf(engine.append('a', [userMessage(id)])), `user/message ${id}`).toBe('conflict')
        expect(await codeOf(engine.append('a', assistantStart(id, 1, 1))), `assistant/start ${id}`).toBe(
          'conflict',
        )
      }
      expect(await footprint(engine, ['a', 'b'])).toEqual(before)
      // The owners still work: both pending inputs promote into rows under their own ids.
      expect((await engine.promote('a', 'checkpoint')).map((r) => r.id)).toEqual(['pending-a'])
      expect((await engine.promote('b', 'settled')).map((r) => r.id)).toEqual(['pending-b'])
    }))

  test('one append may not create two rows under one id, in any combination of user and assistant messages', () =>
    withEngine(async (engine) => {
      await setUp(engine)
      const before = await footprint(engine, ['a'])
      const twice: SessionEvent[][] = [
        [userMessage('dup'), userMessage('dup')],
        [userMessage('dup'), ...assistantStart('dup', 1, 1)],
        [
          ...assistantStart('dup', 1, 1),
          { type: 'assistant/end', data: { messageId: 'dup', finish: 'stop' } },
          { type: 'step/end', data: { turn: 1, step: 1 } },
          ...assistantStart('dup', 1, 2),
        ],
      ]
      for (const events of twice) {
        expect(await codeOf(engine.append('a', events)), events.map((e) => e.type).join(',')).toBe('conflict')
      }
      expect(await footprint(engine, ['a'])).toEqual(before)
      await engine.append('a', [userMessage('dup')])
      expect((await engine.pending('a')).map((r) => r.id)).toEqual(['pending-a'])
    }))

  test('admit refuses an id that a row or another session’s input owns', () =>
    withEngine(async (engine) => {
      await setUp(engine)
      const before = await footprint(engine, ['a', 'b'])
      for (const id of ['row-a', 'row-b', 'pending-b']) {
        expect(await codeOf(engine.admit('a', { id, text: 'later' })), id).toBe('conflict')
      }
      expect(await footprint(engine, ['a', 'b'])).toEqual(before)
    }))

  test('racing writes that claim one id leave exactly one owner', () =>
    withEngine(async (engine) => {
      await setUp(engine)
      const claims = await Promise.allSettled([
        engine.admit('b', { id: 'contested', text: 'mine' }),
        engine.append('a', [userMessage('contested')]),
        engine.admit('a', { id: 'contested', text: 'no, mine' }),
        engine.append('a', assistantStart('contested', 1, 1)),
      ])
      const won = claims.filter((c) => c.status === 'fulfilled')
      expect(won).toHaveLength(1)
      for (const lost of claims.filter((c) => c.status === 'rejected')) {
        expect((lost.reason as { code: string }).code).toBe('conflict')
      }
      const rows = [
        ...(await engine.loadThrough('a', { seq: 0 })).messages,
        ...(await engine.loadThrough('b', { seq: 0 })).messages,
      ]
      const inputs = [...(await engine.pending('a')), ...(await engine.pending('b'))]
      const owners = [...rows, ...inputs].filter((x) => x.id === 'contested')
      expect(owners).toHaveLength(1)
    }))
})
