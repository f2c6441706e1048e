/**
 * The worker side of sessionline: exposes an engine over Comlink.
 *
 * @example
 *   // my.worker.ts
 *   import { exposeEngine } from 'sessionline/worker'
 *   exposeEngine({ dbName: 'my-app' })
 */
import * as Comlink from 'comlink'
import { createEngine, type EngineOptions } from '../src/engine/engine'
import type { ChangeListener, Engine } from '../src/engine/types'
import { SessionlineError } from '../src/schema/errors'
import type { WatchOptions } from '../src/schema/requests'
import { registerErrorTransfer } from '../src/wire/errors'
import { guardEndpoint, registerGuardedProxies } from '../src/wire/guard'
import { ENGINE_METHODS, type ExposedEngine, PROTOCOL_VERSION } from '../src/wire/protocol'

export type { LanguageModelLike, LanguageModelOptions } from '../src/engine/providers/language-model'
export { fromLanguageModel } from '../src/engine/providers/language-model'
export type { EngineOptions }

const isEngine = (value: Engine | EngineOptions): value is Engine =>
  typeof (value as Partial<Engine>).admit === 'function' &&
  typeof (value as Partial<Engine>).watch === 'function'

type RemoteListener = ChangeListener & { [Comlink.releaseProxy]?: () => void }
type RemoteCallback = ((...args: unknown[]) => unknown) & { [Comlink.releaseProxy]?: () => void }

/** Calls through a remote proxy return promises; a rejected one must not become unhandled here. */
const forgiving =
  (callback: RemoteCallback) =>
  (...args: unknown[]): void => {
    Promise.resolve(callback(...args)).catch(() => undefined)
  }

/**
 * Serves `engineOrOptions` (an engine, or the options to create one) on `endpoint`: the worker's
 * global scope by default, or any MessagePort. Returns the engine it serves.
 */
export function exposeEngine(
  engineOrOptions: Engine | EngineOptions = {},
  endpoint: Comlink.Endpoint = self as unknown as Comlink.Endpoint,
): Engine {
  registerErrorTransfer()
  registerGuardedProxies()
  const engine = isEngine(engineOrOptions) ? engineOrOptions : createEngine(engineOrOptions)
  // Listener proxies the page handed us; each is released exactly once (a second release throws).
  const releases = new Set<() => void>()

  const exposed: Record<string, unknown> = {}
  for (const method of ENGINE_METHODS) {
    const target = engine[method] as (...args: unknown[]) => Promise<unknown>
    exposed[method] = async (...args: unknown[]) => {
      // A callback argument (an import's progress listener) arrives as a proxy that lives for
      // this call only: its remote failures are the page's business, and it is released after.
      const callbacks = args.filter((arg): arg is RemoteCallback => typeof arg === 'function')
      const local = args.map((arg) => (typeof arg === 'function' ? forgiving(arg as RemoteCallback) : arg))
      try {
        return await target.apply(engine, local)
      } finally {
        for (const callback of callbacks) callback[Comlink.releaseProxy]?.()
      }
    }
  }

  exposed.watch = async (sessionId: string, listener: RemoteListener, options?: unknown) => {
    // The engine checks its listener, but it only ever sees the wrapper below.
    if (typeof listener !== 'function')
      throw new SessionlineError('invalid_input', 'watch needs a listener function')
    let released = false
    const release = () => {
      if (released) return
      released = true
      releases.delete(release)
      listener[Comlink.releaseProxy]?.()
    }
    releases.add(release)
    let unsubscribe: (() => void) | undefined
    const stop = () => {
      unsubscribe?.()
      release()
    }
    try {
      unsubscribe = await engine.watch(
        sessionId,
        (change) => {
          // A listener that throws on the page is the page's bug; it stays subscribed, and the
          // rejection must not surface here as an unhandled one.
          Promise.resolve(listener(change)).catch(() => undefined)
        },
        // Validated by the engine (a wrong shape is `invalid_input`).
        options as WatchOptions | undefined,
      )
    } catch (error) {
      release()
      throw error
    }
    return Comlink.proxy(stop)
  }

  exposed.close = async () => {
    for (const release of [...releases]) release()
    await engine.close()
  }

  exposed.handshake = async () => ({ protocol: PROTOCOL_VERSION })

  // Calls of these methods only: no property of `exposed` (or of its prototypes) is read or set.
  const methods = new Set(Object.keys(exposed))
  Comlink.expose(
    exposed as unknown as ExposedEngine,
    guardEndpoint(endpoint, (path) => path.length === 1 && methods.has(path[0]!)),
  )
  return engine
}
