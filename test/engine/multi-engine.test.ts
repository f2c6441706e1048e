/**
 * Several engines (several tabs or workers) on one database: seqs stay dense and unique, nothing
 * is promoted twice, and each engine's watchers see the others' commits.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { replayTranscript } from '../../src/core/transcript'
import type { Engine, SessionChange } from '../../src/engine/types'
import type { SessionMessage } from '../../src/schema/messages'
import { openDb } from '../../src/store/db'
import { engineKinds, freshDbName } from '../support/engines'
import { changeFeed } from '../support/feed'
import { createInterruptibleFactory } from '../support/forced-close'

type Feed = ReturnType<typeof changeFeed>

type Op = { engine: 0 | 1; kind: 'steer' | 'queue' | 'settle' | 'checkpoint' | 'end' }

describe.each(engineKinds)('two engines %s on one database', (_, makeEngine) => {
  test('concurrent admits and promotes give dense unique seqs and no double promotion', async () => {
    const op = fc.record({
      engine: fc.constantFrom<0 | 1>(0, 1),
      kind: fc.constantFrom<Op['kind']>('steer', 'steer', 'queue', 'settle', 'settle', 'checkpoint', 'end'),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 40 }), async (ops) => {
        const dbName = freshDbName('pair')
        const a = await makeEngine({ dbName })
        const b = await makeEngine({ dbName })
        try {
          const { id } = await a.engine.createSession({ id: 's' })
          const engines = [a.engine, b.engine]
          const feeds = [changeFeed(), changeFeed()]
          const stops = await Promise.all(engines.map((e, i) => e.watch(id, (feeds[i] as Feed).listener)))
          let n = 0
          // Everything at once: the two engines race on one session row.
          const results = await Promise.allSettled(
            ops.map(async ({ engine, kind }) => {
              const e = engines[engine] as Engine
              if (kind === 'steer' || kind === 'queue')
                return e.admit(id, { id: `in-${n++}`, text: 'hi', delivery: kind })
              if (kind === 'settle') return e.promote(id, 'settled')
              if (kind === 'checkpoint') return e.promote(id, 'checkpoint')
              // The newest turn, if it is still open (another call may end it first: invalid_state).
              const turn = Math.max(1, (await e.projection(id, 'turnOutline')).length)
              return e.append(id, [{ type: 'turn/end', data: { turn, reason: 'completed' } }])
            }),
          )
          for (const r of results) {
            if (r.status === 'rejected') expect((r.reason as { code: string }).code).toBe('invalid_state')
          }
          const admitted = results.filter(
            (r, i) => r.status === 'fulfilled' && (ops[i]?.kind === 'steer' || ops[i]?.kind === 'queue'),
          )
          const db = openDb(dbName, { indexedDB, IDBKeyRange })
          const receipts = await db.inputs.toArray()
          db.close()
          expect(receipts.map((r) => r.seq).sort((x, y) => x - y)).toEqual(receipts.map((_, i) => i + 1))
          expect(receipts).toHaveLength(admitted.length)
          const events = await a.engine.events(id, { limit: 10_000 })
          expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
          const promotedIds = events.flatMap((e) => (e.type === 'user/message' ? [e.data.inputId] : []))
          expect(new Set(promotedIds).size).toBe(promotedIds.length)
          for (const r of receipts) {
            if (r.status === 'promoted') expect(promotedIds).toContain(r.id)
            else expect(promotedIds).not.toContain(r.id)
          }
          const rows = (await b.engine.loadThrough(id, { seq: 0 })).messages
          expect(rows).toEqual(replayTranscript(events))
          expect(await b.engine.pending(id)).toEqual(await a.engine.pending(id))

          // Each engine's watcher, merging pushes in order, ends where the database is.
          const done = (feed: SessionChange[]) =>
            feed.at(-1)?.headSeq === events.length &&
            feed.at(-1)?.session?.nextInputSeq === receipts.length + 1
          for (const feed of feeds) await feed.until(done, 'the last commit')
          for (const { changes: feed } of feeds) {
            const merged = new Map<string, SessionMessage>()
            const statuses = new Map<string, string>()
            for (const change of feed) {
              for (const m of change.rows) merged.set(m.id, m)
              for (const r of change.inputs) statuses.set(r.id, r.status)
            }
            expect([...merged.values()].sort((x, y) => x.seq - y.seq)).toEqual(rows)
            expect(statuses).toEqual(new Map(receipts.map((r) => [r.id, r.status])))
            const heads = feed.map((c) => c.headSeq)
            expect(heads).toEqual([...heads].sort((x, y) => x - y))
          }
          for (const stop of stops) stop()
        } finally {
          await a.close()
          await b.close()
        }
      }),
      { seed: 4242, numRuns: 15 },
    )
  }, 120_000)

  test("a watcher on one engine sees the other engine's commits, in order", async () => {
    const dbName = freshDbName('feed')
    const a = await makeEngine({ dbName })
    const b = await makeEngine({ dbName })
    try {
      const { id } = await a.engine.createSession({ id: 's' })
      const feed = changeFeed()
      const { changes } = feed
      const stop = await b.engine.watch(id, feed.listener)
      await a.engine.admit(id, { id: 'q1', text: 'one' })
      await a.engine.promote(id, 'settled')
      await a.engine.append(id, [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'm1', text: 'hello' } },
      ])
      await a.engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'm1', text: ' world' } }])
      await a.engine.admit(id, { id: 'q2', text: 'two', delivery: 'queue' })
      const headSeq = (await a.engine.getSession(id))?.headSeq
      await feed.until((c) => c.at(-1)?.session?.nextInputSeq === 3, 'the second admission')
      stop()
      // Merged in order, the pushes rebuild exactly what the database holds.
      const rows = new Map<string, SessionMessage>()
      const receipts = new Map<string, string>()
      for (const c of changes) {
        expect(c.durable).toBe(true)
        for (const m of c.rows) rows.set(m.id, m)
        for (const r of c.inputs) receipts.set(r.id, r.status)
      }
      expect([...rows.values()]).toEqual((await a.engine.page(id)).messages)
      expect(Object.fromEntries(receipts)).toEqual({ q1: 'promoted', q2: 'pending' })
      expect(changes.at(-1)).toMatchObject({ headSeq, views: { pending: [{ id: 'q2' }] } })
      const heads = changes.map((c) => c.headSeq)
      expect(heads).toEqual([...heads].sort((x, y) => x - y))
      expect(changes.flatMap((c) => (c.views.outline ? [c.views.outline.total] : []))).toContain(1)
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('a write on a current cache takes one transaction; on a stale one it is redone, not doubled', async () => {
    const dbName = freshDbName('spec')
    const counted = createInterruptibleFactory()
    const a = await makeEngine({ dbName, indexedDB: counted.factory })
    const b = await makeEngine({ dbName })
    try {
      const { id } = await a.engine.createSession({ id: 's' })
      await a.engine.admit(id, { id: 'a1', text: 'one' })
      let before = counted.readwrites
      await a.engine.admit(id, { id: 'a2', text: 'two' })
      expect(counted.readwrites - before).toBe(1)
      await b.engine.admit(id, { id: 'b1', text: 'from b' }) // a's cache is now behind
      before = counted.readwrites
      expect(await a.engine.admit(id, { id: 'a3', text: 'three' })).toMatchObject({ seq: 4 })
      expect(counted.readwrites - before).toBe(2)
      expect((await b.engine.promote(id, 'settled')).map((r) => r.id)).toEqual(['a1', 'a2', 'b1', 'a3'])
      await a.engine.admit(id, { id: 'a4', text: 'four' })
      // a's cache still sees no open turn: its guess fails, and the careful path finds turn 1.
      expect((await a.engine.promote(id, 'checkpoint')).map((r) => r.id)).toEqual(['a4'])
      expect((await a.engine.pending(id)).map((r) => r.id)).toEqual([])
      const events = await a.engine.events(id)
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('a session deleted by one engine is reported deleted to the other', async () => {
    const dbName = freshDbName('gone')
    const a = await makeEngine({ dbName })
    const b = await makeEngine({ dbName })
    try {
      const { id } = await a.engine.createSession({ id: 's' })
      const feed = changeFeed()
      await b.engine.watch(id, feed.listener)
      await a.engine.deleteSession(id)
      await feed.until((c) => c.some((change) => change.deleted), 'the deletion')
      expect(feed.changes.at(-1)).toMatchObject({ deleted: true })
      expect(await b.engine.getSession(id)).toBeUndefined()
    } finally {
      await a.close()
      await b.close()
    }
  })
})
