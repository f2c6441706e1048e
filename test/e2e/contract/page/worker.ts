// The contract page's worker: one engine on the database the page names in the worker's `name`
// (a fresh worker after a death gets the same one), running turns with the scripted model. Started
// as a dedicated Worker or as a SharedWorker (the name may then end in `~N`, the generation
// `sharedOrDedicated` moved to); `exposeEngine` serves either.
//
// As a shared worker it can be made stuck for the suite: told so on a BroadcastChannel, it drops
// every message a page sends from then on while it keeps running, as a worker stuck in a loop or
// on storage would look to its pages (which cannot terminate it).
import type { ProviderConfig } from '../../../../src/schema/provider'
import { exposeEngine } from '../../../../worker/index'

interface WorkerConfig {
  dbName: string
  provider: ProviderConfig
}

const name = self.name.replace(/~\d+$/, '')
const config = JSON.parse(name) as WorkerConfig
const shared = typeof (self as { postMessage?: unknown }).postMessage !== 'function'

if (shared) {
  let stuck = false
  new BroadcastChannel('contract-stuck').addEventListener('message', (event: MessageEvent) => {
    if (event.data === self.name) stuck = true
  })
  // Registered before exposeEngine's: this listener sees each port first, and while stuck stops
  // a page's message before the engine's listeners hear it.
  self.addEventListener('connect', (event) => {
    const port = (event as MessageEvent).ports[0]
    port?.addEventListener('message', (message) => {
      if (stuck) message.stopImmediatePropagation()
    })
  })
}

exposeEngine({ dbName: config.dbName, provider: config.provider })
