/**
 * Storage the user can see (DESIGN.md §11): `storage()` reports each session's size by part and
 * the origin's figures, and deleting a session leaves no row of it in any table and no bytes
 * nobody references, checked by scanning every table the schema declares.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import { cacheMarker, memoryMarker, type SiteMarker } from '../../src/engine/site-marker'
import { sizeOf } from '../../src/engine/storage'
import type { Engine } from '../../src/engine/types'
import { openDb } from '../../src/store/db'
import { engineKinds, freshDbName, type TestEngine } from '../support/engines'

/** Every row of every table, by table name. */
async function scan(dbName: string): Promise<Record<string, Record<string, unknown>[]>> {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    await db.open()
    const out: Record<string, Record<string, unknown>[]> = {}
    for (const table of db.tables) out[table.name] = (await table.toArray()) as Record<string, unknown>[]
    return out
  } finally {
    db.close()
  }
}

/** Sessions whose search index was written to the `search` table. */
const indexed = new Set<string>()
const onSearchIndex = (event: { kind: string; sessionId: string }) => {
  if (event.kind === 'persisted') indexed.add(event.sessionId)
}
async function untilIndexed(sessionId: string) {
  for (let i = 0; i < 400 && !indexed.has(sessionId); i++) await new Promise((r) => setTimeout(r, 10))
  expect(indexed.has(sessionId), `search index of ${sessionId} persisted`).toBe(true)
}

/** A session with a finished turn, a pending and a cancelled input, files, and a stored search index. */
async function fullSession(engine: Engine, title: string, shared: Uint8Array<ArrayBuffer>) {
  const { id } = await engine.createSession({ title })
  await engine.admit(id, {
    text: `${title} prompt`,
    attachments: [
      { name: 'shared.png', mediaType: 'image/png', data: new Blob([shared]) },
      { name: 'own.txt', mediaType: 'text/plain', data: new Blob([`${title} own bytes`]) },
    ],
  })
  await engine.promote(id, 'settled')
  const messageId = `${title}-answer`
  await engine.append(id, [
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn: 1, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: `${title} answer` } },
    { type: 'tool/call', data: { messageId, callId: `${title}-call`, name: 'read', input: { path: title } } },
    { type: 'assistant/end', data: { messageId, finish: 'tool-calls' } },
    { type: 'tool/result', data: { callId: `${title}-call`, output: 'contents', isError: false } },
    { type: 'step/end', data: { turn: 1, step: 1 } },
    { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
  ])
  const cancelled = await engine.admit(id, { text: 'never mind' })
  await engine.cancel(id, cancelled.id)
  await engine.admit(id, { text: 'still waiting', delivery: 'queue' })
  await engine.search(title, { sessionId: id })
  await untilIndexed(id)
  return id
}

/** A sync state and an outbox entry for session `id`, as a synced session has (docs/decisions/0036). */
async function syncRows(dbName: string, id: string) {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    await db.syncState.put({
      sessionId: id,
      url: 'http://127.0.0.1:1',
      deviceId: 'device',
      epoch: 0,
      nextProducerSeq: 0,
      offset: '-1',
      canonicalSeq: 0,
      seen: [],
      skipped: 0,
    })
    const [created] = await db.events.where('[sessionId+seq]').equals([id, 1]).toArray()
    const { sessionId: _s, seq: _q, ...event } = created!
    await db.syncOutbox.put({
      sessionId: id,
      fromSeq: 1,
      toSeq: 1,
      batch: {
        v: 1,
        kind: 'batch',
        device: 'device',
        batchId: `${id}-b`,
        parentHead: null,
        baseTurn: 0,
        events: [event],
      },
    })
  } finally {
    db.close()
  }
}

/** Whether a stored row belongs to session `id`, whatever table it is in. */
const belongsTo = (row: Record<string, unknown>, id: string) => row.sessionId === id || row.id === id

