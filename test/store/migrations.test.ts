/**
 * Upgrades a database an older release wrote: test/store/fixtures/v1-database.json holds every
 * row of a version 1 database written by the code of commit e725c6c (see the README beside it),
 * loaded here into fake-indexeddb at that version and opened with today's engine.
 */
import { readFileSync } from 'node:fs'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { replay } from '../../src/core/projection'
import { replayTranscript } from '../../src/core/transcript'
import { turnOutline } from '../../src/core/turn-outline'
import { usage } from '../../src/core/usage'
import { isReadable } from '../../src/core/visibility'
import type { Engine } from '../../src/engine/types'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { InputReceipt } from '../../src/schema/inputs'
import type { SessionMessage } from '../../src/schema/messages'
import { openDb } from '../../src/store/db'
import { SCHEMA_VERSION, SCHEMA_VERSIONS } from '../../src/store/migrations'
import { freshDbName, inProcessEngine, type TestEngine } from '../support/engines'
import {
  FROZEN_TABLES,
  type FrozenDatabase,
  frozenRows,
  loadFrozenDatabase,
  parseFrozenDatabase,
  v1DatabaseUrl,
} from '../support/frozen-database'

const fixture: FrozenDatabase = parseFrozenDatabase(JSON.parse(readFileSync(v1DatabaseUrl, 'utf8')))
const options = { indexedDB, IDBKeyRange }

const sessionRows = frozenRows(fixture, 'sessions') as { id: string; source: string; headSeq: number }[]
const eventsOf = (id: string) =>
  (frozenRows(fixture, 'events') as unknown as StoredEvent[])
    .filter((e) => e.sessionId === id)
    .sort((a, b) => a.seq - b.seq)
/** The session's rows a page shows (hidden rows, such as Pi's bookkeeping, never; inactive ones when asked). */
const rowsOf = (id: string, includeInactive = true) =>
  (frozenRows(fixture, 'messages') as unknown as SessionMessage[])
    .filter((m) => m.sessionId === id && isReadable(m.visibility, includeInactive))
    .sort((a, b) => a.seq - b.seq)
/** A receipt as today's engine serves an old one: the first release had no revisions, so it reads as revision 0. */
const asServedToday = (r: InputReceipt): InputReceipt => ({ ...r, revision: r.revision ?? 0 })
const receiptsOf = (id: string) =>
  (frozenRows(fixture, 'inputs') as unknown as InputReceipt[])
    .filter((r) => r.sessionId === id)
    .sort((a, b) => a.seq - b.seq)
    .map(asServedToday)
const nativeIds = sessionRows.filter((s) => s.source === 'native').map((s) => s.id)

/** The IndexedDB version and the index names of each store, read without Dexie. */
async function rawLayout(dbName: string) {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(dbName)
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  })
  const tx = db.transaction([...db.objectStoreNames], 'readonly')
  const indexes = Object.fromEntries(
    [...db.objectStoreNames].map((name) => [name, [...tx.objectStore(name).indexNames].sort()]),
  )
  const version = db.version
  db.close()
  return { version, indexes }
}

async function allEvents(engine: Engine, sessionId: string): Promise<StoredEvent[]> {
  const out: StoredEvent[] = []
  for (;;) {
    const batch = await engine.events(sessionId, { afterSeq: out.at(-1)?.seq ?? 0, limit: 10_000 })
    out.push(...batch)
    if (batch.length < 10_000) return out
  }
}

test('versions only grow and each says why it exists', () => {
  const numbers = SCHEMA_VERSIONS.map((v) => v.version)
  expect(numbers).toEqual([...numbers].sort((a, b) => a - b))
  expect(new Set(numbers).size).toBe(numbers.length)
  expect(SCHEMA_VERSIONS.every((v) => v.why.length > 0)).toBe(true)
  expect(SCHEMA_VERSION).toBe(numbers.at(-1))
})

test('version 1 is declared today exactly as the release that wrote the fixture declared it', () => {
  // Editing an old version instead of appending one would leave databases of that release unopenable.
  expect(SCHEMA_VERSIONS[0]).toEqual(fixture.writtenBy.schema)
  expect(fixture.writtenBy.layout.version).toBe(10) // Dexie stores version n as IndexedDB version 10·n
})

