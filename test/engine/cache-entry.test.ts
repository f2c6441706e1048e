/**
 * A cache entry's lifecycle on a manual clock: pinned while a call holds it or anyone watches
 * it, removed IDLE_EVICT_MS after it became idle (at once if it never loaded), the least
 * recently used idle ones first beyond the cap; and its catch-ups, serialized, shared while
 * queued, with a failure told to `onError` (a real one: a closed fake-indexeddb database).
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test, vi } from 'vitest'
import { createEntries, IDLE_EVICT_MS, type Snapshot } from '../../src/engine/cache/entries'
import { createEngine } from '../../src/engine/engine'
import { createNotes } from '../../src/engine/notes'
import { createSessionCache } from '../../src/engine/session-cache'
import type { SessionlineError } from '../../src/schema/errors'
import { openDb } from '../../src/store/db'
import { freshDbName } from '../support/engines'
import { manualClock } from '../support/manual-clock'

type Report = [error: unknown, operation: string, sessionId?: string]

const state = { row: {}, folds: {}, pending: [] } as unknown as Snapshot

function setUp() {
  const clock = manualClock()
  const reports: Report[] = []
  const cache = createEntries({
    batch: (task) => queueMicrotask(task),
    clock,
    report: (...report) => reports.push(report),
    hooks: { watched: () => {}, unwatched: () => {} },
  })
  /** A call on the session that leaves it loaded. */
  const touch = (id: string) =>
    cache.use(id, async (entry) => {
      entry.publish(state)
      return entry
    })
  return { clock, reports, cache, touch }
}

describe('an entry nobody holds', () => {
  test('stays IDLE_EVICT_MS after its last call, and then goes', async () => {
    const { clock, cache, touch } = setUp()
    const entry = await touch('s')
    clock.advance(IDLE_EVICT_MS - 1)
    expect(cache.entries.get('s')).toBe(entry)
    clock.advance(1)
    expect(cache.entries.has('s')).toBe(false)
  })

  test('a call made meanwhile pins it, and its idle time starts again when the call ends', async () => {
    const { clock, cache, touch } = setUp()
    const entry = await touch('s')
    clock.advance(IDLE_EVICT_MS - 10)
    let release!: () => void
    const held = cache.use('s', () => new Promise<void>((resolve) => (release = resolve)))
    clock.advance(IDLE_EVICT_MS * 10)
    expect(cache.entries.get('s')).toBe(entry)
    release()
    await held
    clock.advance(IDLE_EVICT_MS - 1)
    expect(cache.entries.get('s')).toBe(entry)
    clock.advance(1)
    expect(cache.entries.has('s')).toBe(false)
  })

  test('a watcher keeps it; when the last one leaves, the idle time starts', async () => {
    const { clock, cache, touch } = setUp()
    const entry = await touch('s')
    const stopA = entry.feed.add(() => {})
    const stopB = entry.feed.add(() => {})
    clock.advance(IDLE_EVICT_MS * 3)
    stopA()
    clock.advance(IDLE_EVICT_MS * 3)
    expect(cache.entries.get('s')).toBe(entry)
    stopB()
    expect(clock.pending).toBe(1)
    clock.advance(IDLE_EVICT_MS)
    expect(cache.entries.has('s')).toBe(false)
  })

  test('one that never loaded goes as soon as its call ends, with no timer', async () => {
    const { clock, cache } = setUp()
    await cache.use('s', async () => {})
    expect(cache.entries.has('s')).toBe(false)
    expect(clock.pending).toBe(0)
  })

  test('beyond 64 idle entries the least recently used go first; held ones stay', async () => {
    const { cache, touch } = setUp()
    let release!: () => void
    const held = cache.use('held', async (entry) => {
      entry.publish(state)
      await new Promise<void>((resolve) => (release = resolve))
    })
    for (let i = 0; i < 64; i++) await touch(`s${i}`)
    await touch('s0') // used again: now the most recent
    await touch('s64')
    expect(cache.entries.has('s1')).toBe(false)
    expect(cache.entries.has('s0')).toBe(true)
    expect(cache.entries.has('held')).toBe(true)
    expect(cache.entries.size).toBe(65)
    release()
    await held
  })

  test('close drops every entry and leaves no timer', async () => {
    const { clock, cache, touch } = setUp()
    await touch('a')
    await touch('b')
    expect(clock.pending).toBe(2)
    cache.clear()
    expect(clock.pending).toBe(0)
    expect(cache.entries.size).toBe(0)
  })
})

describe("an entry's catch-ups", () => {
  test('run one after the other; calls made while one is queued share it', async () => {
    const { touch } = setUp()
    const entry = await touch('s')
    const runs: string[] = []
    let finish!: () => void
    const first = entry.catchUp(
      () =>
        new Promise<void>((resolve) => {
          runs.push('first')
          finish = resolve
        }),
    )
    await vi.waitFor(() => expect(runs).toEqual(['first']))
    const second = entry.catchUp(async () => {
      runs.push('second')
    })
    const third = entry.catchUp(async () => {
      runs.push('third')
    })
    expect(third).toBe(second)
    finish()
    await Promise.all([first, second, third])
    expect(runs).toEqual(['first', 'second'])
  })

  test('a failed one is reported with its session, resolves, and the next still runs', async () => {
    const { reports, touch } = setUp()
    const entry = await touch('s')
    await expect(entry.catchUp(() => Promise.reject(new Error('read failed')))).resolves.toBeUndefined()
    expect(reports).toHaveLength(1)
    expect(reports[0]![1]).toMatch(/catching up/)
    expect(reports[0]![2]).toBe('s')
    let ran = false
    await entry.catchUp(async () => {
      ran = true
    })
    expect(ran).toBe(true)
  })

  test("a catch-up that fails on the database reaches the cache's onError as a typed error", async () => {
    const dbName = freshDbName('cache-catch-up')
    const engine = createEngine({ dbName, indexedDB, IDBKeyRange, broadcast: false })
    const { id } = await engine.createSession({ title: 'catch-up' })
    await engine.close()
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    const errors: [SessionlineError, string | undefined][] = []
    const cache = createSessionCache({
      db,
      now: () => 0,
      batch: (task) => queueMicrotask(task),
      notes: createNotes(dbName, () => {}, false),
      isClosed: () => false,
      recover: () => {},
      clock: manualClock(),
      onError: (error, sessionId) => errors.push([error, sessionId]),
    })
    const entry = await cache.use(id, (entry) => cache.load(entry))
    expect(entry.snap?.row.id).toBe(id)
    db.close()
    await cache.catchUp(entry)
    expect(errors).toHaveLength(1)
    expect(errors[0]![1]).toBe(id)
    expect(errors[0]![0].code).toBe('storage_unavailable')
    cache.clear()
  })
})
