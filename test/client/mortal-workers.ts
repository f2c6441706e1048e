/**
 * Workers that can die the way a browser's do, for `connect(factory)` tests in Node: each one is
 * a real engine on fake-indexeddb served by `exposeEngine` on a MessageChannel, on one shared
 * database. `kill()` makes the current worker silent in both directions with no event (as
 * `worker.terminate()` does), and `killOn` arms a death at one exact moment of one call:
 * before the call reaches the worker, or after it ran there but before its answer reaches the page.
 */
import type { Endpoint } from 'comlink'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { exposeEngine } from '../../worker/index'
import { freshDbName, immediateSchedule } from '../support/engines'

interface WireMessage {
  id?: string
  type?: string
  path?: string[]
}

export interface MortalWorker extends Endpoint {
  engine: Engine
  alive: boolean
  /** Calls that reached this worker, by method name. */
  calls: Map<string, number>
  terminate(): void
}

export interface Fleet {
  dbName: string
  /** Starts a worker (what `connect` is given). */
  factory: () => MortalWorker
  /** Every worker started so far, the current one last. */
  workers: MortalWorker[]
  current(): MortalWorker
  /** Silences the current worker at once. */
  kill(): void
  /** The next call of `method`: kill before it reaches the worker, or after it ran but before the page hears. */
  killOn(method: string, when: 'before-call' | 'before-answer'): void
  /** The next call of `method` is swallowed while the worker keeps answering everything else (wedged storage). */
  hangOn(method: string): void
  /** While true, fresh workers never answer anything (a worker that fails to start). */
  stillborn: boolean
  close(): Promise<void>
}

export function createFleet(dbName = freshDbName('fleet')): Fleet {
  const workers: MortalWorker[] = []
  let armed: { method: string; when: 'before-call' | 'before-answer' | 'hang' } | undefined
  const fleet: Fleet = {
    dbName,
    workers,
    stillborn: false,
    factory() {
      const engine = createEngine({
        indexedDB,
        IDBKeyRange,
        schedule: immediateSchedule,
        dbName,
        broadcast: false,
      })
      const { port1, port2 } = new MessageChannel()
      exposeEngine(engine, port1)
      const listeners = new Set<EventListenerOrEventListenerObject>()
      /** Ids of calls whose answer must not reach the page. */
      const doomed = new Set<string>()
      let terminated = false
      const worker: MortalWorker = {
        engine,
        alive: !fleet.stillborn,
        calls: new Map(),
        postMessage(message: WireMessage, transfer?: Transferable[]) {
          if (!worker.alive) return
          const method = message.type === 'APPLY' ? message.path?.join('.') : undefined
          if (method) worker.calls.set(method, (worker.calls.get(method) ?? 0) + 1)
          if (armed && method === armed.method) {
            const { when } = armed
            armed = undefined
            if (when === 'hang') return
            if (when === 'before-call') {
              worker.terminate()
              return
            }
            if (message.id) doomed.add(message.id)
          }
          port2.postMessage(message, transfer ?? [])
        },
        // A terminated worker fires nothing: only messages are ever delivered.
        addEventListener(type: string, listener: EventListenerOrEventListenerObject) {
          if (type === 'message') listeners.add(listener)
        },
        removeEventListener(_type: string, listener: EventListenerOrEventListenerObject) {
          listeners.delete(listener)
        },
        terminate() {
          if (terminated) return
          terminated = true
          worker.alive = false
          port1.close()
          port2.close()
          void engine.close()
        },
      }
      port2.addEventListener('message', (event: MessageEvent) => {
        const answer = event.data as WireMessage
        if (answer?.id && doomed.has(answer.id)) {
          worker.terminate() // it ran in the worker; the page never hears
          return
        }
        if (!worker.alive) return
        for (const listener of listeners) {
          if (typeof listener === 'function') listener(event)
          else listener.handleEvent(event)
        }
      })
      port2.start()
      workers.push(worker)
      return worker
    },
    current() {
      const last = workers.at(-1)
      if (!last) throw new Error('no worker started yet')
      return last
    },
    kill() {
      fleet.current().terminate()
    },
    killOn(method, when) {
      armed = { method, when }
    },
    hangOn(method) {
      armed = { method, when: 'hang' }
    },
    async close() {
      for (const worker of workers) worker.terminate()
      await Promise.all(workers.map((worker) => worker.engine.close().catch(() => undefined)))
    },
  }
  return fleet
}

/** An engine of its own on the fleet's database (another tab, or the test reading the truth). */
export function witness(fleet: Fleet): Engine {
  return createEngine({
    indexedDB,
    IDBKeyRange,
    schedule: immediateSchedule,
    dbName: fleet.dbName,
    broadcast: false,
  })
}
