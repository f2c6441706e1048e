/**
 * What the engine reads from IndexedDB for the first screen, a page back, an admit and an append
 * must not grow with the session: the same operations on a session five times longer read the
 * same records in the same number of requests. (The timings of these live in `npm run bench --
 * --huge`; this is what keeps their growth IndexedDB's own.) Records are counted at fake-indexeddb's
 * object stores and indexes, the only place every read of the engine passes through.
 */
import { IDBIndex, IDBKeyRange, IDBObjectStore, indexedDB } from 'fake-indexeddb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEngine } from '../../src/index'
import { seededTurn, seededTurns } from '../bench/src/fixtures'

interface Reads {
  requests: number
  records: number
}

let counting: Reads | undefined
const READS = ['get', 'getAll', 'getAllKeys', 'getKey', 'openCursor', 'openKeyCursor', 'count'] as const
const originals: [object, string, unknown][] = []

beforeAll(() => {
  for (const proto of [IDBObjectStore.prototype, IDBIndex.prototype] as unknown as Record<
    string,
    unknown
  >[]) {
    for (const name of READS) {
      const original = proto[name] as (...args: unknown[]) => IDBRequest
      originals.push([proto, name, original])
      proto[name] = function (this: unknown, ...args: unknown[]) {
        const request = original.apply(this, args)
        const reads = counting
        if (reads) {
          reads.requests++
          request.addEventListener('success', () => {
            const result: unknown = request.result
            if (Array.isArray(result)) reads.records += result.length
            else if (result !== undefined && result !== null && name !== 'count') reads.records++
          })
        }
        return request
      }
    }
  }
})

afterAll(() => {
  for (const [proto, name, original] of originals) (proto as Record<string, unknown>)[name] = original
})

async function count<T>(run: () => Promise<T>): Promise<{ reads: Reads; value: T }> {
  const reads = { requests: 0, records: 0 }
  counting = reads
  try {
    return { reads, value: await run() }
  } finally {
    counting = undefined
  }
}

const SESSION = 'long'

/** A database with one session of `turns` seeded turns, written by an engine closed since. */
async function seeded(turns: number): Promise<string> {
  const dbName = `session-length-${turns}`
  const engine = createEngine({ dbName, indexedDB, IDBKeyRange })
  await engine.createSession({ id: SESSION })
  for (let first = 1; first <= turns; first += 500)
    await engine.append(SESSION, seededTurns(first, Math.min(turns, first + 499)))
  await engine.close()
  return dbName
}

/** The reads of each operation on a freshly opened engine over a session of `turns` turns. */
async function readsAt(turns: number) {
  const dbName = await seeded(turns)
  const engine = createEngine({ dbName, indexedDB, IDBKeyRange })
  try {
    const coldOpen = await count(() =>
      Promise.all([engine.page(SESSION, { limit: 50 }), engine.outline(SESSION)]),
    )
    const [tail, outline] = coldOpen.value
    // The search index follows commits in the background; loaded and current before the writes
    // below, it takes their rows as they commit and reads nothing while they are counted.
    await engine.search('turn', { sessionId: SESSION, limit: 1 })
    // The 400th newest row: four pages of 100 back.
    const { baseSeq: target } = await engine.page(SESSION, { limit: 400 })
    const loadThrough = await count(() => engine.loadThrough(SESSION, { seq: target, pageSize: 100 }))
    const admit = await count(() => engine.admit(SESSION, { id: 'note', text: 'a note', delivery: 'queue' }))
    const append = await count(() => engine.append(SESSION, seededTurn(turns + 1)))
    return {
      reads: {
        coldOpen: coldOpen.reads,
        loadThrough: loadThrough.reads,
        admit: admit.reads,
        append: append.reads,
      },
      shown: {
        tail: tail.messages.length,
        outline: outline.entries.length,
        total: outline.total,
        loaded: loadThrough.value.messages.length,
      },
    }
  } finally {
    await engine.close()
  }
}

describe('reads that do not grow with the session', () => {
  it('a cold open, a loadThrough 400 rows back, an admit and an append read the same records at 600 and 3,000 turns', async () => {
    const short = await readsAt(600)
    const long = await readsAt(3000)
    expect(short.shown).toEqual({ tail: 50, outline: 200, total: 600, loaded: 400 })
    expect(long.shown).toEqual({ tail: 50, outline: 200, total: 3000, loaded: 400 })
    expect(long.reads).toEqual(short.reads)
    // And each reads about what it shows: the tail page (one row past it), the fold heads and
    // the outline's last two chunks; the rows loaded (one past the last page); a few keyed reads.
    expect(short.reads.coldOpen.records).toBeLessThanOrEqual(50 + 1 + 10)
    expect(short.reads.loadThrough.records).toBeLessThanOrEqual(400 + 1 + 2)
    expect(short.reads.admit.records).toBeLessThanOrEqual(4)
    expect(short.reads.append.records).toBeLessThanOrEqual(4)
  }, 120_000)
})
