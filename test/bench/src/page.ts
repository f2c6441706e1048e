/**
 * The benchmark page: starts the worker and offers `window.bench` to the runner. Everything but
 * (6) runs inside the worker; (6) is timed here, on the far side of Comlink.
 */
import * as Comlink from 'comlink'
import { connect } from '../../../src/index'
import { BenchConfig, resolveConfig } from './config'
import { LONG_SESSION } from './env'
import { runMainThread } from './main-thread'
import { runPeers } from './peers'
import type { EngineLink } from './peers-sessionline'
import { PEER_DB } from './peers-workload'
import { benchComlinkTail, type RawTailService } from './reads'
import { runJumps } from './search'
import { memoryComparisons, type SeedResult } from './seed'
import { runStreamPage } from './stream-page'
import { runStreamPageTools } from './stream-page-tools'
import type { SyncRequest } from './sync-measure'
import type { BenchWorker } from './worker'

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })
const remote = Comlink.wrap<BenchWorker>(worker)

async function comlink(config: unknown) {
  const cfg = BenchConfig.parse(config)
  const sessionline = new MessageChannel()
  const raw = new MessageChannel()
  await remote.serve(
    Comlink.transfer({ sessionline: sessionline.port2, raw: raw.port2 }, [sessionline.port2, raw.port2]),
  )
  const client = connect(sessionline.port1)
  const rawTail = Comlink.wrap<Pick<RawTailService, 'tail'>>(raw.port1)
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
    await remote.stopServing()
  }
}

/** (9) on the page: jumps and landed hits through a `connect()` client of the worker's engine. */
async function jumps(config: unknown) {
  const cfg = BenchConfig.parse(config)
  const sessionline = new MessageChannel()
  const raw = new MessageChannel()
  await remote.serve(
    Comlink.transfer({ sessionline: sessionline.port2, raw: raw.port2 }, [sessionline.port2, raw.port2]),
  )
  const client = connect(sessionline.port1)
  try {
    return await runJumps(client, LONG_SESSION, cfg)
  } finally {
    await client.close()
    raw.port1.close()
    await remote.stopServing()
  }
}

/** (11) on the page, where an app's UI lives: sessionline through `connect`, the peers in the page. */
function peers(config: unknown) {
  const cfg = BenchConfig.parse(config)
  const connectEngine = async (fresh: boolean): Promise<EngineLink> => {
    const channel = new MessageChannel()
    // A fresh database is emptied first (untimed setup).
    if (fresh) await remote.servePeer(Comlink.transfer(channel.port2, [channel.port2]), fresh)
    // The page reads a view's first screen itself (docs/decisions/0038), unless the run measures
    // the worker's path alone (`--config '{"peerPageRead":false}'`).
    const client = connect(channel.port1, cfg.peerPageRead ? { dbName: PEER_DB.sessionline } : {})
    // As an app's `connect(() => new Worker(url))` starts its worker: after the client exists,
    // and without waiting for it; the page's calls wait on the port meanwhile.
    const serving = fresh
      ? Promise.resolve()
      : remote.servePeer(Comlink.transfer(channel.port2, [channel.port2]), fresh)
    return {
      client,
      async close() {
        await serving
        await client.close()
        await remote.stopPeer()
        channel.port1.close()
      },
    }
  }
  const log = (message: string) => console.info(`[bench page] ${message}`)
  return runPeers({ dexie: { indexedDB, IDBKeyRange }, connectEngine, log }, cfg)
}

/** (10) on the page: a streamed answer into views of a 10,000-row window and of the tail. */
async function streamPage(config: unknown) {
  const cfg = BenchConfig.parse(config)
  const channel = new MessageChannel()
  await remote.serveStream(Comlink.transfer(channel.port2, [channel.port2]))
  const client = connect(channel.port1)
  try {
    return await runStreamPage(client, cfg, (message) => console.info(`[bench page] ${message}`))
  } finally {
    await client.close()
    await remote.stopServing()
  }
}

/** stream-page-tools on the page: a step of tool calls through fromLanguageModel into a view of a 10,000-row window. */
async function streamPageTools(config: unknown) {
  const cfg = BenchConfig.parse(config)
  const channel = new MessageChannel()
  await remote.serveStream(Comlink.transfer(channel.port2, [channel.port2]))
  const client = connect(channel.port1)
  try {
    return await runStreamPageTools(client, cfg, (message) => console.info(`[bench page] ${message}`))
  } finally {
    await client.close()
    await remote.stopServing()
  }
}

/** (15b–d) the main thread through a cold open, a search as you type and an import, and liveQuery's. */
function mainThread(config: unknown) {
  const link = async (start: (port: MessagePort) => Promise<void>) => {
    const channel = new MessageChannel()
    await start(channel.port2)
    const client = connect(channel.port1)
    return {
      client,
      async close() {
        await client.close()
        await remote.stopServing()
        channel.port1.close()
      },
    }
  }
  return runMainThread(
    {
      long: () =>
        link(async (port) => {
          const raw = new MessageChannel()
          await remote.serve(Comlink.transfer({ sessionline: port, raw: raw.port2 }, [port, raw.port2]))
          raw.port1.close()
        }),
      fresh: () => link((port) => remote.serveStream(Comlink.transfer(port, [port]))),
      corpus: () => link((port) => remote.serveCorpus(Comlink.transfer(port, [port]), config)),
      log: (message) => console.info(`[bench page] ${message}`),
    },
    BenchConfig.parse(config),
  )
}

const bench = {
  config: resolveConfig,
  memoryComparisons: (sessionline: SeedResult, raw: SeedResult) => memoryComparisons(sessionline, raw),
  describe: () => remote.describe(),
  writes: (config: unknown) => remote.writes(config),
  reads: (config: unknown) => remote.reads(config),
  comlink,
  search: (config: unknown) => remote.search(config),
  admitUnderLoad: (config: unknown) => remote.admitUnderLoad(config),
  growth: (config: unknown) => remote.growth(config),
  providerAiSdk: (config: unknown) => remote.providerAiSdk(config),
  history: (config: unknown) => remote.history(config),
  switchBranch: (config: unknown) => remote.switchBranch(config),
  resend: (config: unknown) => remote.resend(config),
  portability: (config: unknown) => remote.portability(config),
  sync: (request: SyncRequest) => remote.sync(request),
  jumps,
  peers,
  streamPage,
  streamPageTools,
  mainThread,
}

declare global {
  interface Window {
    bench?: typeof bench
  }
}
window.bench = bench
document.getElementById('status')!.textContent = 'ready'
