/**
 * The queue in the engine's order. The view's `queued` lists inputs in admission order, while the
 * engine runs them by `rank ?? seq`, then `seq` (docs/decisions/0033), which `reorder` changes:
 * so the tray reads the receipts' places with `pending` whenever the queue's members change or
 * after a reorder, and sorts the view's inputs by them. Inputs it has no place for yet (still on
 * their way) keep their admission order, after the placed ones.
 */
import type { InputReceipt, SessionlineClient, TimelineInput } from '../../src/index'

export class QueueOrder {
  private places = new Map<string, number>()
  private readFor = ''
  private source: readonly TimelineInput[] | undefined
  private sorted: readonly TimelineInput[] = []
  private version = 0
  private sortedVersion = -1

  constructor(
    private readonly client: Pick<SessionlineClient, 'pending'>,
    /** Called when a read changed the order (the app re-renders). */
    private readonly changed: () => void,
  ) {}

  /** `queued` in the engine's order; the same array while nothing changed. */
  of(sessionId: string, queued: readonly TimelineInput[]): readonly TimelineInput[] {
    const members = `${sessionId}:${queued.map((input) => input.id).join(',')}`
    if (members !== this.readFor) {
      this.readFor = members
      this.refresh(sessionId)
    }
    if (queued === this.source && this.sortedVersion === this.version) return this.sorted
    const at = (input: TimelineInput) => this.places.get(input.id) ?? Number.POSITIVE_INFINITY
    this.source = queued
    this.sortedVersion = this.version
    this.sorted = queued
      .map((input, index) => ({ input, index }))
      .sort((a, b) => at(a.input) - at(b.input) || a.index - b.index)
      .map(({ input }) => input)
    return this.sorted
  }

  /** Reads the places again (after a reorder, whose members are unchanged). */
  refresh(sessionId: string): void {
    this.client.pending(sessionId).then(
      (receipts) => {
        this.places = placesOf(receipts)
        this.version++
        this.changed()
      },
      () => undefined, // the view reports a worker that is gone; the admission order stands meanwhile
    )
  }
}

/** Each pending queued input's place: by `rank ?? seq`, then `seq`. */
export function placesOf(receipts: readonly InputReceipt[]): Map<string, number> {
  const queued = receipts
    .filter((receipt) => receipt.delivery === 'queue')
    .sort((a, b) => (a.rank ?? a.seq) - (b.rank ?? b.seq) || a.seq - b.seq)
  return new Map(queued.map((receipt, index) => [receipt.id, index]))
}
