/**
 * The page side of the wire: turns a Comlink endpoint (a Worker, a MessagePort) into an
 * `Engine`. Every call gets a deadline and can be failed at once when the worker goes away;
 * `watch` passes the listener as a Comlink proxy and turns the remote unsubscribe back into a
 * plain function that releases its proxy exactly once.
 *
 * @example
 *   const engine = wrapEngine(worker)
 *   worker.addEventListener('error', () => engine.fail(workerGone('the worker crashed')))
 *   await engine.handshake()
 */
import * as Comlink from 'comlink'
import type { ChangeListener, Engine, SessionChange, Unsubscribe } from '../engine/types'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { WatchOptions } from '../schema/requests'
import { registerErrorTransfer } from './errors'
import { registerGuardedProxies } from './guard'
import { ENGINE_METHODS, type ExposedEngine, type Handshake, type Hello, PROTOCOL_VERSION } from './protocol'

export interface RemoteEngineOptions {
  /** Deadline of every call in ms (default 60 000; 0: none). Imports of huge files may need more. */
  timeoutMs?: number
  /** Deadline of the handshake in ms (default 10 000): a fresh module worker can take 250 ms. */
  handshakeTimeoutMs?: number
}

export interface RemoteEngine extends Engine {
  /**
   * Checks the worker answers and speaks this protocol; rejects `timeout` or `unsupported_format`.
   * `hello` tells the worker how often this page checks (a shared worker lets go of a silent tab).
   */
  handshake(hello?: Hello): Promise<Handshake>
  /** Rejects every pending and later call with `error` (e.g. when the worker died). */
  fail(error: SessionlineError): void
  /** Releases the Comlink proxy; the engine on the other side stays open. */
  release(): void
}

export const workerGone = (message: string, details?: unknown): SessionlineError =>
  new SessionlineError('worker_gone', message, details)

type AnyCall = (...args: unknown[]) => Promise<unknown>

/**
 * Every call rejects with a `SessionlineError`. An argument the structured clone cannot copy (a
 * function inside an object, a Symbol, a DOM node) fails on this side before anything is sent:
 * that is bad input, and nothing reached the worker.
 */
function callError(method: string, error: unknown): SessionlineError {
  if (isSessionlineError(error)) return error
  const name = (error as { name?: unknown } | null)?.name
  const message = error instanceof Error ? error.message : String(error)
  if (name === 'DataCloneError') {
    return new SessionlineError(
      'invalid_input',
      `${method}: an argument cannot be sent to the worker (${message}); pass plain data`,
      undefined,
      { cause: error },
    )
  }
  return new SessionlineError('internal', `${method}: ${message}`, undefined, { cause: error })
}

const wrapCallback =
  (callback: unknown) =>
  (...args: unknown[]): unknown =>
    (callback as (...args: unknown[]) => unknown)(...args)

export function wrapEngine(endpoint: Comlink.Endpoint, options: RemoteEngineOptions = {}): RemoteEngine {
  registerErrorTransfer()
  registerGuardedProxies()
  const timeoutMs = options.timeoutMs ?? 60_000
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 10_000
  const remote = Comlink.wrap<ExposedEngine>(endpoint)
  const inFlight = new Set<(error: SessionlineError) => void>()
  let failure: SessionlineError | undefined
  let released = false

  function call<T>(method: string, run: () => Promise<T>, ms = timeoutMs): Promise<T> {
    if (failure) return Promise.reject(failure)
    if (released) return Promise.reject(workerGone(`${method}: the connection was released`))
    // A call to a dead worker never settles on its own: each call has a deadline, and `fail`
    // settles every call in flight at once (clearing its timer, so nothing keeps Node alive).
    return new Promise<T>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const settle = () => {
        clearTimeout(timer)
        inFlight.delete(abort)
      }
      const abort = (error: SessionlineError) => {
        settle()
        reject(error)
      }
      inFlight.add(abort)
      if (ms > 0 && Number.isFinite(ms)) {
        timer = setTimeout(
          () => abort(new SessionlineError('timeout', `${method} did not answer within ${ms} ms`, { ms })),
          ms,
        )
      }
      run().then(
        (value) => {
          settle()
          resolve(value)
        },
        (error: unknown) => {
          settle()
          reject(callError(method, error))
        },
      )
    })
  }

  async function watch(
    sessionId: string,
    listener: ChangeListener,
    options?: WatchOptions,
  ): Promise<Unsubscribe> {
    if (typeof listener !== 'function')
      throw new SessionlineError('invalid_input', 'watch needs a listener function')
    // The remote unsubscribe lands on the worker some time later, and pushes already on their
    // way still arrive: `done` makes unsubscribing final here at once.
    let done = false
    // The worker answers with `Comlink.proxy(unsubscribe)`, which arrives as a remote function.
    // A fresh function carries the proxy marker, never the caller's own.
    const answer = remote.watch(
      sessionId,
      Comlink.proxy((change: SessionChange) => {
        if (!done) listener(change)
      }),
      options,
    ) as unknown as Promise<Comlink.Remote<Unsubscribe>>
    const release = (remoteUnsubscribe: Comlink.Remote<Unsubscribe>) => {
      // The other side releases the listener's proxy; this side releases the unsubscribe's.
      void Promise.resolve(remoteUnsubscribe())
        .catch(() => undefined)
        .finally(() => remoteUnsubscribe[Comlink.releaseProxy]())
    }
    let remoteUnsubscribe: Comlink.Remote<Unsubscribe>
    try {
      remoteUnsubscribe = await call('watch', () => answer)
    } catch (error) {
      // Timed out (or failed) here, but the worker may still subscribe: when its answer comes
      // after all, the subscription nobody holds is ended there at once.
      done = true
      answer.then(
        (late) => {
          if (!failure) release(late)
        },
        () => undefined,
      )
      throw error
    }
    return () => {
      if (done) return
      done = true
      // A dead worker never answers; a released connection still has this proxy's own port.
      if (failure) return
      release(remoteUnsubscribe)
    }
  }

  const engine: Record<string, unknown> = { watch }
  for (const method of ENGINE_METHODS) {
    if (method === 'watch') continue
    const target = remote[method] as unknown as AnyCall
    engine[method] = (...args: unknown[]) =>
      // Callbacks (an import's progress listener) cross as proxies; the worker releases them after the call.
      call(method, () =>
        target(...args.map((arg) => (typeof arg === 'function' ? Comlink.proxy(wrapCallback(arg)) : arg))),
      )
  }
  engine.handshake = async (hello?: Hello): Promise<Handshake> => {
    const answer = await call('handshake', () => remote.handshake(hello), handshakeTimeoutMs)
    if (answer?.protocol !== PROTOCOL_VERSION) {
      throw new SessionlineError(
        'unsupported_format',
        `the worker speaks protocol ${String(answer?.protocol)}, this page ${PROTOCOL_VERSION}`,
      )
    }
    return answer
  }
  engine.fail = (error: SessionlineError) => {
    failure ??= error
    for (const abort of [...inFlight]) abort(error)
    inFlight.clear()
  }
  engine.release = () => {
    if (released) return
    released = true
    remote[Comlink.releaseProxy]()
  }
  return engine as unknown as RemoteEngine
}
