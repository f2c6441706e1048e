/**
 * One page's wire to an engine: the engine's methods exposed over Comlink on one endpoint (a
 * dedicated worker's scope, or one port of a shared worker), with the watch listeners that page
 * handed over tracked so they can all be let go at once.
 */
import * as Comlink from 'comlink'
import type { ChangeListener, Engine } from '../src/engine/types'
import { SessionlineError } from '../src/schema/errors'
import type { WatchOptions } from '../src/schema/requests'
import { guardEndpoint } from '../src/wire/guard'
import { ENGINE_METHODS, type ExposedEngine, Hello, PROTOCOL_VERSION } from '../src/wire/protocol'

type RemoteListener = ChangeListener & { [Comlink.releaseProxy]?: () => void }
type RemoteCallback = ((...args: unknown[]) => unknown) & { [Comlink.releaseProxy]?: () => void }

/** Calls through a remote proxy return promises; a rejected one must not become unhandled here. */
const forgiving =
  (callback: RemoteCallback) =>
  (...args: unknown[]): void => {
    Promise.resolve(callback(...args)).catch(() => undefined)
  }

export interface ServeOptions {
  /** What the page's `close` does: a dedicated worker closes its engine; a shared one only lets go of that page. */
  onClose(): Promise<void>
  /** Told what the page said in its handshake (how often it checks the worker answers). */
  onHello?(hello: Hello): void
}

export interface Served {
  /** Ends every watch this page made and releases its listeners (each exactly once). */
  releaseAll(): void
}

/** Serves `engine` on `endpoint` for one page. */
export function serveEngine(engine: Engine, endpoint: Comlink.Endpoint, options: ServeOptions): Served {
  // Watches the page made: each ends its subscription and releases the listener exactly once
  // (a second release throws).
  const stops = new Set<() => void>()

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

  exposed.watch = async (sessionId: string, listener: RemoteListener, watchOptions?: unknown) => {
    // The engine checks its listener, but it only ever sees the wrapper below.
    if (typeof listener !== 'function')
      throw new SessionlineError('invalid_input', 'watch needs a listener function')
    let unsubscribe: (() => void) | undefined
    let stopped = false
    const stop = () => {
      if (stopped) return
      stopped = true
      stops.delete(stop)
      unsubscribe?.()
      listener[Comlink.releaseProxy]?.()
    }
    stops.add(stop)
    try {
      unsubscribe = await engine.watch(
        sessionId,
        (change) => {
          // A listener that throws on the page is the page's bug; it stays subscribed, and the
          // rejection must not surface here as an unhandled one.
          Promise.resolve(listener(change)).catch(() => undefined)
        },
        // Validated by the engine (a wrong shape is `invalid_input`).
        watchOptions as WatchOptions | undefined,
      )
    } catch (error) {
      stop()
      throw error
    }
    // Let go of between the two awaits (the page went away): the subscription ends at once.
    if (stopped) unsubscribe()
    return Comlink.proxy(stop)
  }

  const releaseAll = () => {
    for (const stop of [...stops]) stop()
  }

  exposed.close = async () => {
    releaseAll()
    await options.onClose()
  }

  exposed.handshake = async (hello?: unknown) => {
    // A page from before the hello sends nothing; one that sends a wrong shape is told so.
    if (hello !== undefined) {
      const parsed = Hello.safeParse(hello)
      if (!parsed.success) throw new SessionlineError('invalid_input', `handshake: ${parsed.error.message}`)
      options.onHello?.(parsed.data)
    }
    return { protocol: PROTOCOL_VERSION }
  }

  // Calls of these methods only: no property of `exposed` (or of its prototypes) is read or set.
  const methods = new Set(Object.keys(exposed))
  Comlink.expose(
    exposed as unknown as ExposedEngine,
    guardEndpoint(endpoint, (path) => path.length === 1 && methods.has(path[0]!)),
  )
  return { releaseAll }
}
