/**
 * The sync verbs cross the worker boundary like every engine call: through Comlink, a synced
 * session's status comes back, and an engine made without sync answers a typed `invalid_state`.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import { isSessionlineError } from '../../src/schema/errors'
import { createSessionSync } from '../../src/sync'
import { wrapEngine } from '../../src/wire/remote-engine'
import { exposeEngine } from '../../worker/index'
import { freshDbName } from '../support/engines'
import { startServer } from './support'

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server.stop()
})

async function remote(withSync: boolean) {
  const local = createEngine({
    dbName: freshDbName('sync-wire'),
    indexedDB,
    IDBKeyRange,
    ...(withSync ? { sync: createSessionSync() } : {}),
  })
  const { port1, port2 } = new MessageChannel()
  exposeEngine(local, port1)
  const engine = wrapEngine(port2)
  await engine.handshake()
  return {
    engine,
    async close() {
      await local.close()
      port1.close()
      port2.close()
    },
  }
}

test('sync, syncStatus and unsync through Comlink', async () => {
  const { engine, close } = await remote(true)
  try {
    const { id } = await engine.createSession({ title: 'over the wire' })
    const status = await engine.sync(id, { url: server.url })
    expect(['live', 'pulling', 'pushing']).toContain(status.state)
    const until = Date.now() + 10_000
    while ((await engine.syncStatus(id))?.state !== 'live' && Date.now() < until)
      await new Promise((r) => setTimeout(r, 20))
    expect(await engine.syncStatus(id)).toEqual({ state: 'live', pending: 0 })
    // Again with the same server: the running sync answers as it stands, nothing restarts.
    expect(await engine.sync(id, { url: server.url })).toEqual({ state: 'live', pending: 0 })
    await engine.unsync(id)
    expect(await engine.syncStatus(id)).toBeUndefined()
    for (const url of ['not a url', 'ftp://127.0.0.1/', 'javascript:alert(1)']) {
      const bad = await engine.sync(id, { url }).catch((e: unknown) => e)
      expect(isSessionlineError(bad) && bad.code, url).toBe('invalid_input')
    }
  } finally {
    await close()
  }
})

test('an imported session does not sync: invalid_state, nothing started', async () => {
  const { engine, close } = await remote(true)
  try {
    const text = readFileSync(
      fileURLToPath(new URL('../import/fixtures/pi/tree-v3-branch-compaction.jsonl', import.meta.url)),
      'utf8',
    )
    const imported = await engine.importTranscript({ text, name: 'tree.jsonl' })
    const error = await engine.sync(imported.id, { url: server.url }).catch((e: unknown) => e)
    expect(isSessionlineError(error) && error.code).toBe('invalid_state')
    expect(await engine.syncStatus(imported.id)).toBeUndefined()
  } finally {
    await close()
  }
})

test('an engine made without sync answers invalid_state, naming how to plug it in', async () => {
  const { engine, close } = await remote(false)
  try {
    const { id } = await engine.createSession({})
    const error = await engine.sync(id, { url: server.url }).catch((e: unknown) => e)
    expect(isSessionlineError(error) && error.code).toBe('invalid_state')
    expect((error as Error).message).toContain('createSessionSync')
    expect(await engine.syncStatus(id)).toBeUndefined()
  } finally {
    await close()
  }
})
