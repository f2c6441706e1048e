/**
 * A `Clock` (src/engine/background.ts) that moves only when a test says: `advance(ms)` runs the
 * timers that fall due, in due order. IndexedDB (fake-indexeddb) keeps the real timers, which
 * is why background work takes a clock instead of the tests faking the global ones.
 */
import type { Clock } from '../../src/engine/background'

export interface ManualClock extends Clock {
  /** Moves time on by `ms`, running each timer that falls due (one added meanwhile too, if due). */
  advance(ms: number): void
  /** Timers waiting. */
  readonly pending: number
}

export function manualClock(start = 0): ManualClock {
  let time = start
  let nextId = 0
  const timers = new Map<number, { at: number; run: () => void }>()
  return {
    now: () => time,
    after(ms, run) {
      const id = nextId++
      timers.set(id, { at: time + ms, run })
      return () => {
        timers.delete(id)
      }
    },
    advance(ms) {
      const until = time + ms
      for (;;) {
        let due: [number, { at: number; run: () => void }] | undefined
        for (const timer of timers) if (timer[1].at <= until && (!due || timer[1].at < due[1].at)) due = timer
        if (!due) break
        timers.delete(due[0])
        time = due[1].at
        due[1].run()
      }
      time = until
    },
    get pending() {
      return timers.size
    },
  }
}
