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

  test('a session deleted and created again in another tab is not written on the state cached before', async () => {
    const dbName = freshDbName('recreated')
    // Notes off: this engine hears nothing of the other's commits, as when a note is late.
    const clock = (start: number) => {
      let t = start
      return () => ++t
    }
    const a = await makeEngine({ dbName, broadcast: false, now: clock(1_000) })
    const b = await makeEngine({ dbName, broadcast: false, now: clock(5_000) })
    const reader = await makeEngine({ dbName, broadcast: false })
    try {
      const { id } = await a.engine.createSession({ id: 's' })
      await a.engine.admit(id, { id: 'a1', text: 'one' })
      await a.engine.admit(id, { id: 'a2', text: 'two' })
      await a.engine.promote(id, 'settled')
      // a caches the session at rev 4: head 4 (created, turn/start, two prompts), next input 3.
      await b.engine.deleteSession(id)
      await b.engine.createSession({ id })
      for (const x of ['x1', 'x2', 'x3']) await b.engine.admit(id, { id: x, text: x })
      // The new session is at rev 4 too: head 1, next input 4.
      const admitted = await a.engine.admit(id, { id: 'y', text: 'from a' })
      expect(admitted.seq).toBe(4)
      const pending = await reader.engine.pending(id)
      expect(pending.map((r) => [r.id, r.seq])).toEqual([
        ['x1', 1],
        ['x2', 2],
        ['x3', 3],
        ['y', 4],
      ])
      expect(await reader.engine.getSession(id)).toMatchObject({ headSeq: 1 })
      // A promote on a's side now opens turn 1 of the new session, right after its one event.
      await a.engine.promote(id, 'settled')
      const events = await reader.engine.events(id)
      expect(events.map((e) => [e.seq, e.type])).toEqual([
        [1, 'session/created'],
        [2, 'turn/start'],
        [3, 'user/message'],
        [4, 'user/message'],
        [5, 'user/message'],
        [6, 'user/message'],
      ])
    } finally {
      await a.close()
      await b.close()
      await reader.close()
    }
  })
})
