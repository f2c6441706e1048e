import { expect, test } from 'vitest'
import { SessionlineError } from '../../src/schema/errors'
import { toSessionlineError } from '../../src/store/db'

const named = (name: string, inner?: unknown) => Object.assign(new Error(`${name} happened`), { name, inner })

test('storage failures become typed errors, looking through wrapped causes', () => {
  expect(toSessionlineError(named('QuotaExceededError'), 'admit').code).toBe('quota_exceeded')
  expect(toSessionlineError(named('AbortError', named('QuotaExceededError')), 'append').code).toBe(
    'quota_exceeded',
  )
  expect(toSessionlineError(named('DatabaseClosedError'), 'page').code).toBe('storage_unavailable')
  expect(toSessionlineError(named('OpenFailedError', named('VersionError')), 'open').code).toBe(
    'storage_unavailable',
  )
  const other = toSessionlineError(new RangeError('bad'), 'promote')
  expect(other).toMatchObject({ code: 'internal', message: 'promote: bad' })
  expect(other.cause).toBeInstanceOf(RangeError)
})

test('our own errors pass through unchanged', () => {
  const error = new SessionlineError('conflict', 'taken')
  expect(toSessionlineError(error, 'admit')).toBe(error)
})
