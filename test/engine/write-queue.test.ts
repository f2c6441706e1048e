/**
 * The write queue of a group commit (docs/decisions/0014), alone: what it hands to `commit` and
 * when. Items issued in one tick share a batch, items issued while a batch commits form the next,
 * a batch holds at most `maxBatch`, deferred items go back to the front, and lanes and scopes
 * never wait on each other. The commits here are promises the test settles, interleaved with new
 * items (by hand, and in every order fast-check's scheduler picks).
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { createWriteQueue } from '../../src/engine/write-queue'

/** A commit the test settles by hand: each call is recorded with the batch it got. */
function heldCommits<T>() {
  const calls: { scope: object; batch: T[]; settle: (deferred?: T[]) => void }[] = []
  const commit = (scope: object, batch: T[]) =>
    new Promise<T[]>((resolve) => {
      calls.push({ scope, batch: [...batch], settle: (deferred = []) => resolve(deferred) })
    })
  return { calls, commit }
}

/** Lets queued microtasks (a drain's start, a commit's continuation) run. */
const ticks = async (n = 5) => {
  for (let i = 0; i < n; i++) await Promise.resolve()
}

describe('write queue', () => {
  test('items issued in one tick share one batch, in arrival order, starting on the next microtask', async () => {
    const { calls, commit } = heldCommits<string>()
    const queue = createWriteQueue({ maxBatch: 256, commit })
    const session = {}
    queue.enqueue(session, 'relaxed', 'a')
    queue.enqueue(session, 'relaxed', 'b')
    // Nothing starts within the tick: a third item issued now still joins.
    expect(calls).toHaveLength(0)
    queue.enqueue(session, 'relaxed', 'c')
    await ticks()
    expect(calls.map((c) => c.batch)).toEqual([['a', 'b', 'c']])
    calls[0]?.settle()
  })

  test('items issued while a batch commits wait for it, then form the next batch together', async () => {
    const { calls, commit } = heldCommits<string>()
    const queue = createWriteQueue({ maxBatch: 256, commit })
    const session = {}
    queue.enqueue(session, 'relaxed', 'a')
    await ticks()
    expect(calls.map((c) => c.batch)).toEqual([['a']])
    queue.enqueue(session, 'relaxed', 'b')
    await ticks()
    queue.enqueue(session, 'relaxed', 'c')
    await ticks()
    // Still one commit in flight: b and c wait.
    expect(calls).toHaveLength(1)
    calls[0]?.settle()
    await ticks()
    expect(calls.map((c) => c.batch)).toEqual([['a'], ['b', 'c']])
    calls[1]?.settle()
    await ticks()
    // Idle again: the next item starts a new drain.
    queue.enqueue(session, 'relaxed', 'd')
    await ticks()
    expect(calls.map((c) => c.batch)).toEqual([['a'], ['b', 'c'], ['d']])
  })

  test('a batch holds at most maxBatch items; what it defers goes back to the front', async () => {
    const { calls, commit } = heldCommits<number>()
    const queue = createWriteQueue({ maxBatch: 2, commit })
    const session = {}
    for (const n of [1, 2, 3, 4, 5]) queue.enqueue(session, 'relaxed', n)
    await ticks()
    expect(calls.map((c) => c.batch)).toEqual([[1, 2]])
    // The batch settled 1 and deferred 2 (its facts would be read before 1's write).
    calls[0]?.settle([2])
    await ticks()
    queue.enqueue(session, 'relaxed', 6)
    expect(calls.map((c) => c.batch)).toEqual([
      [1, 2],
      [2, 3],
    ])
    calls[1]?.settle()
    await ticks()
    calls[2]?.settle()
    await ticks()
    calls[3]?.settle()
    await ticks()
    expect(calls.map((c) => c.batch)).toEqual([[1, 2], [2, 3], [4, 5], [6]])
  })

  test('lanes of one scope and different scopes commit side by side, never in one batch', async () => {
    const { calls, commit } = heldCommits<string>()
    const queue = createWriteQueue({ maxBatch: 256, commit })
    const one = {}
    const two = {}
    queue.enqueue(one, 'relaxed', 'one-relaxed')
    queue.enqueue(one, 'strict', 'one-strict')
    queue.enqueue(two, 'relaxed', 'two-relaxed')
    queue.enqueue(one, 'relaxed', 'one-relaxed-2')
    await ticks()
    // Three commits in flight at once, none waiting for another.
    expect(calls.map((c) => [c.scope === one ? 'one' : 'two', c.batch])).toEqual([
      ['one', ['one-relaxed', 'one-relaxed-2']],
      ['one', ['one-strict']],
      ['two', ['two-relaxed']],
    ])
    for (const call of calls) call.settle()
  })

  test('in any interleaving of new items and settling commits, every item is committed once, in arrival order, one batch at a time per lane', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.record({ lane: fc.constantFrom('relaxed', 'strict'), defer: fc.boolean() }), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.integer({ min: 1, max: 4 }),
        async (s, items, maxBatch) => {
          const scope = {}
          const inFlight = new Map<string, number>()
          const settled: { lane: string; n: number }[] = []
          const deferredOnce = new Set<number>()
          const queue = createWriteQueue<object, { lane: string; n: number }>({
            maxBatch,
            commit: async (_, batch) => {
              const lane = batch[0]!.lane
              expect(batch.every((item) => item.lane === lane)).toBe(true)
              expect(batch.length).toBeLessThanOrEqual(maxBatch)
              inFlight.set(lane, (inFlight.get(lane) ?? 0) + 1)
              expect(inFlight.get(lane)).toBe(1)
              await s.schedule(Promise.resolve(), `commit ${batch.map((i) => i.n).join(',')}`)
              inFlight.set(lane, 0)
              // An item asking to be deferred is, once, when it is not the batch's first.
              const cut = batch.findIndex(
                (item, i) => i > 0 && items[item.n]!.defer && !deferredOnce.has(item.n),
              )
              const done = cut < 0 ? batch : batch.slice(0, cut)
              for (const item of batch.slice(done.length)) deferredOnce.add(item.n)
              settled.push(...done)
              return batch.slice(done.length)
            },
          })
          // Items arrive one by one, in the scheduler's order among the commits' settlements.
          const issued = s.scheduleSequence(
            items.map((item, n) => ({
              label: `enqueue ${n}`,
              builder: async () => queue.enqueue(scope, item.lane, { lane: item.lane, n }),
            })),
          )
          await s.waitFor(issued.task)
          // A drain schedules its next commit a few microtasks after the last one settles.
          for (await ticks(); s.count() > 0; await ticks()) await s.waitAll()
          for (const lane of ['relaxed', 'strict']) {
            const arrived = items.flatMap((item, n) => (item.lane === lane ? [n] : []))
            expect(settled.filter((i) => i.lane === lane).map((i) => i.n)).toEqual(arrived)
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})
