// The playground's worker: one engine over this origin's IndexedDB, running turns with the
// deterministic scripted model until the page configures another provider.
import { exposeEngine } from '../worker/index'

exposeEngine({ provider: { kind: 'scripted' } })
