/**
 * Follows commits to sessions whose index could not take their rows (not loaded, being synced,
 * behind): each such session is synced in the background a `delay` after the first of them, so
 * every session this engine writes stays indexed whether or not anyone searched it. Syncs run one
 * after the other on one chain; a failed one is reported and retried by the next search or commit.
 */
import type { Clock, ReportFailure } from '../background'

/** When to sync, and how. */
export interface FollowerOptions {
  /** How long after the first followed commit the followed sessions are synced. */
  delay: number
  clock: Clock
  /** Brings the session's index up to date (a session that is gone resolves). */
  sync: (sessionId: string) => Promise<unknown>
  report: ReportFailure
}

/** Follows commits; `close` ends it. */
export interface Follower {
  follow(sessionId: string): void
  /** Starts nothing more and waits for the sync running now. */
  close(): Promise<void>
}

/** A follower with nothing followed yet. */
export function createFollower({ delay, clock, sync, report }: FollowerOptions): Follower {
  const followed = new Set<string>()
  let cancelTimer: (() => void) | undefined
  let running: Promise<void> = Promise.resolve()
  let stopping = false

  async function syncFollowed(): Promise<void> {
    const ids = [...followed]
    followed.clear()
    for (const id of ids) {
      if (stopping) return
      await sync(id).catch((error: unknown) => report(error, 'search index: following commits', id))
    }
  }

  return {
    follow(sessionId) {
      if (stopping) return
      followed.add(sessionId)
      if (cancelTimer !== undefined) return
      cancelTimer = clock.after(delay, () => {
        cancelTimer = undefined
        running = running.then(syncFollowed)
      })
    },
    async close() {
      cancelTimer?.()
      cancelTimer = undefined
      followed.clear()
      stopping = true
      await running
    },
  }
}
