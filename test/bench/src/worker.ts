/**
 * The benchmark worker: a module Web Worker, where sessionline's engine lives in an app. The
 * page drives it over Comlink; (6) gets two more ports, one serving the engine through
 * `exposeEngine` and one serving raw Dexie's tail read.
 */
import * as Comlink from 'comlink'
import Dexie from 'dexie'
import type { Engine } from '../../../src/engine/types'
import { exposeEngine } from '../../../worker/index'
import { BenchConfig } from './config'
import { type BenchEnv, DB, freshEngine, openEngine } from './env'
import { runGrowth } from './growth'
import { runHistory, runResend, runSwitchBranch } from './history'
import { servePeerEngine, stopPeerEngine } from './peers-engine'
import { runPortability } from './portability'
import { runProviderAiSdk } from './provider-ai-sdk'
import { type RawTailService, rawTailService, runReads } from './reads'
import { runSearch, SEARCH_DB, seedCorpus } from './search'
import { measureSync, type SyncRequest } from './sync-measure'
import { runAdmitUnderLoad } from './under-load'
import { runWrites } from './writes'

const env: BenchEnv = {
  // The browser's own IndexedDB, named explicitly for both sides.
  dexie: { indexedDB, IDBKeyRange },
  engine: { indexedDB, IDBKeyRange },
  log: (message) => console.info(`[bench worker] ${message}`),
  objectStore: IDBObjectStore,
}

let served: { engine: Engine; raw?: RawTailService } | undefined
/** The `searchRows` of the corpus (8) left in `SEARCH_DB` in this run, if any: (15d) searches it. */
let corpusRows: number | undefined

const api = {
  describe: () => ({
    userAgent: navigator.userAgent,
    hardwareConcurrency: navigator.hardwareConcurrency,
    dexie: Dexie.semVer,
    crossOriginIsolated: self.crossOriginIsolated,
  }),
  writes: (config: unknown) => runWrites(env, BenchConfig.parse(config)),
  reads: (config: unknown) => runReads(env, BenchConfig.parse(config)),
  async search(config: unknown) {
    const cfg = BenchConfig.parse(config)
    const comparisons = await runSearch(env, cfg)
    corpusRows = cfg.searchRows
    return comparisons
  },
  admitUnderLoad: (config: unknown) => runAdmitUnderLoad(env, BenchConfig.parse(config)),
  growth: (config: unknown) => runGrowth(env, BenchConfig.parse(config)),
  providerAiSdk: (config: unknown) => runProviderAiSdk(env, BenchConfig.parse(config)),
  history: (config: unknown) => runHistory(env, BenchConfig.parse(config)),
  switchBranch: (config: unknown) => runSwitchBranch(env, BenchConfig.parse(config)),
  resend: (config: unknown) => runResend(env, BenchConfig.parse(config)),
  portability: (config: unknown) => runPortability(env, BenchConfig.parse(config)),
  /** `sync-push`, `sync-converge`: engines on Chromium's IndexedDB, both sides' fetch from here. */
  sync: (request: SyncRequest) =>
    measureSync({ ...env, where: "Chromium's IndexedDB (bench worker)" }, request),
  serve(ports: { sessionline: MessagePort; raw: MessagePort }) {
    const engine = exposeEngine(openEngine(env, DB.longSl), ports.sessionline)
    const raw = rawTailService(env)
    Comlink.expose({ tail: raw.tail }, ports.raw)
    served = { engine, raw }
  },
  /** (11) a new engine on the peers' database, served on `port` for the page's `connect`. */
  servePeer: (port: MessagePort, fresh: boolean) => servePeerEngine(env, port, fresh),
  stopPeer: () => stopPeerEngine(),
  /** (10) an engine on a fresh database of its own, for the page's stream-page views. */
  async serveStream(port: MessagePort) {
    const engine = exposeEngine(await freshEngine(env, DB.streamPage), port)
    served = { engine }
  },
  /** (15d) an engine on the search corpus, served on `port`; seeded first unless (8) left it. */
  async serveCorpus(port: MessagePort, config: unknown) {
    const cfg = BenchConfig.parse(config)
    if (corpusRows !== cfg.searchRows) {
      env.log(`(15d) seeding a search corpus of ${cfg.searchRows} rows`)
      const seeded = await seedCorpus(env, cfg, SEARCH_DB)
      await seeded.engine.close()
      corpusRows = cfg.searchRows
    }
    const engine = exposeEngine(openEngine(env, SEARCH_DB), port)
    served = { engine }
  },
  async stopServing() {
    await served?.engine.close()
    served?.raw?.close()
    served = undefined
  },
}

export type BenchWorker = typeof api
Comlink.expose(api)
