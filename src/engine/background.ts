/**
 * What the engine's background work runs on and reports to. Work no call awaits (keeping a search
 * index current, writing it, catching a cached session up with another tab's commits) takes its
 * timers from a `Clock`, so tests drive it with a manual one, and tells its failures to one
 * `BackgroundErrorListener`, so none is dropped: the engine passes its `onError` here and to the
 * runner alike.
 */
import type { SessionlineError } from '../schema/errors'
import { toSessionlineError } from '../store/db'

/** Time and timers for background work. */
export interface Clock {
  /** Milliseconds on a monotonic clock (for delays and durations, not dates). */
  now(): number
  /**
   * Runs `run` once after `ms`; the answer cancels it if it has not run yet. A `weak` timer does
   * not on its own keep a Node process alive (an idle cache's).
   */
  after(ms: number, run: () => void, options?: { weak?: boolean }): () => void
}

/** `performance.now` and the global timers, looked up at each call (so fake timers apply). */
export const systemClock: Clock = {
  now: () => performance.now(),
  after(ms, run, options) {
    const timer = setTimeout(run, ms)
    if (options?.weak) (timer as { unref?: () => void }).unref?.()
    return () => clearTimeout(timer)
  },
}

/**
 * Told of a failure of background work, with the session it concerned (`undefined` for work over
 * several). Nothing it is told of was acknowledged to anyone: the work is retried later or its
 * result is rebuilt from the log.
 */
export type BackgroundErrorListener = (error: SessionlineError, sessionId: string | undefined) => void

/** The runner's default too: a warning on the console. */
export const warnOnConsole: BackgroundErrorListener = (error, sessionId) => {
  console.warn(`sessionline${sessionId === undefined ? '' : ` (session ${sessionId})`}: ${error.message}`)
}

/** A reporter that names the failed `operation` and hands a `SessionlineError` to `listener`. */
export type ReportFailure = (error: unknown, operation: string, sessionId?: string) => void

/** Reports to `listener` (default: the console); a listener that throws is not let stop the work. */
export function reportingTo(listener: BackgroundErrorListener = warnOnConsole): ReportFailure {
  return (error, operation, sessionId) => {
    const failure = toSessionlineError(error, operation)
    try {
      listener(failure, sessionId)
    } catch {
      // A listener that throws must not stop the work that reported (the next report still comes).
    }
  }
}
