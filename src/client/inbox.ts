/**
 * The page's picture of a session's inbox: the pending receipts the engine reported, overlaid
 * with what this page did and the engine has not confirmed yet (admits on their way or failed,
 * edits and cancels on their way). Rolling an optimistic change back is deleting its overlay.
 *
 * Receipts arrive from several places in no fixed order (the answer to `admit`, the change feed,
 * a `pending()` read), so each is applied by a rule that does not depend on order: a promoted or
 * cancelled input is settled for good, and a pending receipt replaces one of a lower revision only.
 */
import { placeOf } from '../core/pending'
import type { Delivery } from '../schema/common'
import type { SessionlineError } from '../schema/errors'
import type { InputReceipt } from '../schema/inputs'
import type { TimelineFile, TimelineInput } from './types'

interface LocalInput {
  id: string
  text: string
  delivery: Delivery
  attachments?: readonly TimelineFile[]
  state: 'sending' | 'failed'
  error?: SessionlineError
  /** Creation order among local inputs: they have no admission seq yet. */
  order: number
}

/** An optimistic change on its way; `token` tells a later change of the same input from it. */
interface Overlay<T> {
  value: T
  token: object
}

export interface InboxInputs {
  /** Steers in admission order (rendered inline after the transcript). */
  steers: readonly TimelineInput[]
  /** Queued inputs in inbox order (the tray): admission order unless `reorder` moved some. */
  queued: readonly TimelineInput[]
}

/** Inbox order, as the engine promotes: a reordered receipt's rank, else its seq; ties by seq. */
const byPlace = (a: InputReceipt, b: InputReceipt) => placeOf(a) - placeOf(b) || a.seq - b.seq

const NONE: readonly TimelineInput[] = Object.freeze([])

function sameInput(a: TimelineInput, b: TimelineInput): boolean {
  return (
    a.id === b.id &&
    a.text === b.text &&
    a.delivery === b.delivery &&
    a.state === b.state &&
    a.seq === b.seq &&
    a.error === b.error &&
    a.attachments === b.attachments
  )
}

function sameList(a: readonly TimelineInput[], b: readonly TimelineInput[]): boolean {
  return a.length === b.length && a.every((input, i) => input === b[i])
}

export class Inbox {
  readonly #receipts = new Map<string, InputReceipt>()
  /** Promoted or cancelled ids (and ids of transcript rows): never shown as inputs again. */
  readonly #settled = new Set<string>()
  readonly #local = new Map<string, LocalInput>()
  readonly #edits = new Map<string, Overlay<string>>()
  readonly #cancels = new Map<string, Overlay<true>>()
  /** Reorders on their way: the input shows before `value` (`null`: at the end). */
  readonly #moves = new Map<string, Overlay<string | null>>()
  readonly #deliveries = new Map<string, Overlay<Delivery>>()
  #order = 0
  #version = 0
  #derivedVersion = -1
  #derived: InboxInputs = { steers: NONE, queued: NONE }
  #inputs = new Map<string, TimelineInput>()

