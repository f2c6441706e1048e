/**
 * One `AbortSignal` per load: a read keeps the signal of the epoch it began in and drops its
 * answer once that signal is aborted. `reset()` begins a new epoch (a reload, a lost worker), so
 * every earlier answer is stale; `end()` ends the last one (a disposed view), and every later
 * epoch begins aborted.
 *
 * @example
 *   const signal = epoch.signal
 *   const page = await engine.page(sessionId)
 *   if (signal.aborted) return // reset or ended meanwhile
 */
export class Epoch {
  #controller = new AbortController()
  #ended = false

  /** The current epoch's signal. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  /** Whether `end()` was called: nothing this owner starts runs any more. */
  get ended(): boolean {
    return this.#ended
  }

  /** Makes every earlier answer stale; returns the new epoch's signal (aborted once ended). */
  reset(): AbortSignal {
    this.#controller.abort()
    this.#controller = new AbortController()
    if (this.#ended) this.#controller.abort()
    return this.#controller.signal
  }

  /** Ends the last epoch: its signal and every later one are aborted. */
  end(): void {
    this.#ended = true
    this.#controller.abort()
  }
}
