/**
 * What the engine does when its database fails it: IndexedDB missing or refusing to open, a
 * newer version of the app upgrading the database in another tab, an upgrade of ours blocked by
 * an older tab, the database deleted by another connection or with the site's data. Each fault
 * is a real one of fake-indexeddb (a second connection, a forced close, a deletion); every
 * engine runs in process and through Comlink.
 */
import { forceCloseDatabase, IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test } from 'vitest'
import { createSessionView } from '../../src/client/session-view'
import type { TimelineSnapshot } from '../../src/client/types'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import { openDb } from '../../src/store/db'
import { SCHEMA_VERSION, SCHEMA_VERSIONS } from '../../src/store/migrations'
import { engineKinds, freshDbName } from '../support/engines'
import { changeFeed, createSignal } from '../support/feed'
import { createRecordingFactory } from '../support/recording-factory'

const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** The error a call rejects with, as `code` and `details.reason`. */
async function failure(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!isSessionlineError(error)) return { code: `not a SessionlineError: ${String(error)}` }
  return {
    code: error.code,
    reason: (error.details as { reason?: string } | undefined)?.reason,
    message: error.message,
  }
}

const databaseNames = async () => (await indexedDB.databases()).map((d) => d.name)

/** A schema one version newer than ours, as the next release of the app would declare it. */
const NEXT_VERSIONS = [
  ...SCHEMA_VERSIONS,
  { version: SCHEMA_VERSION + 1, why: 'a later release', stores: { notes: 'id' } },
]

/** A view over `engine` and a way to wait for one of its snapshots. */
function viewOf(engine: Engine, sessionId: string) {
  const view = createSessionView(engine, sessionId)
  const changed = createSignal()
  const stop = view.subscribe(() => changed.notify())
  cleanups.push(() => {
    stop()
    view.dispose()
  })
  return {
    view,
    until: (ok: (s: TimelineSnapshot) => boolean, what: string) =>
      changed.until(() => ok(view.getSnapshot()), what),
  }
}

