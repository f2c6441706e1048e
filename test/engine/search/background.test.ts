/**
 * The search index's background parts on their own, driven by a manual clock: the follower of
 * commits (when it syncs, in what order, what a failure does) and the persister (quiet delay,
 * the cap on waiting, forget, close), and that every background failure reaches `onError` with
 * its session instead of vanishing. Storage is fake-indexeddb; failures are real ones (a closed
 * database), not stubs.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test, vi } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import { createFollower } from '../../../src/engine/search/follower'
import { createSearchIndex, FOLLOW_DELAY, type SearchIndexEvent } from '../../../src/engine/search/index'
import { createPersister } from '../../../src/engine/search/persister'
import { Vocabulary } from '../../../src/engine/search/postings'
import { applyRows, emptyIndex, type SessionIndex } from '../../../src/engine/search/session-index'
import type { SessionlineError } from '../../../src/schema/errors'
import { openDb, type SessionRow } from '../../../src/store/db'
import { freshDbName } from '../../support/engines'
import { manualClock } from '../../support/manual-clock'
import { turnEvents } from '../../support/turns'

type Report = [error: unknown, operation: string, sessionId?: string]

const deferred = () => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

describe('the follower of commits', () => {
  test('syncs every followed session once, in order, a delay after the first follow', async () => {
    const clock = manualClock()
    const synced: string[] = []
    const follower = createFollower({
      delay: 200,
      clock,
      sync: async (id) => synced.push(id),
      report: () => {},
    })
    follower.follow('a')
    clock.advance(150)
    follower.follow('b')
    follower.follow('a')
    clock.advance(49)
    await Promise.resolve()
    expect(synced).toEqual([])
    expect(clock.pending).toBe(1)
    clock.advance(1)
    await vi.waitFor(() => expect(synced).toEqual(['a', 'b']))
    expect(clock.pending).toBe(0)
    await follower.close()
  })

  test('a follow while a sync runs waits for it, then runs on the same chain', async () => {
    const clock = manualClock()
    const started: string[] = []
    const gates = new Map([['a', deferred()]])
    const follower = createFollower({
      delay: 10,
      clock,
      sync: async (id) => {
        started.push(id)
        await gates.get(id)?.promise
      },
      report: () => {},
    })
    follower.follow('a')
    clock.advance(10)
    await vi.waitFor(() => expect(started).toEqual(['a']))
    follower.follow('b')
    clock.advance(10)
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(started).toEqual(['a'])
    gates.get('a')!.resolve()
    await vi.waitFor(() => expect(started).toEqual(['a', 'b']))
    await follower.close()
  })

  test('a failed sync is reported with its session, and the sessions after it are still synced', async () => {
    const clock = manualClock()
    const reports: Report[] = []
    const synced: string[] = []
    const follower = createFollower({
      delay: 10,
      clock,
      sync: async (id) => {
        if (id === 'bad') throw new Error('disk on fire')
        synced.push(id)
      },
      report: (...report) => reports.push(report),
    })
    for (const id of ['a', 'bad', 'c']) follower.follow(id)
    clock.advance(10)
    await vi.waitFor(() => expect(synced).toEqual(['a', 'c']))
    expect(reports).toHaveLength(1)
    expect(reports[0]![1]).toMatch(/following/)
    expect(reports[0]![2]).toBe('bad')
    expect(String(reports[0]![0])).toMatch(/disk on fire/)
    await follower.close()
  })

  test('close cancels the waiting timer, ignores later follows and waits for the sync running', async () => {
    const clock = manualClock()
    const synced: string[] = []
    const gate = deferred()
    let finished = false
    const follower = createFollower({
      delay: 10,
      clock,
      sync: async (id) => {
        synced.push(id)
        await gate.promise
        finished = true
      },
      report: () => {},
    })
    follower.follow('a')
    clock.advance(10)
    await vi.waitFor(() => expect(synced).toEqual(['a']))
    follower.follow('b')
    expect(clock.pending).toBe(1)
    const closing = follower.close()
    expect(clock.pending).toBe(0)
    follower.follow('c')
    expect(clock.pending).toBe(0)
    gate.resolve()
    await closing
    expect(finished).toBe(true)
    clock.advance(1000)
    expect(synced).toEqual(['a'])
  })
})

describe('the persister', () => {
  const row = (id: string): SessionRow =>
    ({ id, source: 'native', headSeq: 0, rev: 0 }) as unknown as SessionRow

  async function setUp(delay = 100, maxDelays = 5) {
    const db = openDb(freshDbName('persister'), { indexedDB, IDBKeyRange })
    const clock = manualClock()
    const vocabulary = new Vocabulary()
    const indexes = new Map<string, SessionIndex>()
    const written: string[] = []
    const reports: Report[] = []
    const persister = createPersister({
      db,
      delay,
      maxDelays,
      clock,
      indexOf: (id) => indexes.get(id),
      searchesDone: () => Promise.resolve(),
      onPersisted: (id) => written.push(id),
      report: (...report) => reports.push(report),
    })
    const change = (id: string) => {
      const index = indexes.get(id) ?? emptyIndex(row(id), vocabulary)
      indexes.set(id, index)
      const seq = index.headSeq + 1
      applyRows(index, [
        {
          id: `${id}-${seq}`,
          sessionId: id,
          seq,
          turn: 1,
          role: 'user',
          status: 'complete',
          visibility: 'visible',
          parts: [{ type: 'text', text: `word${seq}` }],
          createdAt: 0,
          updatedAt: 0,
          source: 'native',
        } as never,
      ])
      index.headSeq = seq
      persister.schedule(id)
    }
    return { db, clock, persister, written, reports, change }
  }

  test('writes once after a quiet delay, however many changes came before it', async () => {
    const { db, clock, persister, written, change } = await setUp(100)
    change('s')
    clock.advance(60)
    change('s')
    clock.advance(60)
    change('s')
    clock.advance(99)
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(written).toEqual([])
    clock.advance(1)
    await vi.waitFor(() => expect(written).toEqual(['s']))
    const stored = await db.search.where('sessionId').equals('s').toArray()
    expect(stored.find((p) => p.part === 0)?.data).toMatchObject({ headSeq: 3 })
    await persister.close()
    db.close()
  })

  test('a burst that never goes quiet is written after at most maxDelays delays', async () => {
    const { db, clock, persister, written, change } = await setUp(100, 5)
    change('s')
    for (let t = 0; t < 500; t += 50) {
      clock.advance(50)
      change('s')
    }
    // 500 ms after the first change the timer is no longer moved: it falls due by 600.
    clock.advance(100)
    await vi.waitFor(() => expect(written).toEqual(['s']))
    await persister.close()
    db.close()
  })

  test('a forgotten session is not written; close writes what is unsaved and starts no timer after', async () => {
    const { db, clock, persister, written, change } = await setUp(100)
    change('gone')
    change('kept')
    await persister.forget('gone')
    await persister.close()
    expect(written).toEqual(['kept'])
    change('late')
    expect(clock.pending).toBe(0)
    db.close()
  })

  test('a failed write is reported with its session, and the persister goes on', async () => {
    const { db, clock, persister, written, reports, change } = await setUp(100)
    change('a')
    db.close()
    clock.advance(100)
    await vi.waitFor(() => expect(reports).toHaveLength(1))
    expect(reports[0]![1]).toMatch(/writing/)
    expect(reports[0]![2]).toBe('a')
    expect(written).toEqual([])
    await persister.close()
  })
})

describe('onError', () => {
  test("the engine's onError hears a background index write that failed, as a typed error naming the session", async () => {
    const dbName = freshDbName('search-on-error')
    const seeding = createEngine({ dbName, indexedDB, IDBKeyRange, broadcast: false })
    const { id } = await seeding.createSession({ title: 'errors' })
    await seeding.append(id, turnEvents(1, { prompt: 'vermilion', answer: 'ok' }).events)
    await seeding.close()
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    await db.search.clear()
    const clock = manualClock()
    const errors: [SessionlineError, string | undefined][] = []
    const events: SearchIndexEvent[] = []
    const index = createSearchIndex({
      db,
      clock,
      persistDelay: 50,
      onEvent: (e) => events.push(e),
      onError: (error, sessionId) => errors.push([error, sessionId]),
    })
    expect(await index.search('vermilion')).toHaveLength(1)
    expect(events.map((e) => e.kind)).toEqual(['rebuilt'])
    db.close()
    clock.advance(50)
    await vi.waitFor(() => expect(errors).toHaveLength(1))
    expect(errors[0]![1]).toBe(id)
    expect(errors[0]![0].code).toBe('storage_unavailable')
    expect(errors[0]![0].message).toMatch(/search index/)
    await index.close()
  })

  test('a followed sync that fails is reported, not dropped', async () => {
    const dbName = freshDbName('search-follow-error')
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    const clock = manualClock()
    const errors: [SessionlineError, string | undefined][] = []
    const index = createSearchIndex({
      db,
      clock,
      onError: (error, sessionId) => errors.push([error, sessionId]),
    })
    index.refresh('s1')
    db.close()
    clock.advance(FOLLOW_DELAY)
    await vi.waitFor(() => expect(errors).toHaveLength(1))
    expect(errors[0]![1]).toBe('s1')
    expect(errors[0]![0].code).toBe('storage_unavailable')
    await index.close()
  })
})
