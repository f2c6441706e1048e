/**
 * Shared workers as a browser runs them, for `connect` tests in Node: `new SharedWorker(url,
 * {name})` reaches the one running instance of that name (starting it on first use), and each
 * constructor call connects a port of its own to it, announced to the instance's scope as a
 * `connect` event, which the real `exposeEngine` serves. Every instance is a real engine on
 * fake-indexeddb, all on one database.
 *
 * `wedge(name)` makes an instance answer nothing from then on while it keeps running (a worker
 * stuck in a loop or on storage): a page cannot terminate it, and a new SharedWorker of that name
 * still reaches it. `silence(port)` makes one page's port fall silent both ways (a frozen tab).
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { createEngine } from '../../src/engine/engine'
import type { Engine, Unsubscribe } from '../../src/engine/types'
import type { ProviderConfig } from '../../src/schema/provider'
import { exposeEngine, type PortSource } from '../../worker/index'
import { freshDbName, immediateSchedule } from '../support/engines'

export interface Instance {
  name: string
  engine: Engine
  /** Subscriptions held on the engine right now (pages' watches the worker has not let go of). */
  watching(): number
  wedged: boolean
  /** Pages that connected, in order. */
  ports: PagePort[]
}

/** The page's end of one connection, as `SharedWorker.port` gives it. */
export interface PagePort {
  postMessage(message: unknown, transfer?: Transferable[]): void
  addEventListener(type: string, listener: EventListenerOrEventListenerObject): void
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject): void
  start(): void
  close(): void
  /** While true, nothing passes either way (the page is frozen). */
  silent: boolean
  /** Messages the page sent that reached the worker. */
  delivered: number
}

/** Counts the subscriptions an engine holds, so a test can see a page's watches end. */
function counting(engine: Engine): Engine & { watching(): number } {
  let active = 0
  return {
    ...engine,
    watching: () => active,
    async watch(sessionId, listener, options) {
      const stop: Unsubscribe = await engine.watch(sessionId, listener, options)
      active++
      let stopped = false
      return () => {
        if (!stopped) active--
        stopped = true
        stop()
      }
    },
  }
}

export function createSharedWorkers(options: { dbName?: string; provider?: ProviderConfig } = {}) {
  const dbName = options.dbName ?? freshDbName('shared')
  const instances = new Map<string, Instance>()
  const closers: Array<() => void> = []

  function instance(name: string): Instance {
    const running = instances.get(name)
    if (running) return running
    const engine = counting(
      createEngine({
        indexedDB,
        IDBKeyRange,
        schedule: immediateSchedule,
        dbName,
        broadcast: false, // tabs of one shared engine hear each other through it alone
        provider: options.provider,
      }),
    )
    const scope = new EventTarget()
    exposeEngine(engine, scope as unknown as PortSource)
    const started: Instance & { scope: EventTarget } = {
      name,
      engine,
      watching: engine.watching,
      wedged: false,
      ports: [],
      scope,
    }
    instances.set(name, started)
    return started
  }

  function connectPort(running: Instance & { scope?: EventTarget }): PagePort {
    const { port1, port2 } = new MessageChannel()
    const listeners = new Set<EventListenerOrEventListenerObject>()
    const passes = () => !page.silent && !running.wedged
    const page: PagePort = {
      silent: false,
      delivered: 0,
      postMessage(message, transfer) {
        if (!passes()) return
        page.delivered++
        port2.postMessage(message, transfer ?? [])
      },
      addEventListener(type, listener) {
        if (type === 'message') listeners.add(listener)
      },
      removeEventListener(_type, listener) {
        listeners.delete(listener)
      },
      start: () => undefined,
      close: () => port2.close(),
    }
    port2.addEventListener('message', (event: MessageEvent) => {
      if (!passes()) return
      for (const listener of listeners) {
        if (typeof listener === 'function') listener(event)
        else listener.handleEvent(event)
      }
    })
    port2.start()
    closers.push(() => {
      port1.close()
      port2.close()
    })
    const connect = new Event('connect') as Event & { ports: MessagePort[] }
    Object.defineProperty(connect, 'ports', { value: [port1] })
    running.scope!.dispatchEvent(connect)
    running.ports.push(page)
    return page
  }

  /** What a page gets from `new SharedWorker(url, {name})`. */
  class FakeSharedWorker extends EventTarget {
    readonly port: PagePort
    constructor(_url: string | URL, workerOptions?: { name?: string; type?: string }) {
      super()
      this.port = connectPort(instance(workerOptions?.name ?? ''))
    }
  }

  return {
    dbName,
    SharedWorker: FakeSharedWorker as unknown as typeof SharedWorker,
    instances,
    /** The instance of `name`, started if it is not running. */
    instance,
    wedge(name: string) {
      instance(name).wedged = true
    },
    async close() {
      for (const close of closers) close()
      await Promise.all([...instances.values()].map((i) => i.engine.close().catch(() => undefined)))
    },
  }
}

export type SharedWorkers = ReturnType<typeof createSharedWorkers>
