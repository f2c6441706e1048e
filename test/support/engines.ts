/**
 * Engines for tests, in-process and through real Comlink (a MessageChannel pair: `exposeEngine`
 * on one port, `wrapEngine` on the other), both on fake-indexeddb. Every test case runs on both:
 *
 * @example
 *   describe.each(engineKinds)('engine %s', (_, makeEngine) => {
 *     test('…', async () => {
 *       const { engine, close } = await makeEngine()
 *       try { … } finally { await close() }
 *     })
 *   })
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { createEngine, createEngineWithHost, type EngineOptions } from '../../src/engine/engine'
import type { Engine, RunnerHost } from '../../src/engine/types'
import { type RemoteEngine, wrapEngine } from '../../src/wire/remote-engine'
import { exposeEngine } from '../../worker/index'

let counter = 0
/** A database name no other test uses. */
export const freshDbName = (prefix = 'test'): string => `${prefix}-${process.pid}-${Date.now()}-${++counter}`

/** Synchronous-enough scheduler for live previews: flushes on the next macrotask. */
export const immediateSchedule = (flush: () => void) => {
  setTimeout(flush, 0)
}

export interface TestEngine {
  engine: Engine
  dbName: string
  /** Closes the engine (and the channel, for the Comlink kind). */
  close(): Promise<void>
}

export type EngineFactory = (options?: EngineOptions) => Promise<TestEngine>

const withDefaults = (options: EngineOptions = {}): EngineOptions & { dbName: string } => ({
  indexedDB,
  IDBKeyRange,
  schedule: immediateSchedule,
  ...options,
  dbName: options.dbName ?? freshDbName(),
})

export const inProcessEngine: EngineFactory = async (options) => {
  const resolved = withDefaults(options)
  const engine = createEngine(resolved)
  return { engine, dbName: resolved.dbName, close: () => engine.close() }
}

/** Serves `local` on one port of a MessageChannel and wraps the other, as a page and its worker do. */
async function overComlink(local: Engine, dbName: string): Promise<TestEngine & { engine: RemoteEngine }> {
  const { port1, port2 } = new MessageChannel()
  exposeEngine(local, port1)
  const engine = wrapEngine(port2)
  await engine.handshake()
  return {
    engine,
    dbName,
    async close() {
      try {
        await engine.close()
      } finally {
        engine.release()
        port1.close()
        port2.close()
      }
    },
  }
}

export const comlinkEngine: EngineFactory = async (options) => {
  const resolved = withDefaults(options)
  return overComlink(createEngine(resolved), resolved.dbName)
}

export const engineKinds: ReadonlyArray<readonly [string, EngineFactory]> = [
  ['in process', inProcessEngine],
  ['through Comlink', comlinkEngine],
]

/** An engine plus the in-process host its runner would use (for driving live previews). */
export interface HostedTestEngine extends TestEngine {
  host: RunnerHost
}

export type HostedEngineFactory = (options?: EngineOptions) => Promise<HostedTestEngine>

/** Same two transports; the host always stays in process, as the runner does in a worker. */
export const hostedEngineKinds: ReadonlyArray<readonly [string, HostedEngineFactory]> = [
  [
    'in process',
    async (options) => {
      const resolved = withDefaults(options)
      const { engine, host } = createEngineWithHost(resolved)
      return { engine, host, dbName: resolved.dbName, close: () => engine.close() }
    },
  ],
  [
    'through Comlink',
    async (options) => {
      const resolved = withDefaults(options)
      const { engine, host } = createEngineWithHost(resolved)
      return { ...(await overComlink(engine, resolved.dbName)), host }
    },
  ],
]
