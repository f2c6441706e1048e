/**
 * A long answer's row lags the log in storage (docs/decisions/0021) and no reader can tell:
 * page, loadThrough, a cold engine, a second engine that watches and a write from a fresh engine
 * all see every delta logged so far, and the row is stored whole when the message ends.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test } from 'vitest'
import { replayTranscript } from '../../src/core/transcript'
import type { Engine, SessionChange } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { openDb } from '../../src/store/db'
import { engineKinds, freshDbName, inProcessEngine } from '../support/engines'
import { changeFeed } from '../support/feed'

const delta = (i: number): SessionEvent => ({
  type: 'assistant/delta',
  data: i % 7 === 3 ? { messageId: 'm', reasoning: `think ${i} ` } : { messageId: 'm', text: `word ${i} ` },
})

async function openAnswer(engine: Engine): Promise<string> {
  const { id } = await engine.createSession({ id: 's' })
  await engine.admit(id, { id: 'in-1', text: 'write at length', delivery: 'steer' })
  await engine.promote(id, 'settled')
  await engine.append(id, [
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'assistant/start', data: { messageId: 'm', turn: 1, step: 1 } },
  ])
  return id
}

async function stored(dbName: string) {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    const [session, row, transcript] = await Promise.all([
      db.sessions.get('s'),
      db.messages.get('m'),
      db.projections.get(['s', 'transcript']),
    ])
    return { session, row, transcript }
  } finally {
    db.close()
  }
}

const whole = async (engine: Engine) => replayTranscript(await engine.events('s', { limit: 10_000 }))
const answerOf = (rows: readonly SessionMessage[]) => rows.find((row) => row.id === 'm')

describe.each(engineKinds)('a streamed answer %s', (_, makeEngine) => {
  test('lags in storage mid-stream while page, loadThrough, a cold engine and a watching second engine show every delta; it is stored whole at its end', async () => {
    const dbName = freshDbName('stream')
    const a = await makeEngine({ dbName, materialize: { minLag: 200, deltaWeight: 1 } })
    const b = await makeEngine({ dbName })
    try {
      const id = await openAnswer(a.engine)
      const feed = changeFeed()
      const stop = await b.engine.watch(id, feed.listener)
      for (let i = 0; i < 40; i++) await a.engine.append(id, [delta(i)])
      const expected = answerOf(await whole(a.engine))
      // Stored: the row as of its last rewrite, listed as lagging; the fold state without its text.
      const mid = await stored(dbName)
      expect(mid.session?.lagging?.map((lag) => lag.id)).toEqual(['m'])
      expect(JSON.stringify(mid.row).length).toBeLessThan(JSON.stringify(expected).length)
      expect(mid.transcript?.state).toMatchObject({ open: ['m'] })
      expect(JSON.stringify(mid.transcript?.state)).not.toContain('word')
      // Read back: everything logged so far, by every reader.
      expect(answerOf((await a.engine.page(id, { limit: 5 })).messages)).toEqual(expected)
      expect(answerOf((await b.engine.loadThrough(id, { seq: 1 })).messages)).toEqual(expected)
      const cold = await inProcessEngine({ dbName })
      try {
        expect(answerOf((await cold.engine.page(id)).messages)).toEqual(expected)
        // A fresh engine's write folds on from the patched row, not the stored one.
        await cold.engine.append(id, [delta(40)])
      } finally {
        await cold.close()
      }
      await feed.until((changes: SessionChange[]) =>
        changes.some((c) => c.headSeq === 46 && c.rows.length > 0),
      )
      const seen = feed.changes.flatMap((c) => c.rows).filter((row) => row.id === 'm')
      expect(seen.at(-1)).toEqual(answerOf(await whole(a.engine)))
      stop()
      await a.engine.append(id, [
        { type: 'assistant/end', data: { messageId: 'm', finish: 'stop' } },
        { type: 'step/end', data: { turn: 1, step: 1 } },
      ])
      const end = await stored(dbName)
      expect(end.session?.lagging).toBeUndefined()
      expect(end.row).toEqual(answerOf(await whole(a.engine)))
      expect((await b.engine.page(id)).messages).toEqual(await whole(a.engine))
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('with the default policy, 300 deltas of a short answer write its row only at the start and the end', async () => {
    const dbName = freshDbName('stream-default')
    const a = await makeEngine({ dbName })
    try {
      const id = await openAnswer(a.engine)
      const before = (await stored(dbName)).row
      for (let i = 0; i < 300; i++) await a.engine.append(id, [delta(i)])
      expect((await stored(dbName)).row).toEqual(before)
      await a.engine.append(id, [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }])
      expect((await stored(dbName)).row).toEqual(answerOf(await whole(a.engine)))
    } finally {
      await a.close()
    }
  })
})