test('the fixture holds every kind of row the version 1 release wrote', () => {
  // Hand-checked against the generating steps in fixtures/README.md.
  expect(sessionRows.map((s) => s.id).sort()).toEqual([
    'claude:test_session',
    'codex:11111111-1111-4111-8111-111111111111',
    'empty',
    'long',
    'native',
    'open-turn',
    'pi:fx-tree-v3',
    'runner',
  ])
  const receipts = frozenRows(fixture, 'inputs') as unknown as InputReceipt[]
  expect(new Set(receipts.map((r) => r.status))).toEqual(new Set(['pending', 'promoted', 'cancelled']))
  expect(receipts.some((r) => r.updatedAt !== undefined && r.status === 'pending')).toBe(true) // edited
  const types = new Set(eventsOf('native').map((e) => e.type))
  expect(types).toEqual(
    new Set([
      'session/created',
      'turn/start',
      'user/message',
      'step/start',
      'assistant/start',
      'assistant/delta',
      'tool/call',
      'tool/result',
      'assistant/end',
      'step/end',
      'turn/end',
    ]),
  )
  expect(eventsOf('native').some((e) => e.type === 'turn/end' && e.data.reason === 'aborted')).toBe(true)
  expect(eventsOf('runner').some((e) => e.type === 'tool/call')).toBe(true)
  // An outline longer than one chunk of later releases, stored inline in a single row.
  const outlineRow = frozenRows(fixture, 'projections').find(
    (p) => p.sessionId === 'long' && p.name === 'turnOutline',
  ) as { state: { entries?: unknown[] } } | undefined
  expect(JSON.stringify(outlineRow?.state).length).toBeGreaterThan(10_000)
  expect(frozenRows(fixture, 'projections').some((p) => String(p.name).includes('#'))).toBe(false)
  // Imported rows that are not visible by default (an abandoned Pi branch, Pi's hidden bookkeeping).
  const piRows = frozenRows(fixture, 'messages').filter((m) => m.sessionId === 'pi:fx-tree-v3')
  expect(new Set(piRows.map((m) => m.visibility))).toEqual(new Set(['visible', 'inactive', 'hidden']))
})

