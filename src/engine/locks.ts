/**
 * One runner per session: a runner drives a session only while it holds that session's lock.
 * In browsers (and workers) the lock is a Web Lock, so tabs and workers of one origin exclude
 * each other and a lock dies with its holder — which is how a turn left open by a closed tab
 * is recognised as orphaned. Where `navigator.locks` is missing (Node), an in-process lock
 * manager with the same semantics stands in; it excludes engines of one process only.
 *
 * @example
 *   const lock = await acquireLock('sessionline:runner:db:s1', { wait: false })
 *   if (lock) try { … } finally { await lock.release() }
 */

/** The part of the Web Locks API (`navigator.locks`) the runner uses. */
export interface LockRequester {
  request<T>(
    name: string,
    options: { ifAvailable?: boolean; signal?: AbortSignal },
    callback: (lock: { name: string } | null) => T | Promise<T>,
  ): Promise<T>
}

export interface HeldLock {
  /** Gives the lock up; resolves once the lock manager let it go. Calling it again does nothing more. */
  release(): Promise<void>
}

export interface AcquireOptions {
  /** Wait until the lock is free (true) or answer `null` at once when it is held (false). */
  wait: boolean
  /** Gives up a waiting request; the answer is then `null`. */
  signal?: AbortSignal
}

/** Same-process stand-in for `navigator.locks`: exclusive, FIFO, `ifAvailable` and `signal`. */
export function createInProcessLocks(): LockRequester {
  const held = new Set<string>()
  const waiting = new Map<string, Array<() => void>>()

  function grantNext(name: string): void {
    const queue = waiting.get(name)
    const next = queue?.shift()
    if (queue?.length === 0) waiting.delete(name)
    if (next) next()
    else held.delete(name)
  }

  return {
    request(name, options, callback) {
      const run = () => {
        held.add(name)
        return Promise.resolve()
          .then(() => callback({ name }))
          .finally(() => grantNext(name))
      }
      if (!held.has(name)) return run()
      if (options.ifAvailable) return Promise.resolve().then(() => callback(null))
      return new Promise((resolve, reject) => {
        const { signal } = options
        const grant = () => {
          signal?.removeEventListener('abort', onAbort)
          run().then(resolve, reject)
        }
        const onAbort = () => {
          const queue = waiting.get(name) ?? []
          const at = queue.indexOf(grant)
          if (at >= 0) queue.splice(at, 1)
          reject(signal?.reason ?? new Error('The lock request was aborted'))
        }
        if (signal?.aborted) return onAbort()
        signal?.addEventListener('abort', onAbort, { once: true })
        waiting.set(name, [...(waiting.get(name) ?? []), grant])
      })
    },
  }
}

const inProcessLocks = createInProcessLocks()

/** `navigator.locks` where it exists, else the process-wide stand-in. */
function defaultLocks(): LockRequester {
  const locks = (globalThis as { navigator?: { locks?: LockRequester } }).navigator?.locks
  return locks && typeof locks.request === 'function' ? locks : inProcessLocks
}

/**
 * Takes lock `name` and holds it until `release()` (not for the length of a callback, which is
 * how Web Locks work natively). Answers `null` when the lock is held and `wait` is false, or
 * when `signal` aborts the wait.
 */
export function acquireLock(
  name: string,
  options: AcquireOptions,
  locks: LockRequester = defaultLocks(),
): Promise<HeldLock | null> {
  return new Promise((resolve, reject) => {
    let letGo!: () => void
    const released = new Promise<void>((done) => {
      letGo = done
    })
    const requestOptions = options.wait
      ? options.signal
        ? { signal: options.signal }
        : {}
      : { ifAvailable: true }
    const request = locks.request(name, requestOptions, (lock) => {
      if (!lock || options.signal?.aborted) {
        resolve(null)
        return undefined
      }
      resolve({
        release() {
          letGo()
          return settled
        },
      })
      return released
    })
    const settled = request.then(
      () => {},
      (error: unknown) => {
        if (options.signal?.aborted) resolve(null)
        else reject(error)
      },
    )
  })
}

/** The lock name of a session's runner; `scope` keeps databases with equal session ids apart. */
export const runnerLockName = (scope: string, sessionId: string) => `sessionline:runner:${scope}:${sessionId}`
