/**
 * The default worker: an engine with default options (database `sessionline`).
 *
 * @example
 *   const worker = new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' })
 */
import { exposeEngine } from './index'

exposeEngine()
