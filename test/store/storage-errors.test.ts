/**
 * How a storage failure is named, whichever wrapper it arrives in: Dexie puts the browser's
 * QuotaExceededError inside an AbortError (`inner`), a bulk write lists it among its
 * `failures`, and a platform may chain it as `cause`. Each is `quota_exceeded`.
 */
import Dexie from 'dexie'
import { expect, test } from 'vitest'
import { toSessionlineError } from '../../src/store/db'

const quota = () => new DOMException('The quota has been exceeded.', 'QuotaExceededError')

test('a quota failure is quota_exceeded whether bare, inside an abort, in a bulk write or as a cause', () => {
  const wrapped = [
    quota(),
    new Dexie.AbortError('Transaction aborted', quota()),
    new Dexie.BulkError('1 of 3 operations failed', [quota()]),
    new Dexie.AbortError('Transaction aborted', new Dexie.BulkError('bulkAdd failed', [quota()])),
    new Error('write failed', { cause: quota() }),
  ]
  for (const error of wrapped)
    expect(toSessionlineError(error, 'admit').code, String(error)).toBe('quota_exceeded')
})

test('a closed or refused database is storage_unavailable; an unknown failure stays internal', () => {
  expect(toSessionlineError(new Dexie.DatabaseClosedError(), 'page').code).toBe('storage_unavailable')
  expect(toSessionlineError(new DOMException('insecure', 'SecurityError'), 'page').code).toBe(
    'storage_unavailable',
  )
  expect(toSessionlineError(new TypeError('boom'), 'page').code).toBe('internal')
})
