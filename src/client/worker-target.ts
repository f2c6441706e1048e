/**
 * What `connect` talks to: a dedicated Worker, a SharedWorker (through its port), a MessagePort or
 * any Comlink endpoint; where each says it failed; and how the page lets go of each. A page can
 * terminate a dedicated worker, but not a shared one: it can only close its own port
 * (docs/decisions/0035).
 */
import type { Endpoint } from 'comlink'

/** A Worker, a SharedWorker and a MessagePort are all targets; named so the signature reads as intended. */
export type ConnectTarget = Worker | SharedWorker | MessagePort | Endpoint

/** What a factory is told when `connect` asks it for a worker. */
export interface WorkerStart {
  /** Workers this client started before this one (0: the first). */
  restarts: number
  /**
   * Why the previous worker was given up: it failed or stopped answering (`gone`), a fresh one
   * never answered at all (`unanswered`), or it answered its heartbeat while a small read hung
   * (`wedged`). Undefined for the first worker. A factory of shared workers moves to a fresh
   * one after `unanswered` or `wedged`: the same name would reach the same stuck worker.
   */
  after?: 'gone' | 'unanswered' | 'wedged'
}

/** Starts a worker that runs `exposeEngine`; called again for a fresh one when a worker dies. */
export type WorkerFactory = (start: WorkerStart) => ConnectTarget

export type FailureSource = Pick<EventTarget, 'addEventListener' | 'removeEventListener'>

/** A target as `connect` uses it. */
export interface Wire {
  endpoint: Endpoint
  /** Where a failure is announced: a worker's `error`, a port's `close` (where browsers fire it). */
  failureSources: FailureSource[]
  /** Stops using the target: terminates a dedicated worker; closes a shared worker's port. */
  end(): void
}

const isSharedWorker = (target: ConnectTarget): target is SharedWorker =>
  typeof (target as Partial<SharedWorker>).port === 'object' &&
  typeof (target as Partial<Endpoint>).postMessage !== 'function'

export function wireOf(target: ConnectTarget): Wire {
  if (isSharedWorker(target)) {
    const port = target.port
    port.start()
    return {
      endpoint: port,
      // A script that fails to load says so on the SharedWorker; its port may say it closed.
      failureSources: [target, port],
      end: () => port.close(),
    }
  }
  const worker = target as Partial<Pick<Worker, 'terminate'>>
  return {
    endpoint: target as Endpoint,
    failureSources: [target as FailureSource],
    end() {
      if (typeof worker.terminate === 'function') worker.terminate()
    },
  }
}
