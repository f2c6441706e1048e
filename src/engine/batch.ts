/**
 * Coalesces work to at most one run per scheduler tick (about an animation frame). Tasks queued
 * before the tick runs all run in that tick, in the order they were queued.
 *
 * @example
 *   const batch = createBatcher()            // setTimeout(…, 16)
 *   const inTests = createBatcher((flush) => queueMicrotask(flush))
 *   batch(() => pushPreview())
 */
export type Scheduler = (flush: () => void) => void

const frameScheduler: Scheduler = (flush) => {
  setTimeout(flush, 16)
}

export function createBatcher(schedule: Scheduler = frameScheduler): (task: () => void) => void {
  let queue: Array<() => void> = []
  return (task) => {
    if (queue.push(task) > 1) return
    schedule(() => {
      const run = queue
      queue = []
      for (const t of run) t()
    })
  }
}
