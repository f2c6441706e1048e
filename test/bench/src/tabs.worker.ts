/**
 * The engine of the two-tab bench (13): started as a dedicated Worker or as a SharedWorker by
 * tabs-page.ts, on the database its name gives (a `~N` suffix is the generation
 * `sharedOrDedicated` may add).
 */
import { exposeEngine } from '../../../worker/index'

exposeEngine({ dbName: self.name.replace(/~\d+$/, '') })
