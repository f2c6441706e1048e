/**
 * Awaiting pushed changes instead of sleeping: a test waits for the push it expects, and proves
 * that something did NOT arrive by awaiting a later push on the same feed (one watcher's pushes
 * arrive in commit order, through Comlink too, since they share the listener's port).
 *
 * @example
 *   const feed = changeFeed()
 *   await engine.watch(id, feed.listener)
 *   await engine.admit(id, { text: 'hi' })
 *   await feed.until((changes) => changes.length === 1)
 */
import type { SessionChange } from '../../src/engine/types'

/** How long a wait may take before it fails the test: a bound for the failure path only. */
const BOUND_MS = 5_000

/** Wakes waiters whenever `notify()` is called; `until` re-checks its condition at each wake. */
export function createSignal() {
  const waiters = new Set<() => void>()
  return {
    notify(): void {
      for (const wake of [...waiters]) wake()
    },
    /** Resolves once `ok()` holds (checked now and at each notify); rejects naming `what` if it never does. */
    until(ok: () => boolean, what = 'a condition'): Promise<void> {
      if (ok()) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const done = () => {
          waiters.delete(wake)
          clearTimeout(timer)
        }
        const wake = () => {
          if (!ok()) return
          done()
          resolve()
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`gave up waiting for ${what}`))
        }, BOUND_MS)
        waiters.add(wake)
      })
    },
  }
}

/** Records every change a watcher receives. */
export function changeFeed() {
  const changes: SessionChange[] = []
  const signal = createSignal()
  return {
    changes,
    listener: (change: SessionChange) => {
      changes.push(change)
      signal.notify()
    },
    until: (ok: (changes: SessionChange[]) => boolean, what = 'a change') =>
      signal.until(() => ok(changes), what),
  }
}
