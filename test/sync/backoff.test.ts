import fc from 'fast-check'
import { expect, test } from 'vitest'
import { DEFAULT_BACKOFF, retryAfterMs, retryDelay } from '../../src/sync/backoff'

test('Retry-After is read as seconds or as an HTTP date; anything else is no answer', () => {
  const now = Date.parse('Wed, 02 Dec 2026 18:00:00 GMT')
  expect(retryAfterMs('3', now)).toBe(3000)
  expect(retryAfterMs(' 0 ', now)).toBe(0)
  expect(retryAfterMs('Wed, 02 Dec 2026 18:00:42 GMT', now)).toBe(42_000)
  // A date already past asks for no wait at all.
  expect(retryAfterMs('Wed, 02 Dec 2026 17:00:00 GMT', now)).toBe(0)
  for (const bad of [null, undefined, '', 'soon', '-5', '1.5'])
    expect(retryAfterMs(bad, now), String(bad)).toBeUndefined()
})

test('the backoff grows, stays within its ceiling and keeps at least half of it; Retry-After wins up to its own bound', () => {
  fc.assert(
    fc.property(fc.nat(60), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
      const ms = retryDelay(attempt, { random: () => r })
      const ceiling = Math.min(DEFAULT_BACKOFF.maxMs, DEFAULT_BACKOFF.baseMs * 2 ** attempt)
      expect(ms).toBeGreaterThanOrEqual(Math.floor(ceiling / 2))
      expect(ms).toBeLessThanOrEqual(ceiling)
      if (attempt > 0)
        expect(retryDelay(attempt, { random: () => 0 })).toBeGreaterThanOrEqual(
          retryDelay(attempt - 1, { random: () => 0 }),
        )
    }),
  )
  expect(retryDelay(0, { random: () => 0.5, retryAfterMs: 3000 })).toBe(3000)
  expect(retryDelay(0, { random: () => 0.5, retryAfterMs: 3_600_000 })).toBe(DEFAULT_BACKOFF.maxRetryAfterMs)
})