describe.each(engineKinds)('storage %s', (_, makeEngine) => {
  const withEngine = async (run: (t: TestEngine) => Promise<void>) => {
    const t = await makeEngine({ onSearchIndex })
    try {
      await run(t)
    } finally {
      await t.close()
    }
  }

  test('deleting a session leaves no row of it in any table and no bytes nobody references', () =>
    withEngine(async ({ engine, dbName }) => {
      const shared = new Uint8Array(512).fill(7)
      const one = await fullSession(engine, 'one', shared)
      const two = await fullSession(engine, 'two', shared)
      await syncRows(dbName, one)
      await syncRows(dbName, two)
      const before = await scan(dbName)
      // Every table holds something of session one, or the scan below would prove nothing.
      for (const [name, rows] of Object.entries(before)) {
        if (name === 'attachments') expect(rows, name).toHaveLength(3)
        else
          expect(
            rows.some((r) => belongsTo(r, one)),
            name,
          ).toBe(true)
      }
      await engine.deleteSession(one)
      const after = await scan(dbName)
      for (const [name, rows] of Object.entries(after)) {
        expect(
          rows.filter((r) => belongsTo(r, one)),
          name,
        ).toEqual([])
        // Everything of session two is untouched.
        if (name !== 'attachments')
          expect(rows, name).toEqual(before[name]?.filter((r) => !belongsTo(r, one) || belongsTo(r, two)))
      }
      // Session one's own file is gone; the shared one stays for session two.
      const referenced = new Set(after.attachmentRefs?.map((r) => r.attachmentId))
      expect(after.attachments?.map((a) => a.id).sort()).toEqual([...referenced].sort())
      expect(after.attachments).toHaveLength(2)
      await engine.deleteSession(two)
      for (const [name, rows] of Object.entries(await scan(dbName))) expect(rows, name).toEqual([])
    }))

  test('storage() sizes each session by part, largest first, and counts the bytes it references', () =>
    withEngine(async ({ engine, dbName }) => {
      const big = new Uint8Array(50_000).fill(1)
      const small = await fullSession(engine, 'small', new Uint8Array(10))
      const large = await fullSession(engine, 'large', big)
      const empty = (await engine.createSession({ title: 'empty' })).id
      const report = await engine.storage()
      expect(report.sessions.map((s) => s.sessionId)).toEqual([large, small, empty])
      const tables = await scan(dbName)
      for (const s of report.sessions) {
        expect(s.bytes).toBe(s.events + s.rows + s.index + s.attachments)
        // The parts are the rows' structured sizes, table by table.
        const of = (name: string) => (tables[name] ?? []).filter((r) => belongsTo(r, s.sessionId))
        expect(s.events).toBe(
          [...of('sessions'), ...of('events'), ...of('inputs')].reduce((n, r) => n + sizeOf(r), 0),
        )
        expect(s.rows).toBe([...of('messages'), ...of('projections')].reduce((n, r) => n + sizeOf(r), 0))
        expect(s.index).toBe(of('search').reduce((n, r) => n + sizeOf(r), 0))
      }
      const largeEntry = report.sessions[0]
      expect(largeEntry?.attachments).toBe(50_000 + 'large own bytes'.length)
      expect(largeEntry?.index).toBeGreaterThan(0)
      expect(report.sessions[2]?.attachments).toBe(0)
      // Node has no navigator.storage: the origin's figures read as unknown.
      expect([report.usage, report.quota, report.persisted]).toEqual([0, 0, false])
      expect(await engine.persist()).toBe(false)
    }))
})

/** Time for the note's update, which follows a write without being awaited by it. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50))

/** Deletes the database as a browser clearing this site's IndexedDB would. */
function wipeDatabase(dbName: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(dbName)
    request.onsuccess = resolve
    request.onerror = () => reject(request.error)
  })
}

test('a database the browser emptied since the last visit is told apart from one the user emptied', async () => {
  const dbName = freshDbName('evicted')
  const marker = memoryMarker()
  const open = () => createEngine({ dbName, indexedDB, IDBKeyRange, marker })

  const first = open()
  expect((await first.storage()).evicted).toBe(false) // a first visit: nothing was kept
  await first.createSession({ id: 'kept' })
  await settle()
  await first.close()
  expect(await marker.held()).toBe(true)

  // The browser deletes the site's IndexedDB between visits; the note outside it stays.
  await wipeDatabase(dbName)
  const second = open()
  expect((await second.storage()).evicted).toBe(true)
  expect(await second.listSessions()).toEqual([])
  // Once the app goes on (a new session), the note is true again; this engine keeps saying what it found.
  await second.createSession({ id: 'fresh' })
  expect((await second.storage()).evicted).toBe(true)
  // The user deletes every session: the note is cleared, so the next empty open is no eviction.
  await second.deleteSession('fresh')
  await settle()
  await second.close()
  expect(await marker.held()).toBe(false)
  const third = open()
  expect((await third.storage()).evicted).toBe(false)
  await third.close()
})

test('an emptied database is told apart even when the first call after the open writes a session', async () => {
  const dbName = freshDbName('evicted-write-first')
  const memory = memoryMarker()
  // The Cache API answers in milliseconds, from another process: later than a write can commit.
  const marker: SiteMarker = {
    held: () => new Promise((resolve) => setTimeout(() => resolve(memory.held()), 30)),
    set: (held) => memory.set(held),
  }
  const open = () => createEngine({ dbName, indexedDB, IDBKeyRange, marker })
  const first = open()
  await first.createSession({ id: 'kept' })
  await settle()
  await first.close()
  expect(await marker.held()).toBe(true)
  await wipeDatabase(dbName)
  // The app writes at once, before anything asks about storage: what the engine found as it
  // opened (no session) is counted before that write, and the note is read only when asked.
  const second = open()
  await second.createSession({ id: 'fresh' })
  expect((await second.storage()).evicted).toBe(true)
  await second.close()
})

test('the default note is a Cache API entry per database name, and there is none without a Cache API', async () => {
  expect(cacheMarker('db')).toBeUndefined() // Node has no Cache API
  // A Cache API as the platform's: caches by name, entries by URL (what the marker calls of it).
  const stores = new Map<string, Map<string, Response>>()
  const caches = {
    async open(name: string) {
      const entries = stores.get(name) ?? new Map<string, Response>()
      stores.set(name, entries)
      return {
        match: async (url: string) => entries.get(url),
        put: async (url: string, response: Response) => void entries.set(url, response),
        delete: async (url: string) => entries.delete(url),
      }
    },
  }
  const global = globalThis as { caches?: unknown }
  global.caches = caches
  try {
    const one = cacheMarker('one') as NonNullable<ReturnType<typeof cacheMarker>>
    const two = cacheMarker('two') as NonNullable<ReturnType<typeof cacheMarker>>
    expect(await one.held()).toBe(false)
    await one.set(true)
    expect([await one.held(), await two.held()]).toEqual([true, false])
    expect([...(stores.get('sessionline-marker')?.keys() ?? [])]).toEqual(['/__sessionline__/one'])
    await one.set(false)
    expect(await one.held()).toBe(false)
  } finally {
    delete global.caches
  }
})
