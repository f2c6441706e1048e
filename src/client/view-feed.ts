/**
 * A view's change feed: the subscription, the changes held while a (re)load reads (applied on
 * top of what it read), and the frame queue the live changes wait in. Changes of other sessions,
 * and any after the view's epoch ended, are ignored.
 *
 * @example
 *   const feed = new ViewFeed(sessionId, epoch, (changes) => applyAll(changes))
 *   feed.subscribed(await engine.watch(sessionId, feed.listener)) // held until `release()`
 */
import type { ChangeListener, SessionChange, Unsubscribe } from '../engine/types'
import type { Epoch } from './epoch'
import { FrameQueue, type FrameScheduler } from './frame-queue'

/** One view's change feed (see the module's doc). */
export class ViewFeed {
  readonly #sessionId: string
  readonly #epoch: Epoch
  readonly #frames: FrameQueue<SessionChange>
  /** Changes held while a (re)load reads; undefined while none does. The first load reads at once. */
  #held: SessionChange[] | undefined = []
  #unsubscribe: Unsubscribe | undefined

  /** `apply` gets the live changes of each frame, in order. */
  constructor(
    sessionId: string,
    epoch: Epoch,
    apply: (changes: SessionChange[]) => void,
    frames?: FrameScheduler,
  ) {
    this.#sessionId = sessionId
    this.#epoch = epoch
    this.#frames = new FrameQueue(apply, frames)
  }

  /** The listener to subscribe with: holds, queues for a frame, or ignores each change. */
  readonly listener: ChangeListener = (change) => {
    if (this.#epoch.ended || change.sessionId !== this.#sessionId) return
    if (this.#held !== undefined) this.#held.push(change)
    else this.#frames.push(change)
  }

  /** Whether the feed is subscribed (a read subscribes first when it is not). */
  get subscribed(): boolean {
    return this.#unsubscribe !== undefined
  }

  /** Whether a (re)load reads: changes are held for it. */
  get holding(): boolean {
    return this.#held !== undefined
  }

  /** Keeps `stop` to unsubscribe with. */
  subscribe(stop: Unsubscribe): void {
    this.#unsubscribe = stop
  }

  /** Holds the changes from now on (a reload begins); already holding, keeps what it holds. */
  hold(changes: readonly SessionChange[] = []): void {
    this.#held ??= []
    this.#held.push(...changes)
  }

  /** Ends holding: returns the changes held, in order; live changes go to the frames again. */
  release(): SessionChange[] {
    const held = this.#held ?? []
    this.#held = undefined
    return held
  }

  /** The live changes that wait for a frame, taken out (whoever publishes first applies them). */
  take(): SessionChange[] {
    return this.#frames.take()
  }

  /** Unsubscribes and drops what waits; `holding` for a read that will subscribe again (a fresh worker). */
  stop(holding: boolean): void {
    this.#frames.clear()
    this.#held = holding ? [] : undefined
    this.#unsubscribe?.()
    this.#unsubscribe = undefined
  }
}
