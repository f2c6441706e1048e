/**
 * Versions of rows outside a view's window that durable changes brought while pages were on
 * their way: a page read before such a change must not bring back the old version. Kept while
 * any page read runs, dropped when the last one ends.
 *
 * @example
 *   const pages = await lateRows.during(() => readPages())
 *   window = addRange(window, page, range, filter, lateRows.rows)
 */
import type { SessionChange } from '../engine/types'
import type { SessionMessage } from '../schema/messages'
import type { LateRows as LateRowMap } from './view-state'

/** One view's late rows (see the module's doc). */
export class LateRows {
  readonly #rows = new Map<string, { message: SessionMessage; headSeq: number }>()
  #reading = 0

  /** The versions noted since the page reads running now began, by row id. */
  get rows(): LateRowMap {
    return this.#rows
  }

  /** Runs a page read (and what it does with the pages) with the changes meanwhile noted. */
  async during<T>(read: () => Promise<T>): Promise<T> {
    this.#reading++
    try {
      return await read()
    } finally {
      if (--this.#reading === 0) this.#rows.clear()
    }
  }

  /** Notes `outside`, the rows of `change` that lie outside the window, while a page read runs. */
  note(change: SessionChange, outside: readonly SessionMessage[]): void {
    if (this.#reading === 0 || !change.durable) return
    for (const message of outside) this.#rows.set(message.id, { message, headSeq: change.headSeq })
  }
}
