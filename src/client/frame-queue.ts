/**
 * Holds items (a view's feed changes) for the next frame: an item after a quiet spell is flushed
 * at once, and the items that arrive within the next `frameMs` are flushed together when it
 * ends. The clock and the timer are injected, so tests drive frames by hand.
 *
 * @example
 *   const frames = new FrameQueue<SessionChange>((changes) => applyAll(changes))
 *   frames.push(change) // flushed now, or with the others at the end of this frame
 */

/** The clock and timer a frame queue runs on (the page's by default). */
export interface FrameScheduler {
  now(): number
  setTimer(run: () => void, ms: number): unknown
  clearTimer(timer: unknown): void
}

/** About a frame: changes reach a view's snapshot at most once per this many milliseconds. */
export const FRAME_MS = 16

/** The page's clock (`performance.now`) and timers. */
export const pageScheduler: FrameScheduler = {
  now: () => performance.now(),
  setTimer: (run, ms) => setTimeout(run, ms),
  clearTimer: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
}

/** Items waiting for the end of the current frame (see the module's doc). */
export class FrameQueue<T> {
  readonly #flush: (items: T[]) => void
  readonly #scheduler: FrameScheduler
  readonly #frameMs: number
  #items: T[] = []
  #timer: unknown
  #lastFrame = Number.NEGATIVE_INFINITY

  /** `flush` gets the items of each frame, in order (none when `take` emptied it meanwhile). */
  constructor(flush: (items: T[]) => void, scheduler: FrameScheduler = pageScheduler, frameMs = FRAME_MS) {
    this.#flush = flush
    this.#scheduler = scheduler
    this.#frameMs = frameMs
  }

  /** Adds `item`: flushed now when the last frame ended `frameMs` ago, else at the end of this frame. */
  push(item: T): void {
    this.#items.push(item)
    const wait = this.#lastFrame + this.#frameMs - this.#scheduler.now()
    if (wait <= 0) {
      // Due: flush now, even if the timer is still waiting (a page busy with messages runs
      // timers late; the frame must not wait for it).
      this.#cancelTimer()
      this.#flushFrame()
    } else if (this.#timer === undefined) {
      // Timers take whole milliseconds.
      this.#timer = this.#scheduler.setTimer(() => this.#flushFrame(), Math.ceil(wait))
    }
  }

  /** Takes the waiting items out (for whoever publishes before the frame ends); the frame still ends on time. */
  take(): T[] {
    const items = this.#items
    this.#items = []
    return items
  }

  /** Drops the waiting items and the timer. */
  clear(): void {
    this.#items = []
    this.#cancelTimer()
  }

  #cancelTimer(): void {
    if (this.#timer !== undefined) this.#scheduler.clearTimer(this.#timer)
    this.#timer = undefined
  }

  #flushFrame(): void {
    this.#timer = undefined
    this.#flush(this.take())
    // From the end of this frame: the next is at least frameMs after its listeners were told.
    this.#lastFrame = this.#scheduler.now()
  }
}
