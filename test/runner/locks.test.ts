import { describe, expect, test } from 'vitest'
import { acquireLock, createInProcessLocks, runnerLockName } from '../../src/engine/locks'

describe('session locks (in-process stand-in for navigator.locks)', () => {
  test('one holder at a time; ifAvailable answers null while held', async () => {
    const locks = createInProcessLocks()
    const first = await acquireLock('a', { wait: false }, locks)
    expect(first).not.toBeNull()
    expect(await acquireLock('a', { wait: false }, locks)).toBeNull()
    expect(await acquireLock('b', { wait: false }, locks)).not.toBeNull()
    await first!.release()
    await first!.release() // a second release does nothing
    const again = await acquireLock('a', { wait: false }, locks)
    expect(again).not.toBeNull()
    await again!.release()
  })

  test('waiters get the lock in request order', async () => {
    const locks = createInProcessLocks()
    const holder = (await acquireLock('a', { wait: true }, locks))!
    const order: number[] = []
    const waiters = [1, 2, 3].map((n) =>
      acquireLock('a', { wait: true }, locks).then((lock) => {
        order.push(n)
        return lock!.release()
      }),
    )
    await holder.release()
    await Promise.all(waiters)
    expect(order).toEqual([1, 2, 3])
  })

  test('an aborted wait answers null and leaves the queue intact', async () => {
    const locks = createInProcessLocks()
    const holder = (await acquireLock('a', { wait: true }, locks))!
    const controller = new AbortController()
    const cancelled = acquireLock('a', { wait: true, signal: controller.signal }, locks)
    const next = acquireLock('a', { wait: true }, locks)
    controller.abort()
    expect(await cancelled).toBeNull()
    await holder.release()
    const lock = await next
    expect(lock).not.toBeNull()
    await lock!.release()
    expect(await acquireLock('a', { wait: false }, locks)).not.toBeNull()
  })

  test('lock names keep databases apart', () => {
    expect(runnerLockName('db1', 's')).not.toBe(runnerLockName('db2', 's'))
  })
})
