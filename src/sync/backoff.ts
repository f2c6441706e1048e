/**
 * How long the sync waits before it asks the server again: exponential with jitter, bounded,
 * and the server's `Retry-After` (seconds or an HTTP date) when it gave one. Pure; the clock and
 * the randomness are passed in, so tests wait no real time.
 *
 * @example
 *   const ms = retryDelay({ attempt: 3, retryAfter: response.headers.get('retry-after'), now: Date.now() })
 */

/** Bounds of the exponential wait. */
export interface BackoffPolicy {
  /** The first wait (default 250 ms). */
  baseMs: number
  /** No backoff wait is longer (default 30 s), whatever the attempt. */
  maxMs: number
  /** A server's `Retry-After` is honoured up to this (default 5 minutes). */
  maxRetryAfterMs: number
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 250, maxMs: 30_000, maxRetryAfterMs: 300_000 }

/**
 * Milliseconds a `Retry-After` header asks for at time `now`, or undefined when there is none or
 * it is neither a number of seconds nor a date.
 */
export function retryAfterMs(header: string | null | undefined, now: number): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined
  const text = header.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // An HTTP date names its day or month; a bare number that is not whole seconds is no date.
  if (!/[a-z]/i.test(text)) return undefined
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** The wait before retry number `attempt` (0-based): the server's ask, else base·2^attempt with jitter. */
export function retryDelay(
  attempt: number,
  options: { retryAfterMs?: number; random: () => number; policy?: BackoffPolicy },
): number {
  const { baseMs, maxMs, maxRetryAfterMs } = options.policy ?? DEFAULT_BACKOFF
  if (options.retryAfterMs !== undefined) return Math.min(maxRetryAfterMs, options.retryAfterMs)
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30))
  // Half fixed, half random: devices that failed together do not come back together.
  return Math.round(ceiling / 2 + (ceiling / 2) * options.random())
}