describe('a version 1 database written by the first release, opened by today’s engine', () => {
  let dbName: string
  let current: TestEngine
  let clock: number
  const open = () => inProcessEngine({ dbName, now: () => (clock += 1000) })

  const readReceipts = async (sessionId: string) => {
    const db = openDb(dbName, options)
    try {
      return await db.inputs.where('[sessionId+seq]').between([sessionId, 0], [sessionId, Infinity]).toArray()
    } finally {
      db.close()
    }
  }

  beforeEach(async () => {
    dbName = freshDbName('v1')
    clock = 1_800_000_000_000
    await loadFrozenDatabase(fixture, indexedDB, dbName)
    current = await open()
  })
  afterEach(async () => {
    await current.close()
  })

  test('the loaded fixture is a version 1 database until the engine opens it, then it is upgraded in place', async () => {
    // The engine may open (and so upgrade) its database as soon as it is created: look at a
    // fresh copy of the fixture that no engine has seen yet.
    await current.close()
    dbName = freshDbName('v1')
    await loadFrozenDatabase(fixture, indexedDB, dbName)
    const before = await rawLayout(dbName)
    expect(before.version).toBe(10)
    expect(before.indexes.inputs).toEqual(['[sessionId+seq]'])
    current = await open()
    await current.engine.listSessions()
    const upgraded = openDb(dbName, options)
    try {
      await upgraded.open()
      expect(upgraded.verno).toBe(SCHEMA_VERSION)
      expect(upgraded.inputs.schema.idxByName['[sessionId+status+seq]']).toBeDefined()
      // The upgrade rewrote no row: every table holds exactly the fixture's rows.
      for (const table of FROZEN_TABLES)
        expect(await upgraded.table(table).toArray(), table).toEqual(frozenRows(fixture, table))
    } finally {
      upgraded.close()
    }
  })

  test('every session is listed as the old release listed it', async () => {
    expect(await current.engine.listSessions()).toEqual(fixture.served.sessions)
    for (const row of fixture.served.sessions) {
      const id = row.id as string
      expect(await current.engine.getSession(id)).toEqual(fixture.served.bySession[id]?.info)
    }
  })

  test('pages, events, pending receipts, outline and usage of every session equal the fixture', async () => {
    const { engine } = current
    for (const { id } of sessionRows) {
      const served = fixture.served.bySession[id]
      const events = eventsOf(id)
      const rows = rowsOf(id)
      expect(await allEvents(engine, id), id).toEqual(events)
      const withInactive = await engine.page(id, { limit: 1000, includeInactive: true })
      expect(withInactive.messages, id).toEqual(rows)
      const page = await engine.page(id, { limit: 1000 })
      expect(page.messages, id).toEqual(rowsOf(id, false))
      const bounds = ({ messages, ...rest }: typeof page) => ({ ...rest, ids: messages.map((m) => m.id) })
      expect(bounds(page), id).toEqual(served?.page)
      expect(bounds(withInactive), id).toEqual(served?.pageWithInactive)
      expect(await engine.pending(id), id).toEqual(receiptsOf(id).filter((r) => r.status === 'pending'))
      expect(await engine.pending(id), id).toEqual(
        (served?.pending as InputReceipt[] | undefined)?.map(asServedToday),
      )
      expect(await engine.projection(id, 'turnOutline'), id).toEqual(served?.turnOutline)
      expect(await engine.projection(id, 'usage'), id).toEqual(served?.usage)
      // A native session's rows and views are its log's: today's folds read the old log the same way.
      if (nativeIds.includes(id)) {
        expect(rowsOf(id), id).toEqual(replayTranscript(events))
        // Down to the order of each row's fields, which JSON shows: a session whose cached fold
        // state is rebuilt has its rows written again by today's fold, and must serve the same
        // JSON as before (the browser contract compares it).
        expect(JSON.stringify(replayTranscript(events)), id).toBe(JSON.stringify(rowsOf(id)))
        expect(served?.turnOutline, id).toEqual(turnOutline.view(replay(turnOutline, events)))
        expect(served?.usage, id).toEqual(usage.view(replay(usage, events)))
      }
    }
  })

  test('admit, edit, cancel and promote continue the old inbox and log densely', async () => {
    const { engine } = current
    // native: in-4 (steer) and in-5 (queue, edited) pending; in-6 cancelled; no turn open.
    expect(await engine.admit('native', { id: 'in-7', text: 'one more' })).toMatchObject({
      seq: 7,
      status: 'pending',
    })
    // An old receipt answers a replayed admit with itself, and refuses a changed one.
    const old = receiptsOf('native').find((r) => r.id === 'in-4')!
    expect(await engine.admit('native', { id: 'in-4', text: old.text })).toEqual(old)
    await expect(engine.admit('native', { id: 'in-4', text: 'changed' })).rejects.toMatchObject({
      code: 'conflict',
    })
    await expect(engine.cancel('native', 'in-6')).rejects.toMatchObject({ code: 'invalid_state' })
    expect(await engine.edit('native', 'in-7', { text: 'one more, edited' })).toMatchObject({ seq: 7 })
    const head = sessionRows.find((s) => s.id === 'native')!.headSeq // 29
    const settled = await engine.promote('native', 'settled')
    expect(settled.map((r) => [r.id, r.seq, r.turn])).toEqual([
      ['in-4', head + 2, 3],
      ['in-7', head + 3, 3],
    ])
    await engine.append('native', [{ type: 'turn/end', data: { turn: 3, reason: 'completed' } }])
    expect((await engine.promote('native', 'settled')).map((r) => [r.id, r.parts, r.seq])).toEqual([
      ['in-5', [{ type: 'text', text: 'And then this, edited' }], head + 6],
    ])
    expect(await engine.pending('native')).toEqual([])

    // open-turn: a turn left open mid-stream takes its waiting steer at a checkpoint and ends.
    const openHead = sessionRows.find((s) => s.id === 'open-turn')!.headSeq // 7
    expect((await engine.promote('open-turn', 'checkpoint')).map((r) => [r.id, r.seq])).toEqual([
      ['o-in-2', openHead + 1],
    ])
    await engine.append('open-turn', [
      { type: 'tool/result', data: { callId: 'o-call-1', output: 'README.md', isError: false } },
      { type: 'assistant/end', data: { messageId: 'o-m-1', finish: 'tool-calls' } },
      { type: 'step/end', data: { turn: 1, step: 1 } },
      { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
    ])

    for (const id of ['native', 'open-turn']) {
      const events = await allEvents(engine, id)
      expect(
        events.map((e) => e.seq),
        id,
      ).toEqual(events.map((_, i) => i + 1))
      expect(events.slice(0, eventsOf(id).length), id).toEqual(eventsOf(id))
      expect((await engine.page(id, { limit: 1000 })).messages, id).toEqual(replayTranscript(events))
      expect(await engine.projection(id, 'turnOutline'), id).toEqual(
        turnOutline.view(replay(turnOutline, events)),
      )
      // No old receipt is promoted twice, and the new ones are promoted exactly once.
      for (const receipt of await readReceipts(id)) {
        const promotedAt = events.filter((e) => e.type === 'user/message' && e.data.inputId === receipt.id)
        expect(
          promotedAt.map((e) => e.seq),
          receipt.id,
        ).toEqual(receipt.status === 'promoted' ? [receipt.promotedSeq] : [])
      }
    }
  })

  test('a long session whose outline was stored in one row grows past it, and a cold engine reads it back', async () => {
    const { engine } = current
    const extra: SessionEvent[] = []
    for (let turn = 301; turn <= 320; turn++)
      extra.push(
        { type: 'turn/start', data: { turn } },
        {
          type: 'user/message',
          data: { inputId: `l-in-${turn}`, text: `question ${turn}`, delivery: 'steer', source: 'synthetic' },
        },
        { type: 'turn/end', data: { turn, reason: 'completed' } },
      )
    await engine.append('long', extra)
    const events = await allEvents(engine, 'long')
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
    const outline = turnOutline.view(replay(turnOutline, events))
    expect(outline).toHaveLength(320)
    expect(await engine.projection('long', 'turnOutline')).toEqual(outline)
    await current.close()
    current = await open()
    expect(await current.engine.projection('long', 'turnOutline')).toEqual(outline)
    expect((await current.engine.page('long', { limit: 1000 })).messages).toEqual(replayTranscript(events))
  })

  test('an imported session of the old release is re-imported in place, without touching other sessions', async () => {
    const { engine } = current
    const piText = readFileSync(
      new URL('../import/fixtures/pi/tree-v3-branch-compaction.jsonl', import.meta.url),
      'utf8',
    )
    const info = await engine.importTranscript({ text: piText, name: 'pi/tree-v3-branch-compaction.jsonl' })
    expect(info.id).toBe('pi:fx-tree-v3')
    // The old rows are replaced by what today's importer makes of the file (its rules changed
    // since the first release): the same as an import into an empty database.
    const fresh = await inProcessEngine({ dbName: freshDbName('reimport'), now: () => 1 })
    try {
      await fresh.engine.importTranscript({ text: piText, name: 'pi/tree-v3-branch-compaction.jsonl' })
      const expected = (await fresh.engine.page(info.id, { limit: 1000, includeInactive: true })).messages
      const stamp = ({ createdAt, updatedAt, ...row }: SessionMessage) => row
      const reimported = (await engine.page(info.id, { limit: 1000, includeInactive: true })).messages
      expect(reimported.map(stamp)).toEqual(expected.map(stamp))
      expect(reimported.map((row) => row.id)).not.toEqual([])
    } finally {
      await fresh.close()
    }
    expect((await engine.listSessions()).map((s) => s.id).sort()).toEqual(sessionRows.map((s) => s.id).sort())
    for (const id of nativeIds)
      expect((await engine.page(id, { limit: 1000, includeInactive: true })).messages, id).toEqual(rowsOf(id))
  })

  test('a deleted old session leaves no row behind and the others intact', async () => {
    const { engine } = current
    await engine.deleteSession('runner')
    await current.close()
    const db = openDb(dbName, options)
    try {
      for (const table of FROZEN_TABLES) {
        const rows = (await db.table(table).toArray()) as { sessionId?: string; id?: string }[]
        const expected = frozenRows(fixture, table).filter(
          (r) => (table === 'sessions' ? r.id : r.sessionId) !== 'runner',
        )
        expect(rows, table).toEqual(expected)
      }
    } finally {
      db.close()
    }
    current = await open()
  })
})
