/**
 * Node mode of the bench (`npm run bench -- --node`): every suite in-process on fake-indexeddb,
 * (6) over a MessageChannel with the real `exposeEngine` and `connect`. It proves the suite runs
 * end to end; fake-indexeddb says nothing about speed, so no figure of this mode means anything.
 *
 *   node --expose-gc --import tsx test/bench/src/node.ts <out.json> '{"preset":"node"}'
 */
import { writeFileSync } from 'node:fs'
import * as Comlink from 'comlink'
import Dexie from 'dexie'
import { IDBKeyRange, IDBObjectStore, indexedDB } from 'fake-indexeddb'
import { connect } from '../../../src/index'
import { exposeEngine } from '../../../worker/index'
import { resolveConfig } from './config'
import { type BenchEnv, DB, freshEngine, LONG_SESSION, openEngine } from './env'
import { runGrowth } from './growth'
import { runHistory, runResend, runSwitchBranch } from './history'
import { runPeers } from './peers'
import { channelEngine } from './peers-channel'
import { runPortability } from './portability'
import { runProviderAiSdk } from './provider-ai-sdk'
import { benchComlinkTail, rawTailService, runReads } from './reads'
import { runJumps, runSearch } from './search'
import { type HeapProbe, memoryComparisons, seedLongSession } from './seed'
import { runStreamPage } from './stream-page'
import { runStreamPageTools } from './stream-page-tools'
import { runAdmitUnderLoad } from './under-load'
import { runWrites } from './writes'

const [out, request] = process.argv.slice(2)
if (!out || !request) throw new Error('usage: node.ts <out.json> <config request JSON>')
const cfg = resolveConfig(JSON.parse(request))

const env: BenchEnv = {
  dexie: { indexedDB, IDBKeyRange },
  engine: { indexedDB, IDBKeyRange },
  log: (message) => console.error(`[bench node] ${message}`),
  objectStore: IDBObjectStore,
}

const gc = (globalThis as { gc?: () => void }).gc
const heap: HeapProbe | undefined = gc
  ? {
      async measure() {
        gc()
        await new Promise((resolve) => setTimeout(resolve, 0))
        gc()
        return process.memoryUsage().heapUsed
      },
    }
  : undefined

async function comlinkTail() {
  const sessionline = new MessageChannel()
  const raw = new MessageChannel()
  const engine = exposeEngine(openEngine(env, DB.longSl), sessionline.port1)
  const rawService = rawTailService(env)
  Comlink.expose({ tail: rawService.tail }, raw.port1)
  const client = connect(sessionline.port2)
  const rawTail = Comlink.wrap<{ tail: typeof rawService.tail }>(raw.port2)
  try {
    return await benchComlinkTail(
      {
        sessionline: (limit) => client.page(LONG_SESSION, { limit }),
        raw: (limit) => rawTail.tail(limit),
      },
      cfg,
    )
  } finally {
    await client.close()
    rawTail[Comlink.releaseProxy]()
    await engine.close()
    rawService.close()
    for (const port of [sessionline.port1, sessionline.port2, raw.port1, raw.port2]) port.close()
  }
}

const comparisons = [...(await runWrites(env, cfg))]
env.log('seeding the long session (raw, then sessionline)')
const seededRaw = await seedLongSession(env, 'raw', cfg, heap)
const seededSl = await seedLongSession(env, 'sessionline', cfg, heap)
comparisons.push(...(await runReads(env, cfg)))
env.log('(6) tail through Comlink (MessageChannel)')
comparisons.push(await comlinkTail())
comparisons.push(...memoryComparisons(seededSl, seededRaw))
env.log('(8) search')
comparisons.push(...(await runSearch(env, cfg)))
env.log('admit-under-load')
comparisons.push(...(await runAdmitUnderLoad(env, cfg)))
env.log('(13) attachments, export and import')
comparisons.push(...(await runPortability(env, cfg)))
env.log('(9) jumps (MessageChannel)')
{
  const channel = new MessageChannel()
  const engine = exposeEngine(openEngine(env, DB.longSl), channel.port1)
  const client = connect(channel.port2)
  try {
    comparisons.push(...(await runJumps(client, LONG_SESSION, cfg)))
  } finally {
    await client.close()
    await engine.close()
    channel.port1.close()
    channel.port2.close()
  }
}

env.log('(11) peers (MessageChannel)')
// liveQuery runs only where Dexie finds a global IndexedDB; Node has none but fake-indexeddb's.
Dexie.dependencies.indexedDB = indexedDB
Dexie.dependencies.IDBKeyRange = IDBKeyRange
comparisons.push(
  ...(await runPeers(
    {
      dexie: env.dexie,
      log: env.log,
      connectEngine: channelEngine(env),
    },
    cfg,
  )),
)
env.log('(10) stream-page (MessageChannel)')
{
  const channel = new MessageChannel()
  const engine = exposeEngine(await freshEngine(env, DB.streamPage), channel.port1)
  const client = connect(channel.port2)
  try {
    comparisons.push(...(await runStreamPage(client, cfg, env.log)))
  } finally {
    await client.close()
    await engine.close()
    channel.port1.close()
    channel.port2.close()
  }
}
env.log('stream-page-tools (MessageChannel)')
{
  const channel = new MessageChannel()
  const engine = exposeEngine(await freshEngine(env, DB.streamPage), channel.port1)
  const client = connect(channel.port2)
  try {
    comparisons.push(...(await runStreamPageTools(client, cfg, env.log)))
  } finally {
    await client.close()
    await engine.close()
    channel.port1.close()
    channel.port2.close()
  }
}
env.log('(12) growth with session length')
comparisons.push(...(await runProviderAiSdk(env, cfg)))
env.log('context-growth')
comparisons.push(...(await runHistory(env, cfg)))
env.log('switch-branch')
comparisons.push(...(await runSwitchBranch(env, cfg)))
env.log('resend, regenerate')
comparisons.push(...(await runResend(env, cfg)))
comparisons.push(...(await runGrowth(env, cfg)))

writeFileSync(
  out,
  JSON.stringify({ config: cfg, comparisons, seeding: { raw: seededRaw, sessionline: seededSl } }),
)
// Engines and ports are closed; exit explicitly so no stray handle keeps the run alive.
process.exit(0)
