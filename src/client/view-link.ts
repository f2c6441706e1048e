/**
 * A view's link to its worker as `connect` reports it: up, down while a fresh worker is on its
 * way, or failed for good. Calls that met the dead worker wait here for the fresh one and are
 * sent again (an admit is idempotent by id, so a re-send never doubles it).
 *
 * @example
 *   const link = new ViewLink()
 *   const receipt = await link.retrying(() => engine.admit(sessionId, request))
 *   link.lost() // connect: the worker died; the admit above waits for `link.back()`
 */
import { isSessionlineError, type SessionlineError } from '../schema/errors'

/** `up`: the worker answers; `down`: a fresh one is on its way; `failed`: none will answer again. */
export type LinkState = 'up' | 'down' | 'failed'

const isWorkerGone = (error: unknown) => isSessionlineError(error) && error.code === 'worker_gone'

/** One view's link to its worker (see the module's doc). */
export class ViewLink {
  #state: LinkState = 'up'
  #error: SessionlineError | undefined
  #waiters: Array<{ resolve(): void; reject(error: SessionlineError): void }> = []

  /** Whether the worker answers, a fresh one is on its way, or none will answer again. */
  get state(): LinkState {
    return this.#state
  }

  /** The worker died and a fresh one is on its way; returns false when the link was not up. */
  lost(): boolean {
    if (this.#state !== 'up') return false
    this.#state = 'down'
    return true
  }

  /** The fresh worker answers: the calls waiting for it go on. Returns false when the link was not down. */
  back(): boolean {
    if (this.#state !== 'down') return false
    this.#state = 'up'
    this.#settle()
    return true
  }

  /** No worker will answer again: waiting calls fail with `error`. Returns false when it had failed already. */
  failed(error: SessionlineError): boolean {
    if (this.#state === 'failed') return false
    this.#state = 'failed'
    this.#error = error
    this.#settle(error)
    return true
  }

  /** The view is gone: calls still waiting fail with `error`; the link's state stays. */
  close(error: SessionlineError): void {
    this.#settle(error)
  }

  /**
   * Runs `call`, and again on each fresh worker while the old one died before answering; gives
   * up (throws the call's error) once `stop()` says the caller no longer cares.
   */
  async retrying<T>(call: () => Promise<T>, stop: () => boolean): Promise<T> {
    for (;;) {
      try {
        return await call()
      } catch (thrown) {
        if (!isWorkerGone(thrown) || this.#state !== 'down' || stop()) throw thrown
        await this.#next()
      }
    }
  }

  /** Waits until a fresh worker answers (or fails with why it never will). */
  #next(): Promise<void> {
    if (this.#state === 'up') return Promise.resolve()
    if (this.#state === 'failed') return Promise.reject(this.#error)
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }))
  }

  #settle(error?: SessionlineError): void {
    const waiting = this.#waiters
    this.#waiters = []
    for (const waiter of waiting) {
      if (error) waiter.reject(error)
      else waiter.resolve()
    }
  }
}
