import { SessionlineError } from '../../schema/errors'

/** The error providers and tools throw when their signal aborts. */
export function abortError(what = 'operation'): SessionlineError {
  return new SessionlineError('aborted', `The ${what} was aborted`)
}

export function throwIfAborted(signal: AbortSignal, what?: string): void {
  if (signal.aborted) throw abortError(what)
}

/**
 * Waits `ms`, or rejects with an `aborted` error as soon as `signal` aborts. The timer is
 * cleared either way, so an aborted wait never keeps a process alive.
 */
export function abortableDelay(ms: number, signal: AbortSignal, what?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(what))
      return
    }
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortError(what))
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** `promise`, or an `aborted` rejection as soon as `signal` aborts (the loser's rejection is swallowed). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(abortError('step'))
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError('step'))
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
