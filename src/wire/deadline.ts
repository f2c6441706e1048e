import { SessionlineError } from '../schema/errors'

/**
 * Settles like `promise`, or rejects with `timeout` after `ms` (0 or less: never). A call to a
 * worker that died never settles on its own, so every remote call goes through this.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  if (!(ms > 0) || !Number.isFinite(ms)) return promise
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new SessionlineError('timeout', `${what} did not answer within ${ms} ms`, { ms })),
      ms,
    )
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
