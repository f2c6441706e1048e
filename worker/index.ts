/**
 * The worker side of sessionline: exposes an engine over Comlink.
 *
 * In a dedicated worker (`new Worker(url)`) one page talks to the worker's scope. In a shared
 * worker (`new SharedWorker(url)`) every tab of the origin connects a port of its own, and the one
 * engine is served on each: one engine, one cache and one runner for all tabs
 * (docs/decisions/0035). The same module serves both: `exposeEngine` tells them apart by the scope.
 *
 * @example
 *   // my.worker.ts: started as a Worker or as a SharedWorker
 *   import { exposeEngine } from 'sessionline/worker'
 *   exposeEngine({ dbName: 'my-app' })
 */
import type * as Comlink from 'comlink'
import { createEngine, type EngineOptions } from '../src/engine/engine'
import type { Engine } from '../src/engine/types'
import { registerErrorTransfer } from '../src/wire/errors'
import { registerGuardedProxies } from '../src/wire/guard'
import { serveEngine } from './serve'
import { isPortSource, type PortSource, servePorts } from './shared'

export type { LanguageModelLike, LanguageModelOptions } from '../src/engine/providers/language-model'
export { fromLanguageModel } from '../src/engine/providers/language-model'
export type { EngineOptions, PortSource }

const isEngine = (value: Engine | EngineOptions): value is Engine =>
  typeof (value as Partial<Engine>).admit === 'function' &&
  typeof (value as Partial<Engine>).watch === 'function'

/**
 * Serves `engineOrOptions` (an engine, or the options to create one) on `endpoint`: the worker's
 * global scope by default, or any MessagePort. Given a shared worker's scope (or anything else
 * that announces `connect` events with a port, as that scope does), it serves the one engine on
 * every port that connects. Returns the engine it serves.
 */
export function exposeEngine(
  engineOrOptions: Engine | EngineOptions = {},
  endpoint: Comlink.Endpoint | PortSource = self as unknown as Comlink.Endpoint | PortSource,
): Engine {
  registerErrorTransfer()
  registerGuardedProxies()
  const engine = isEngine(engineOrOptions) ? engineOrOptions : createEngine(engineOrOptions)
  if (isPortSource(endpoint)) servePorts(engine, endpoint)
  else serveEngine(engine, endpoint, { onClose: () => engine.close() })
  return engine
}
