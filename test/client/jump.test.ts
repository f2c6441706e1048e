import { describe, expect, test } from 'vitest'
import { createJump, type OlderPager } from '../../src/client/jump'
import { SessionlineError } from '../../src/schema/errors'

/**
 * A window over rows with seqs 1..total, tail loaded; `loadThrough(seq)` is scripted per call and,
 * like the engine's, loads down to `seq` in one read filled to a 200-row page boundary.
 */
function scriptedPager(total: number, tail: number) {
  let base = total - tail + 1
  const calls: number[] = []
  const pager: OlderPager & { calls: number[]; stuck: boolean; failAt?: number } = {
    calls,
    stuck: false,
    baseSeq: () => base,
    hasOlder: () => base > 1,
    async loadThrough(seq) {
      calls.push(seq)
      await Promise.resolve()
      if (pager.failAt === calls.length) throw new SessionlineError('storage_unavailable', 'disk gone')
      if (!pager.stuck) base = Math.max(1, base - Math.ceil((base - seq) / 200) * 200)
    },
  }
  return pager
}

function harness(pager: OlderPager) {
  const busy: boolean[] = []
  const errors: unknown[] = []
  const jump = createJump({ pager, onBusy: (on) => busy.push(on), onError: (e) => errors.push(e) })
  return { jump, busy, errors }
}

describe('loadThrough (the jump loop)', () => {
  test('loads the whole range in one loadThrough, not a round trip per page', async () => {
    const pager = scriptedPager(2000, 50)
    const { jump, busy } = harness(pager)
    await jump(1000)
    expect(pager.baseSeq()).toBeLessThanOrEqual(1000)
    expect(pager.calls).toEqual([1000])
    expect(busy).toEqual([true, false])
  })

  test('stops when nothing older is left, even if the seq is below the first row', async () => {
    const pager = scriptedPager(300, 50)
    const { jump } = harness(pager)
    await jump(0)
    expect(pager.baseSeq()).toBe(1)
    expect(pager.hasOlder()).toBe(false)
    expect(pager.calls).toEqual([0])
  })

  test('is a no-op when the window already covers the seq', async () => {
    const pager = scriptedPager(2000, 50)
    const { jump, busy } = harness(pager)
    await jump(1990)
    expect(pager.calls).toEqual([])
    expect(busy).toEqual([])
  })

  test('a call while a jump runs lowers the shared target and returns the same promise', async () => {
    const pager = scriptedPager(5000, 50)
    const { jump, busy } = harness(pager)
    const first = jump(4500)
    const second = jump(1200)
    const third = jump(3000)
    expect(second).toBe(first)
    expect(third).toBe(first)
    await first
    expect(pager.calls).toEqual([1200]) // the lowest target, in one load
    expect(pager.baseSeq()).toBeLessThanOrEqual(1200)
    expect(pager.baseSeq()).toBeGreaterThan(1000) // no page more than needed
    expect(busy).toEqual([true, false])
    // after it settles a new jump is a new loop
    const later = jump(900)
    expect(later).not.toBe(first)
    await later
    expect(pager.baseSeq()).toBeLessThanOrEqual(900)
  })

  test('a lower target given in the same tick as a covered one is not lost', async () => {
    const pager = scriptedPager(2000, 50)
    const { jump } = harness(pager)
    const covered = jump(1990) // nothing to do on its own
    const lower = jump(1500)
    expect(lower).toBe(covered)
    await covered
    expect(pager.baseSeq()).toBeLessThanOrEqual(1500)
  })

  test('shows busy at once when it will page', () => {
    const pager = scriptedPager(2000, 50)
    const { jump, busy } = harness(pager)
    void jump(100)
    expect(busy).toEqual([true])
  })

  test('stops on a page that does not move the base', async () => {
    const pager = scriptedPager(2000, 50)
    pager.stuck = true
    const { jump, busy, errors } = harness(pager)
    await jump(10)
    expect(pager.calls).toHaveLength(1)
    expect(busy).toEqual([true, false])
    expect(errors).toEqual([])
  })

  test('fails soft: the promise resolves, busy clears and the error is reported', async () => {
    const pager = scriptedPager(2000, 50)
    pager.failAt = 1
    const { jump, busy, errors } = harness(pager)
    await expect(jump(10)).resolves.toBeUndefined()
    expect(busy).toEqual([true, false])
    expect(errors).toHaveLength(1)
    expect((errors[0] as SessionlineError).code).toBe('storage_unavailable')
    expect(pager.calls).toHaveLength(1)
  })

  test('waits for the first load before it decides anything', async () => {
    const pager = scriptedPager(2000, 50)
    let open!: () => void
    const loaded = new Promise<void>((resolve) => {
      open = resolve
    })
    const jump = createJump({ pager, ready: () => loaded, onBusy: () => {}, onError: () => {} })
    const running = jump(1500)
    await Promise.resolve()
    expect(pager.calls).toEqual([])
    open()
    await running
    expect(pager.calls).toEqual([1500])
  })
})