  /** Applies a receipt from anywhere; returns whether the inbox changed. */
  applyReceipt(receipt: InputReceipt): boolean {
    const { id } = receipt
    if (receipt.status !== 'pending') return this.settle(id)
    if (this.#settled.has(id)) return false
    const known = this.#receipts.get(id)
    // Stamps cannot order two edits of one millisecond, nor engines whose clocks differ.
    if (known !== undefined && known.revision > receipt.revision) return false
    if (
      known !== undefined &&
      known.text === receipt.text &&
      known.seq === receipt.seq &&
      known.delivery === receipt.delivery &&
      known.rank === receipt.rank &&
      !this.#local.has(id)
    )
      return false
    this.#receipts.set(id, receipt)
    this.#local.delete(id) // confirmed: the receipt speaks for it now
    return this.#touch()
  }

  /** The ids of the pending receipts the engine has reported: the mark a full re-read starts from. */
  reportedIds(): ReadonlySet<string> {
    return new Set(this.#receipts.keys())
  }

  /**
   * A full re-read of the pending receipts replaces what the engine reported before `before` was
   * taken: each listed one is applied, and every input of `before` it no longer lists left the
   * inbox meanwhile (promoted, or cancelled in another tab; a settled input is never pending
   * again). Inputs learned after the mark are kept: the read may predate them.
   */
  replacePending(pending: readonly InputReceipt[], before: ReadonlySet<string>): void {
    const listed = new Set<string>()
    for (const receipt of pending) {
      listed.add(receipt.id)
      this.applyReceipt(receipt)
    }
    for (const id of before) if (!listed.has(id) && this.#receipts.has(id)) this.settle(id)
  }

  /** The input left the inbox (promoted, cancelled, or seen as a transcript row). */
  settle(id: string): boolean {
    if (this.#settled.has(id)) return false
    this.#settled.add(id)
    this.#receipts.delete(id)
    this.#local.delete(id)
    return this.#touch()
  }

  /** Whether this input only exists on this page (its admit failed or is on its way). */
  isLocalOnly(id: string): boolean {
    return this.#local.has(id) && !this.#receipts.has(id)
  }

  /** An admit leaves the page: show it at once as `sending` (a retry reuses its row). */
  sending(id: string, text: string, delivery: Delivery, attachments?: readonly TimelineFile[]): void {
    const order = this.#local.get(id)?.order ?? this.#order++
    const local: LocalInput = { id, text, delivery, state: 'sending', order }
    if (attachments && attachments.length > 0) local.attachments = attachments
    this.#local.set(id, local)
    this.#touch()
  }

  failed(id: string, error: SessionlineError): void {
    const local = this.#local.get(id)
    if (local === undefined) return
    this.#local.set(id, { ...local, state: 'failed', error })
    this.#touch()
  }

  /** Forgets an input that only ever lived on this page. */
  dropLocal(id: string): void {
    if (this.#local.delete(id)) this.#touch()
  }

  /** Changes the text of an input that only lives on this page (nothing to tell the engine). */
  editLocal(id: string, text: string): void {
    const local = this.#local.get(id)
    if (local === undefined) return
    this.#local.set(id, { ...local, text })
    this.#touch()
  }

  /** Shows `text` for the input until `endEdit(token)`; returns the token. */
  beginEdit(id: string, text: string): object {
    const token = {}
    this.#edits.set(id, { value: text, token })
    this.#touch()
    return token
  }

  endEdit(id: string, token: object): void {
    if (this.#edits.get(id)?.token !== token) return
    this.#edits.delete(id)
    this.#touch()
  }

  /** Hides the input until `endCancel(token)`. */
  beginCancel(id: string): object {
    const token = {}
    this.#cancels.set(id, { value: true, token })
    this.#touch()
    return token
  }

  endCancel(id: string, token: object): void {
    if (this.#cancels.get(id)?.token !== token) return
    this.#cancels.delete(id)
    this.#touch()
  }

  /** Shows the input before pending input `before` (`null`: at the end) until `endMove(token)`. */
  beginMove(id: string, before: string | null): object {
    const token = {}
    this.#moves.delete(id) // a later move goes after earlier ones
    this.#moves.set(id, { value: before, token })
    this.#touch()
    return token
  }

  endMove(id: string, token: object): void {
    if (this.#moves.get(id)?.token !== token) return
    this.#moves.delete(id)
    this.#touch()
  }

  /** Shows the input as `delivery` until `endDelivery(token)`. */
  beginDelivery(id: string, delivery: Delivery): object {
    const token = {}
    this.#deliveries.set(id, { value: delivery, token })
    this.#touch()
    return token
  }

  endDelivery(id: string, token: object): void {
    if (this.#deliveries.get(id)?.token !== token) return
    this.#deliveries.delete(id)
    this.#touch()
  }

  /** The engine's receipts in inbox order, with the moves on their way applied in the order made. */
  #ordered(): InputReceipt[] {
    const ordered = [...this.#receipts.values()].sort(byPlace)
    for (const [id, move] of this.#moves) {
      const from = ordered.findIndex((r) => r.id === id)
      if (from < 0) continue
      const [moved] = ordered.splice(from, 1)
      const to = move.value === null ? -1 : ordered.findIndex((r) => r.id === move.value)
      ordered.splice(to < 0 ? ordered.length : to, 0, moved!)
    }
    return ordered
  }

  /** Steers and queued inputs as the page shows them; the same arrays while nothing changed. */
  inputs(): InboxInputs {
    if (this.#derivedVersion === this.#version) return this.#derived
    const fromEngine = this.#ordered()
    const fromPage = [...this.#local.values()]
      .filter((local) => !this.#receipts.has(local.id) && !this.#settled.has(local.id))
      .sort((a, b) => a.order - b.order)
    const steers: TimelineInput[] = []
    const queued: TimelineInput[] = []
    const inputs = new Map<string, TimelineInput>()
    const add = (next: TimelineInput) => {
      if (this.#cancels.has(next.id)) return
      const edit = this.#edits.get(next.id)
      const delivery = this.#deliveries.get(next.id)
      const shown =
        edit === undefined && delivery === undefined
          ? next
          : { ...next, text: edit?.value ?? next.text, delivery: delivery?.value ?? next.delivery }
      const old = this.#inputs.get(shown.id)
      const input = old !== undefined && sameInput(old, shown) ? old : Object.freeze(shown)
      inputs.set(input.id, input)
      ;(input.delivery === 'queue' ? queued : steers).push(input)
    }
    for (const r of fromEngine) {
      const input: TimelineInput = {
        id: r.id,
        text: r.text,
        delivery: r.delivery,
        state: 'pending',
        seq: r.seq,
      }
      if (r.attachments) input.attachments = r.attachments
      add(input)
    }
    for (const l of fromPage) {
      const input: TimelineInput = { id: l.id, text: l.text, delivery: l.delivery, state: l.state }
      if (l.error !== undefined) input.error = l.error
      if (l.attachments) input.attachments = l.attachments
      add(input)
    }
    this.#inputs = inputs
    const prev = this.#derived
    this.#derived = {
      steers: sameList(steers, prev.steers)
        ? prev.steers
        : steers.length === 0
          ? NONE
          : Object.freeze(steers),
      queued: sameList(queued, prev.queued)
        ? prev.queued
        : queued.length === 0
          ? NONE
          : Object.freeze(queued),
    }
    this.#derivedVersion = this.#version
    return this.#derived
  }

  #touch(): true {
    this.#version++
    return true
  }
}
