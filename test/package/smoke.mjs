// Consumes the BUILT package the way an app would: `dist/index.js` on the page side and
// `dist/worker.js` on the worker side, joined by a MessageChannel, on fake-indexeddb.
// Run after `npm run build`; exits non-zero on any failure.
import assert from 'node:assert/strict'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { connect, createEngine, isSessionlineError } from '../../dist/index.js'
import { exposeEngine } from '../../dist/worker.js'

const { port1, port2 } = new MessageChannel()
const engine = exposeEngine(
  { dbName: 'smoke', indexedDB, IDBKeyRange, provider: { kind: 'scripted', wordDelayMs: 0, toolRate: 0 } },
  port1,
)
const client = connect(port2)

const session = await client.createSession({ title: 'smoke' })
const view = client.open(session.id)
const settled = new Promise((resolve) => {
  const stop = view.subscribe(() => {
    const { rows } = view.getSnapshot()
    const done = rows.some(
      (r) => r.kind === 'message' && r.message.role === 'assistant' && r.message.status === 'complete',
    )
    if (done) {
      stop()
      resolve(view.getSnapshot())
    }
  })
})
const receipt = await view.admit('hello from the built package')
assert.equal(receipt.status, 'pending')
const snapshot = await Promise.race([
  settled,
  new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 10 s')), 10_000)),
])
assert.equal(snapshot.rows[0].key, receipt.id, 'the promoted row keeps the input id')
assert.ok(snapshot.outline.length === 1, 'one turn in the outline')

await client.admit('missing', { text: 'x' }).then(
  () => assert.fail('admit to an unknown session must fail'),
  (error) => assert.ok(isSessionlineError(error) && error.code === 'not_found', `got ${error}`),
)

view.dispose()
await client.close()
await engine.close()
port1.close()
port2.close()

// The in-memory mode loads its IndexedDB from the package's own dependency on first use.
const memory = createEngine({ dbName: 'smoke-memory', storage: 'memory' })
const kept = await memory.createSession({ title: 'in memory' })
assert.equal((await memory.getSession(kept.id))?.title, 'in memory')
await memory.close()

// Sync from its own entry: plugged in, a session syncs; with no server there it is offline.
const { createSessionSync } = await import('../../dist/sync.js')
const synced = createEngine({ dbName: 'smoke-sync', indexedDB, IDBKeyRange, sync: createSessionSync() })
const shared = await synced.createSession({ title: 'synced' })
assert.equal(await synced.syncStatus(shared.id), undefined)
const status = await synced.sync(shared.id, { url: 'http://127.0.0.1:9' })
assert.equal(status.state, 'offline', `got ${JSON.stringify(status)}`)
await synced.close()
console.log('smoke: 3 passed, 0 failed')
