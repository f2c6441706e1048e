/**
 * Loads a view's outline further back, one read at a time: `loadFrom(from)` reads the entries
 * from position `from` up to the loaded part and hands them to the view to put before it. Calls
 * made while a read runs wait for it and then read what is still missing; a read whose answer no
 * longer ends where the loaded part begins (the outline was replaced meanwhile) is dropped.
 *
 * @example
 *   const outlines = new OutlineLoader({ … })
 *   await Promise.all([outlines.loadFrom(100), outlines.loadFrom(0)]) // two reads at most
 */
import type { OutlineSlice } from '../schema/session'
import type { Epoch } from './epoch'
import type { ViewState } from './view-state'

/** What the loader needs of its view. */
export interface OutlineSource {
  /** The view's current state. */
  state(): ViewState
  /** While the first load runs, a promise of its end. */
  opening(): Promise<void> | undefined
  /** The view's epoch: a read of an earlier one is dropped. */
  epoch: Epoch
  read(start: number, end: number): Promise<OutlineSlice>
  /** Puts `slice`, read up to position `end`, before the loaded outline. */
  prepend(slice: OutlineSlice, end: number): void
}

/** Reads older outline entries for one view, one read at a time (see the module's doc). */
export class OutlineLoader {
  readonly #source: OutlineSource
  #running: Promise<void> | undefined

  constructor(source: OutlineSource) {
    this.#source = source
  }

  /** Resolves once the outline is loaded from `from` on, or cannot be (not ready, nothing moved). */
  async loadFrom(from: number): Promise<void> {
    const source = this.#source
    const opening = source.opening()
    if (opening !== undefined) await opening
    const start = () => source.state().outline.start
    while (!source.epoch.ended && source.state().status === 'ready' && start() > from) {
      if (this.#running !== undefined) {
        await this.#running
        continue
      }
      const signal = source.epoch.signal
      const end = start()
      this.#running = (async () => {
        const slice = await source.read(from, end)
        if (!signal.aborted) source.prepend(slice, end)
      })().finally(() => {
        this.#running = undefined
      })
      await this.#running
      // Nothing moved (the outline was replaced meanwhile, or is shorter than asked): stop here.
      if (start() === end && !signal.aborted) return
    }
  }
}
