// The contract page's worker: one engine on the database the page names in the worker's `name`
// (a fresh worker after a death gets the same one), running turns with the scripted model.
import type { ProviderConfig } from '../../../../src/schema/provider'
import { exposeEngine } from '../../../../worker/index'

interface WorkerConfig {
  dbName: string
  provider: ProviderConfig
}

const config = JSON.parse(self.name) as WorkerConfig
exposeEngine({ dbName: config.dbName, provider: config.provider })