describe.each(engineKinds)('engine %s', (_, makeEngine) => {
  async function engineOn(dbName: string, factory: IDBFactory = indexedDB) {
    const made = await makeEngine({ dbName, indexedDB: factory, IDBKeyRange })
    cleanups.push(() => made.close())
    return made.engine
  }

  test('without IndexedDB every call rejects storage_unavailable, and the message names the in-memory mode', async () => {
    // Node has no global indexedDB: this is a page in a browser with storage disabled.
    const made = await makeEngine({ indexedDB: undefined, IDBKeyRange: undefined })
    cleanups.push(() => made.close())
    const seen = await failure(made.engine.listSessions())
    expect(seen).toMatchObject({ code: 'storage_unavailable', reason: 'open_failed' })
    expect(seen.message).toMatch(/storage: 'memory'/)
    expect(await failure(made.engine.createSession())).toMatchObject({ code: 'storage_unavailable' })
  })

  test('an IndexedDB that refuses to open (private mode, SecurityError) is storage_unavailable at open', async () => {
    const refusing = {
      open() {
        throw new DOMException('The operation is insecure.', 'SecurityError')
      },
    } as unknown as IDBFactory
    const engine = await engineOn(freshDbName('refused'), refusing)
    expect(await failure(engine.createSession())).toMatchObject({
      code: 'storage_unavailable',
      reason: 'open_failed',
    })
  })

  test('storage: memory keeps sessions without IndexedDB, and engines of one name in one realm share them', async () => {
    const dbName = freshDbName('memory')
    const a = await makeEngine({ dbName, storage: 'memory', indexedDB: undefined, IDBKeyRange: undefined })
    const b = await makeEngine({ dbName, storage: 'memory', indexedDB: undefined, IDBKeyRange: undefined })
    cleanups.push(
      () => a.close(),
      () => b.close(),
    )
    const { id } = await a.engine.createSession({ title: 'in memory' })
    await a.engine.admit(id, { id: 'in-1', text: 'hello' })
    await a.engine.promote(id, 'settled')
    expect((await b.engine.page(id)).messages.map((m) => m.id)).toEqual(['in-1'])
    await a.engine.flush()
    // Nothing reached the IndexedDB everything else in this process uses.
    expect(await databaseNames()).not.toContain(dbName)
  })

  test('a newer version opened in another tab: watchers hear upgraded, calls reject, the view says upgraded, the upgrade goes on', async () => {
    const dbName = freshDbName('upgrade')
    const engine = await engineOn(dbName)
    const { id } = await engine.createSession()
    await engine.admit(id, { id: 'kept', text: 'before the upgrade' })
    const feed = changeFeed()
    await engine.watch(id, feed.listener)
    const { until } = viewOf(engine, id)
    await until((s) => s.status === 'ready', 'the view to load')

    const newer = openDb(dbName, { indexedDB, IDBKeyRange }, NEXT_VERSIONS)
    cleanups.push(() => newer.close())
    await newer.open() // resolves only once our connection closed: not blocked
    expect(newer.verno).toBe(SCHEMA_VERSION + 1)
    expect(await newer.inputs.get('kept')).toMatchObject({ text: 'before the upgrade' })

    await feed.until((changes) => changes.some((c) => c.halted), 'the halted change')
    expect(feed.changes.at(-1)?.halted).toMatchObject({ reason: 'upgraded' })
    await until((s) => s.status === 'upgraded', 'the view to say upgraded')
    expect(await failure(engine.admit(id, { text: 'after' }))).toMatchObject({
      code: 'storage_unavailable',
      reason: 'upgraded',
    })
    expect(await failure(engine.listSessions())).toMatchObject({ reason: 'upgraded' })
    // Nothing was written after the loss.
    expect(await newer.inputs.count()).toBe(1)
  })

  test('opening a database a newer release already upgraded rejects upgraded instead of writing old shapes into it', async () => {
    const dbName = freshDbName('too-new')
    const newer = openDb(dbName, { indexedDB, IDBKeyRange }, NEXT_VERSIONS)
    await newer.open()
    newer.close()
    const engine = await engineOn(dbName)
    expect(await failure(engine.listSessions())).toMatchObject({
      code: 'storage_unavailable',
      reason: 'upgraded',
    })
  })

  test('an upgrade blocked by an older tab that never closes rejects blocked at once, and works once that tab closes', async () => {
    const dbName = freshDbName('blocked')
    const older = openDb(dbName, { indexedDB, IDBKeyRange }, SCHEMA_VERSIONS.slice(0, 1))
    await older.open()
    await older.sessions.add({
      id: 'old',
      title: 'from v1',
      createdAt: 1,
      updatedAt: 1,
      headSeq: 0,
      nextInputSeq: 1,
      source: 'native',
      rev: 1,
    })
    // An older release that ignores versionchange holds its connection open.
    older.on('versionchange', () => false)
    const engine = await engineOn(dbName)
    expect(await failure(engine.listSessions())).toMatchObject({
      code: 'storage_unavailable',
      reason: 'blocked',
    })
    older.close()
    // The upgrade went on once the older tab let go: the next call gets the upgraded database.
    const signal = createSignal()
    let sessions: string[] = []
    const poll = async () => {
      const answer = await engine.listSessions().catch(() => undefined)
      if (answer) sessions = answer.map((s) => s.id)
      signal.notify()
      if (!answer) setTimeout(poll, 10)
    }
    void poll()
    await signal.until(() => sessions.length > 0, 'the unblocked open')
    expect(sessions).toEqual(['old'])
  })

  test('a database deleted by another connection: watchers hear database_deleted, calls reject, the deletion completes', async () => {
    const dbName = freshDbName('deleted')
    const engine = await engineOn(dbName)
    const { id } = await engine.createSession()
    const feed = changeFeed()
    await engine.watch(id, feed.listener)
    const { until } = viewOf(engine, id)
    await until((s) => s.status === 'ready', 'the view to load')
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(dbName)
      request.onsuccess = () => resolve()
      request.onerror = () => reject(request.error)
      request.onblocked = () => reject(new Error('the engine blocked the deletion'))
    })
    await feed.until((changes) => changes.some((c) => c.halted), 'the halted change')
    expect(feed.changes.at(-1)?.halted).toMatchObject({ reason: 'database_deleted' })
    await until((s) => s.status === 'error', 'the view to report the loss')
    expect(await failure(engine.getSession(id))).toMatchObject({
      code: 'storage_unavailable',
      reason: 'database_deleted',
    })
    expect(await databaseNames()).not.toContain(dbName)
  })

  test('site data cleared under an open engine (forced close, database gone) is detected, and no empty database is made', async () => {
    const dbName = freshDbName('cleared')
    const recording = createRecordingFactory()
    const engine = await engineOn(dbName, recording.factory)
    const { id } = await engine.createSession()
    const feed = changeFeed()
    await engine.watch(id, feed.listener)
    // What clearing site data does: the browser closes the connection and removes the database.
    for (const connection of recording.connections) forceCloseDatabase(connection as never)
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(dbName)
      request.onsuccess = () => resolve()
      request.onerror = () => reject(request.error)
    })
    expect(await failure(engine.admit(id, { text: 'into the void' }))).toMatchObject({
      code: 'storage_unavailable',
      reason: 'database_deleted',
    })
    await feed.until((changes) => changes.some((c) => c.halted), 'the halted change')
    expect(await databaseNames()).not.toContain(dbName)
  })

  test('a forced close of a database that still exists is no loss: the next call reopens it', async () => {
    const dbName = freshDbName('reopen')
    const recording = createRecordingFactory()
    const engine = await engineOn(dbName, recording.factory)
    const { id } = await engine.createSession()
    for (const connection of recording.connections) forceCloseDatabase(connection as never)
    await engine.admit(id, { id: 'after', text: 'still here' })
    expect((await engine.pending(id)).map((r) => r.id)).toEqual(['after'])
  })
})

describe('durability', () => {
  async function recorded(options: { durability?: 'relaxed' | 'strict' } = {}) {
    const recording = createRecordingFactory()
    const engine = createEngine({
      dbName: freshDbName('durability'),
      indexedDB: recording.factory,
      IDBKeyRange,
      ...options,
    })
    cleanups.push(() => engine.close())
    const { id } = await engine.createSession()
    await engine.admit(id, { text: 'one' })
    await engine.promote(id, 'settled')
    return { engine, id, durabilities: recording.durabilities }
  }

  test('every write transaction asks for relaxed durability by default', async () => {
    const { durabilities } = await recorded()
    expect(durabilities.length).toBeGreaterThanOrEqual(3)
    expect(new Set(durabilities)).toEqual(new Set(['relaxed']))
  })

  test("durability: 'strict' makes every write transaction strict", async () => {
    const { durabilities } = await recorded({ durability: 'strict' })
    expect(new Set(durabilities)).toEqual(new Set(['strict']))
  })

  test('flush commits one strict transaction over every table after the relaxed writes, and writes nothing', async () => {
    const { engine, id, durabilities } = await recorded()
    const before = await engine.events(id)
    const count = durabilities.length
    await engine.flush()
    expect(durabilities.slice(count)).toEqual(['strict'])
    expect(await engine.events(id)).toEqual(before)
  })

  test('an unknown durability or storage is refused when the engine is made', () => {
    expect(() => createEngine({ durability: 'eventual' as never })).toThrow(/durability/)
    expect(() => createEngine({ storage: 'disk' as never })).toThrow(/storage/)
  })
})
