/**
 * The default worker: an engine with default options (database `sessionline`). Started as a
 * dedicated Worker it serves its page; started as a SharedWorker it serves one engine to every tab
 * that connects (docs/decisions/0035).
 *
 * @example
 *   const worker = new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' })
 *   const shared = new SharedWorker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' })
 */
import { createSessionSync } from '../src/sync'
import { exposeEngine } from './index'

// Sync is plugged in but idle until a page calls `sync(sessionId, {url})` (docs/decisions/0036).
exposeEngine({ sync: createSessionSync() })
