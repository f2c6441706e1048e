/**
 * Rows a view reads again because an append did not continue the version it shows (a page
 * brought the row while the feed's appends were on their way). One read per row at a time; a
 * read that a newer durable change overtook is dropped (the change holds a newer version), and
 * read again if another append missed meanwhile.
 *
 * @example
 *   const rereads = new RowRereads({ read, epoch, replace, fail })
 *   for (const seq of applied.mismatched) rereads.reread(seq)
 */
import type { SessionChange } from '../engine/types'
import type { SessionMessage } from '../schema/messages'
import type { MessagePage } from '../schema/requests'
import type { Epoch } from './epoch'

/** What the rereads need of their view. */
export interface RereadTarget {
  /** Reads the page that starts at row `seq`. */
  read(seq: number): Promise<MessagePage>
  /** The view's epoch: a read of an earlier one is dropped. */
  epoch: Epoch
  /** Shows the version of row `seq` read again. */
  replace(seq: number, messages: readonly SessionMessage[]): void
  fail(error: unknown): void
}

/** A read on its way: the head of the newest durable change that reached the row meanwhile (0: none), and whether another append missed it. */
interface Flight {
  touchedAt: number
  missedAgain: boolean
}

/** One view's rows being read again (see the module's doc). */
export class RowRereads {
  readonly #target: RereadTarget
  readonly #flights = new Map<number, Flight>()

  constructor(target: RereadTarget) {
    this.#target = target
  }

  /** Notes which rows being read again `change` reached, so an older read cannot replace them. */
  touch(change: SessionChange): void {
    if (!change.durable || this.#flights.size === 0) return
    const touch = (seq: number) => {
      const flight = this.#flights.get(seq)
      if (flight) flight.touchedAt = Math.max(flight.touchedAt, change.headSeq)
    }
    for (const message of change.rows) touch(message.seq)
    for (const append of change.appends ?? []) touch(append.seq)
  }

  /** Reads row `seq` again; until the read lands, later appends that fit what is shown keep extending it. */
  reread(seq: number): void {
    const { epoch } = this.#target
    if (epoch.ended) return
    const inFlight = this.#flights.get(seq)
    if (inFlight) {
      inFlight.missedAgain = true
      return
    }
    const flight: Flight = { touchedAt: 0, missedAgain: false }
    this.#flights.set(seq, flight)
    const signal = epoch.signal
    let again = false
    this.#target
      .read(seq)
      .then((page) => {
        if (signal.aborted) return
        // A change newer than this read reached the row meanwhile (its final version, say):
        // the read must not take it back. If an append missed that version too, read again.
        if (flight.touchedAt > page.headSeq) {
          again = flight.missedAgain
          return
        }
        this.#target.replace(seq, page.messages)
      })
      .catch((error: unknown) => this.#target.fail(error))
      .finally(() => {
        this.#flights.delete(seq)
        if (again) this.reread(seq)
      })
  }
}
