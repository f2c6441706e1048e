/**
 * reorder and setDelivery through the engine's public API (in process and through Comlink, on
 * fake-indexeddb): a moved input keeps its id, promotion follows the new order, another engine
 * and a cold one read the same order, and refusals write nothing.
 */
import { describe, expect, test } from 'vitest'
import { isSessionlineError } from '../../src/schema/errors'
import { engineKinds, inProcessEngine } from '../support/engines'

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isSessionlineError(error)) return error.code
    throw error
  }
  throw new Error('expected a SessionlineError')
}

describe.each(engineKinds)('inbox order, engine %s', (_, makeEngine) => {
  test('a reordered queue is promoted in its new order, and read back in it cold', async () => {
    const { engine, dbName, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      for (const id of ['a', 'b', 'c']) await engine.admit('s', { id, text: id, delivery: 'queue' })
      const moved = await engine.reorder('s', 'c', { before: 'a' })
      expect(moved).toMatchObject({ id: 'c', revision: 1, status: 'pending' })
      expect((await engine.pending('s')).map((r) => r.id)).toEqual(['c', 'a', 'b'])
      await engine.reorder('s', 'a', { before: null })
      expect((await engine.pending('s')).map((r) => r.id)).toEqual(['c', 'b', 'a'])
      // Moving it where it stands writes nothing.
      expect(await engine.reorder('s', 'a', { before: null })).toMatchObject({ id: 'a', revision: 1 })

      const cold = await inProcessEngine({ dbName, now: () => 1_000 })
      try {
        expect((await cold.engine.pending('s')).map((r) => r.id)).toEqual(['c', 'b', 'a'])
      } finally {
        await cold.close()
      }

      const [first] = await engine.promote('s', 'settled')
      expect(first!.id).toBe('c')
      await engine.append('s', [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }])
      // A queued input made a steer joins the running turn at its next checkpoint.
      await engine.promote('s', 'settled')
      expect(await engine.setDelivery('s', 'a', 'steer')).toMatchObject({ id: 'a', delivery: 'steer' })
      expect((await engine.promote('s', 'checkpoint')).map((r) => r.id)).toEqual(['a'])
      expect((await engine.pending('s')).map((r) => r.id)).toEqual([])
    } finally {
      await close()
    }
  })

  test('refusals are typed and write nothing', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await engine.createSession({ id: 'other' })
      await engine.admit('s', { id: 'a', text: 'a', delivery: 'queue' })
      await engine.admit('other', { id: 'o', text: 'o', delivery: 'queue' })
      const before = await engine.pending('s')
      expect(await codeOf(engine.reorder('s', 'a', { before: 'a' }))).toBe('invalid_input')
      expect(await codeOf(engine.reorder('s', 'a', { before: 'o' }))).toBe('not_found')
      expect(await codeOf(engine.reorder('s', 'o', { before: null }))).toBe('not_found')
      expect(await codeOf(engine.reorder('s', 'a', {} as never))).toBe('invalid_input')
      expect(await codeOf(engine.setDelivery('s', 'a', 'later' as never))).toBe('invalid_input')
      expect(await codeOf(engine.setDelivery('s', 'o', 'steer'))).toBe('not_found')
      expect(await engine.pending('s')).toEqual(before)
    } finally {
      await close()
    }
  })
})
