// The adapters' test page worker: one engine over this origin's IndexedDB; the page configures
// the scripted provider (seeded, no tools) on start.
import { exposeEngine } from 'sessionline/worker'

exposeEngine({ dbName: 'adapters' })
