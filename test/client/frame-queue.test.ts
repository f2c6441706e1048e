/**
 * The frame queue on a hand-driven clock: an item after a quiet spell flushes at once, items
 * within a frame flush together when it ends, nothing is lost or reordered, and two flushes are
 * never closer than a frame whatever the arrival times (a property over random schedules).
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { FRAME_MS, FrameQueue, type FrameScheduler } from '../../src/client/frame-queue'

/** A clock that moves only when told, with timers that fire as it passes them (late ones too). */
function manualClock() {
  let now = 0
  let next = 0
  const timers = new Map<number, { at: number; run: () => void }>()
  const scheduler: FrameScheduler = {
    now: () => now,
    setTimer(run, ms) {
      const id = ++next
      timers.set(id, { at: now + ms, run })
      return id
    },
    clearTimer(timer) {
      timers.delete(timer as number)
    },
  }
  return {
    scheduler,
    timers,
    /** Moves the clock to `to`, firing each timer due on the way at its own time. */
    advance(to: number) {
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= to).sort((a, b) => a[1].at - b[1].at)[0]
        if (due === undefined) break
        timers.delete(due[0])
        now = Math.max(now, due[1].at)
        due[1].run()
      }
      now = Math.max(now, to)
    },
  }
}

function recorded(clock: ReturnType<typeof manualClock>) {
  const flushes: { at: number; items: number[] }[] = []
  const queue = new FrameQueue<number>(
    (items) => flushes.push({ at: clock.scheduler.now(), items }),
    clock.scheduler,
  )
  return { queue, flushes }
}

describe('the frame queue', () => {
  test('flushes an item after a quiet spell at once, and what follows within the frame at its end', () => {
    const clock = manualClock()
    const { queue, flushes } = recorded(clock)
    queue.push(1)
    expect(flushes).toEqual([{ at: 0, items: [1] }])
    clock.advance(5)
    queue.push(2)
    clock.advance(9)
    queue.push(3)
    expect(flushes).toHaveLength(1)
    expect([...clock.timers.values()].map((t) => t.at)).toEqual([FRAME_MS]) // one timer for the frame
    clock.advance(FRAME_MS)
    expect(flushes).toEqual([
      { at: 0, items: [1] },
      { at: FRAME_MS, items: [2, 3] },
    ])
    // A frame after the last flush: at once again.
    clock.advance(FRAME_MS * 2 + 1)
    queue.push(4)
    expect(flushes.at(-1)).toEqual({ at: FRAME_MS * 2 + 1, items: [4] })
  })

  test('a due item flushes at once even while a late timer still waits, and cancels it', () => {
    const clock = manualClock()
    const { queue, flushes } = recorded(clock)
    queue.push(1)
    queue.push(2) // within the frame: a timer
    expect(clock.timers.size).toBe(1)
    // The page is busy: the clock passes the frame's end without the timer firing.
    const [timer] = [...clock.timers.values()]
    timer!.at = 1_000
    clock.advance(20)
    queue.push(3)
    expect(flushes).toEqual([
      { at: 0, items: [1] },
      { at: 20, items: [2, 3] },
    ])
    expect(clock.timers.size).toBe(0)
  })

  test('take empties the queue for whoever publishes first; the frame still ends on time', () => {
    const clock = manualClock()
    const { queue, flushes } = recorded(clock)
    queue.push(1)
    queue.push(2)
    expect(queue.take()).toEqual([2])
    expect(queue.take()).toEqual([])
    clock.advance(FRAME_MS)
    expect(flushes).toEqual([
      { at: 0, items: [1] },
      { at: FRAME_MS, items: [] },
    ])
  })

  test('clear drops the waiting items and the timer', () => {
    const clock = manualClock()
    const { queue, flushes } = recorded(clock)
    queue.push(1)
    queue.push(2)
    queue.clear()
    expect(clock.timers.size).toBe(0)
    clock.advance(100)
    expect(flushes).toEqual([{ at: 0, items: [1] }])
    queue.push(3)
    expect(flushes.at(-1)).toEqual({ at: 100, items: [3] })
  })

  test('over random arrival times every item flushes once, in order, and flushes are a frame apart (fixed seed)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 80 }), (gaps) => {
        const clock = manualClock()
        const { queue, flushes } = recorded(clock)
        let at = 0
        for (const [i, gap] of gaps.entries()) {
          at += gap
          clock.advance(at)
          queue.push(i)
        }
        clock.advance(at + FRAME_MS)
        expect(flushes.flatMap((f) => f.items)).toEqual(gaps.map((_, i) => i))
        for (let i = 1; i < flushes.length; i++)
          expect(flushes[i]!.at - flushes[i - 1]!.at).toBeGreaterThanOrEqual(FRAME_MS)
        expect(clock.timers.size).toBe(0)
      }),
      { seed: 16, numRuns: 300 },
    )
  })
})
