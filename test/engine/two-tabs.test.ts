/**
 * Two tabs on one session: two engines on one fake-indexeddb database, each with its own cache,
 * racing as two tabs do. Each scenario is a defect a user noticed (issue "Two tabs, one session").
 */
import { describe, expect, test } from 'vitest'
import { engineKinds, freshDbName } from '../support/engines'

describe.each(engineKinds)('two tabs %s', (_, makeEngine) => {
  test('a steer admitted on a stale cache keeps the text another tab streamed', async () => {
    const dbName = freshDbName('steer-stale')
    const a = await makeEngine({ dbName })
    const b = await makeEngine({ dbName })
    const reader = await makeEngine({ dbName })
    try {
      const { id } = await a.engine.createSession({ id: 's' })
      await a.engine.admit(id, { id: 'q1', text: 'ask' })
      // b's cache holds the session before the answer starts.
      expect(await b.engine.pending(id)).toHaveLength(1)
      await a.engine.promote(id, 'settled')
      await a.engine.append(id, [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
      ])
      // A delta in a commit of its own: the stored row lags the log (docs/decisions/0021).
      await a.engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'm1', text: 'hello' } }])
      await b.engine.admit(id, { id: 'q2', text: 'steer', delivery: 'steer' })
      const answer = async () =>
        (await reader.engine.loadThrough(id, { seq: 0 })).messages.find((m) => m.id === 'm1')
      // Before the fix: the row read back with no text at all.
      expect((await answer())?.parts).toEqual([{ type: 'text', text: 'hello' }])
      await a.engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'm1', text: ' world' } }])
      await a.engine.append(id, [
        { type: 'assistant/end', data: { messageId: 'm1', finish: 'stop' } },
        { type: 'step/end', data: { turn: 1, step: 1 } },
      ])
      // Before the fix: the finished row held only ' world'.
      expect((await answer())?.parts).toEqual([{ type: 'text', text: 'hello world' }])
    } finally {
      await a.close()
      await b.close()
      await reader.close()
    }
  })
})
