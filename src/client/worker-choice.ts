/**
 * One engine for all tabs where the browser can, a worker per tab where it cannot: a factory for
 * `connect` that starts a SharedWorker when `SharedWorker` exists and a dedicated Worker
 * otherwise (docs/decisions/0035, README "One engine for all tabs").
 *
 * Both starters are the app's own lines, so its bundler sees `new SharedWorker(new URL(…,
 * import.meta.url))` and `new Worker(…)` and bundles the worker module (Vite finds workers by
 * that shape only). The shared starter gets the name to use: a page cannot terminate a shared
 * worker that stopped answering, so after a fresh one did not answer (or answered while its reads
 * hung) the factory moves to a new name, which starts a new shared worker beside the stuck one.
 * Where `localStorage` works, the name in use is kept there, so tabs opened later join it.
 *
 * @example
 *   const client = connect(
 *     sharedOrDedicated({
 *       shared: (name) => new SharedWorker(new URL('./engine.worker.ts', import.meta.url), { type: 'module', name }),
 *       dedicated: () => new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module' }),
 *     }),
 *   )
 */
import type { WorkerFactory } from './worker-target'

export interface SharedOrDedicatedOptions {
  /** Starts the shared worker under `name`: pass it on as the SharedWorker's `name` option. */
  shared(name: string): SharedWorker
  /** Starts a dedicated worker (where `SharedWorker` is missing, or with `prefer: 'dedicated'`). */
  dedicated(): Worker
  /** The shared worker's name (default `'sessionline'`): tabs share a worker of one script and one name. */
  name?: string
  /** `'shared'` (default) where the browser has SharedWorker; `'dedicated'`: a worker per tab anyway. */
  prefer?: 'shared' | 'dedicated'
}

/** Whether this page would get a shared worker from `sharedOrDedicated` by default. */
export const canShareWorker = (): boolean => typeof globalThis.SharedWorker === 'function'

/** The key under which tabs of an origin agree on the current name of a shared worker. */
const generationKey = (name: string) => `sessionline:shared-worker:${name}`

function storedGeneration(name: string): number {
  try {
    const value = Number(globalThis.localStorage?.getItem(generationKey(name)) ?? 0)
    return Number.isSafeInteger(value) && value > 0 ? value : 0
  } catch {
    return 0 // storage disabled or sandboxed: this tab keeps its own count
  }
}

function storeGeneration(name: string, generation: number): void {
  try {
    globalThis.localStorage?.setItem(generationKey(name), String(generation))
  } catch {
    // as above
  }
}

/** The name of a shared worker's `generation`: the base name first, then `name~1`, `name~2`… */
export const sharedWorkerName = (name: string, generation: number): string =>
  generation === 0 ? name : `${name}~${generation}`

/** A factory for `connect`: a SharedWorker where the browser has one, else a dedicated Worker. */
export function sharedOrDedicated(options: SharedOrDedicatedOptions): WorkerFactory {
  if (options.prefer === 'dedicated' || !canShareWorker()) return () => options.dedicated()
  const name = options.name ?? 'sessionline'
  let generation = 0
  return (start) => {
    const stuck = start.after === 'unanswered' || start.after === 'wedged'
    // Join the newest worker another tab moved to; move on from a stuck one (once, whichever
    // tab notices first: the others find the new number stored and take it as theirs).
    generation = Math.max(storedGeneration(name), stuck ? generation + 1 : generation)
    if (stuck) storeGeneration(name, generation)
    return options.shared(sharedWorkerName(name, generation))
  }
}
