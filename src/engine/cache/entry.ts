/**
 * One session's entry in the engine's cache, owning its lifecycle (TanStack Query's `Query`
 * with its `Removable` is the model): what was last published (`snap`), the one load in flight,
 * who holds it (calls pin it with `hold`/`release`, watchers through its feed), when it may be
 * removed (idle: nobody holds or watches it and nothing loads; then after `gcTime` by the
 * clock, or at once if it never loaded), the chain its catch-ups run on, and whether the runner
 * was asked to recover or inherit its turn. Its fields are private; the cache and the engine go
 * through these methods, so whether an entry may go depends on the entry alone.
 */

import type { Folds } from '../../core/folds'
import type { InputReceipt } from '../../schema/inputs'
import type { SessionRow } from '../../store/db'
import type { Clock, ReportFailure } from '../background'
import { createLiveBuffer, type LiveBuffer } from '../live'
import { createFeed, type SessionFeed } from '../watch'

/** What the engine last published for a session; immutable, replaced whole on every change. */
export interface Snapshot {
  row: SessionRow
  folds: Folds
  /** Pending receipts in admission order (identity kept while unchanged). */
  pending: readonly InputReceipt[]
}

/** What an entry needs from the cache that holds it. */
export interface EntryContext {
  /** Runs batched work (live previews) on the next tick. */
  batch: (task: () => void) => void
  clock: Clock
  /** How long an idle entry stays (TanStack Query's `gcTime`). */
  gcTime: number
  /** Told of a catch-up that failed (no call awaits it to reject). */
  report: ReportFailure
  /** The feed gained its first listener. */
  watched(entry: Entry): void
  /** The feed lost its last listener. */
  unwatched(entry: Entry): void
  /** Takes the entry out of the cache, if it is still the session's entry there. */
  remove(entry: Entry): void
}

/** One session's entry; see the module comment. */
export class Entry {
  readonly id: string
  /** The watchers of the session. */
  readonly feed: SessionFeed
  /** Streamed text not committed yet, for live previews. */
  readonly live: LiveBuffer
  /** A watch's first load in progress (see `watch` and `page` in engine.ts). */
  opening?: Promise<void>
  readonly #context: EntryContext
  #snap: Snapshot | undefined
  #loading: Promise<Snapshot> | undefined
  #deleted = false
  /** Calls running on this entry (`hold`): while any holds it, it is never removed. */
  #holders = 0
  #cancelRemoval: (() => void) | undefined
  #catchUp: Promise<void> = Promise.resolve()
  /** A catch-up queued behind `#catchUp` that has not started: a call made meanwhile joins it. */
  #queuedCatchUp: Promise<void> | undefined
  #recovered = false
  #inheritedTurn: number | undefined

  constructor(id: string, context: EntryContext) {
    this.id = id
    this.#context = context
    this.live = createLiveBuffer()
    this.feed = createFeed(context.batch, {
      onFirst: () => {
        this.#stopRemoval()
        context.watched(this)
      },
      onLast: () => {
        context.unwatched(this)
        this.#becameIdle()
      },
    })
  }

  // --- state --------------------------------------------------------------------------------

  /** What was last published, if the session has loaded. */
  get snap(): Snapshot | undefined {
    return this.#snap
  }

  /** The session was deleted (here or by another engine). */
  get deleted(): boolean {
    return this.#deleted
  }

  /** Makes `next` the published state (a load in flight no longer counts). */
  publish(next: Snapshot): void {
    this.#snap = next
    this.#loading = undefined
  }

  /** The session is gone (here or by another engine). */
  markDeleted(): void {
    this.#deleted = true
  }

  /** The session's state from `read`, shared by every call while one read is in flight. */
  async load(read: () => Promise<Snapshot>): Promise<Snapshot> {
    this.#loading ??= read()
    try {
      return await this.#loading
    } finally {
      this.#loading = undefined
    }
  }

  // --- holding and removal --------------------------------------------------------------------

  /** Nobody holds or watches it and nothing loads: it may go. */
  get isIdle(): boolean {
    return this.#holders === 0 && this.feed.size === 0 && this.#loading === undefined
  }

  /** Pins the entry for a call: no removal while it runs. */
  hold(): void {
    this.#holders++
    this.#stopRemoval()
  }

  /** Ends a `hold`; the last one makes the entry idle if nobody watches it. */
  release(): void {
    this.#holders--
    this.#becameIdle()
  }

  /** Stops its timer (the entry left the cache). */
  dispose(): void {
    this.#stopRemoval()
  }

  #stopRemoval(): void {
    this.#cancelRemoval?.()
    this.#cancelRemoval = undefined
  }

  /** Idle: removed after `gcTime`, or at once if it holds no state. */
  #becameIdle(): void {
    if (!this.isIdle) return
    if (!this.#snap) {
      this.#context.remove(this)
      return
    }
    this.#stopRemoval()
    // Weak: in Node, an idle cache must not keep the process alive.
    this.#cancelRemoval = this.#context.clock.after(
      this.#context.gcTime,
      () => {
        this.#cancelRemoval = undefined
        if (this.isIdle) this.#context.remove(this)
      },
      { weak: true },
    )
  }

  // --- catching up ---------------------------------------------------------------------------

  /**
   * Runs `run` after the catch-ups before it (serialized per session). Calls that arrive while
   * one is queued but not started share it: it starts after each of them, so it sees what each
   * needs. It never rejects: a failure is reported, and the next commit note or read tries again.
   */
  catchUp(run: () => Promise<void>): Promise<void> {
    if (this.#queuedCatchUp) return this.#queuedCatchUp
    const queued = this.#catchUp
      .then(() => {
        this.#queuedCatchUp = undefined
        return run()
      })
      .catch((error: unknown) => {
        this.#context.report(error, 'session cache: catching up', this.id)
      })
    this.#queuedCatchUp = queued
    this.#catchUp = queued
    return queued
  }

  // --- recovery --------------------------------------------------------------------------------

  /** True the first time: the runner is asked once per entry to recover an unfinished session. */
  claimRecovery(): boolean {
    if (this.#recovered) return false
    this.#recovered = true
    return true
  }

  /** True once per open turn another engine started: the runner stands by as its heir. */
  claimInheritance(turn: number): boolean {
    if (turn === this.#inheritedTurn) return false
    this.#inheritedTurn = turn
    this.#recovered = true
    return true
  }
}
