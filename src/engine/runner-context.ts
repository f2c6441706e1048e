/**
 * The model-visible transcript of a session the runner drives, kept in memory so that a step
 * does not read the whole transcript again: read once from the engine, then moved forward by
 * the session's durable change feed, which carries every committed row, the runner's own and
 * those of anyone else (a host, another tab's promote).
 *
 * It equals a fresh `loadThrough({seq: 0})` filtered to visible rows whenever the feed has
 * delivered every commit through the head the caller last saw; when it cannot tell (the feed
 * said `reset`, or its head differs from the log's), it reads the whole transcript again.
 *
 * @example
 *   const context = watchVisibleContext(engine, sessionId)
 *   const { headSeq } = await engine.append(sessionId, events)
 *   const rows = await context.read(headSeq, idOfTheStepsOwnRow)
 *   context.close()
 */

import { firstAtLeast } from '../core/sorted'
import { SessionlineError } from '../schema/errors'
import type { SessionMessage } from '../schema/messages'
import type { Engine, SessionChange, Unsubscribe } from './types'

export interface VisibleContext {
  /**
   * The visible rows in seq order but for the row `leaveOut`, current through at least
   * `seenHeadSeq` (a head the caller saw committed); without it, current with the log as of this
   * call. The array is a copy; the rows are shared with the change feed and must not be mutated.
   */
  read(seenHeadSeq?: number, leaveOut?: string): Promise<SessionMessage[]>
  /** Stops following the session; the rows are dropped. */
  close(): void
}

export function watchVisibleContext(engine: Engine, sessionId: string): VisibleContext {
  const rows = createVisibleRows()
  /** Head of the last commit applied to `rows`. */
  let headSeq = 0
  /** `rows` cannot be trusted until the next seed (never read yet, or the feed said reset). */
  let stale = true
  /** Changes that arrive while a seed reads: applied after it when they are newer. */
  let seeding: SessionChange[] | null = null
  let subscription: Promise<Unsubscribe> | undefined
  let closed = false

  const apply = (change: SessionChange) => {
    if (change.reset || change.deleted) stale = true
    if (stale) return
    for (const row of change.rows) rows.upsert(row)
    headSeq = change.headSeq
  }

  const onChange = (change: SessionChange) => {
    if (closed || !change.durable) return
    if (seeding) seeding.push(change)
    else apply(change)
  }

  async function seed(): Promise<void> {
    const arrived: SessionChange[] = []
    seeding = arrived
    try {
      const page = await engine.loadThrough(sessionId, { seq: 0 })
      rows.reset(page.messages)
      headSeq = page.headSeq
      stale = false
      // The read is one transaction: commits through its head are in it, later ones are not.
      for (const change of arrived) if (change.headSeq > page.headSeq || change.reset) apply(change)
    } finally {
      seeding = null
    }
  }

  return {
    async read(seenHeadSeq, leaveOut) {
      if (closed) throw new SessionlineError('invalid_state', 'The context was closed')
      subscription ??= engine.watch(sessionId, onChange)
      await subscription
      if (!stale && seenHeadSeq !== undefined && headSeq === seenHeadSeq) return rows.snapshot(leaveOut)
      if (!stale) {
        // An empty append catches the engine's cache up (delivering what the feed still owed us)
        // and answers the log's head: a cheap read, unlike the whole transcript.
        const log = await engine.append(sessionId, [])
        if (!stale && headSeq === log.headSeq) return rows.snapshot(leaveOut)
      }
      await seed()
      return rows.snapshot(leaveOut)
    },
    close() {
      if (closed) return
      closed = true
      rows.reset([])
      void subscription?.then((unsubscribe) => unsubscribe()).catch(() => undefined)
    },
  }
}

/** Visible rows in seq order, upserted by id (a row's seq never changes, but a re-seq is handled). */
export function createVisibleRows() {
  let rows: SessionMessage[] = []
  let seqOf = new Map<string, number>()

  /** First index whose row has a seq of at least `seq`. */
  const lowerBound = (seq: number): number => firstAtLeast(rows, (row) => row.seq, seq)

  return {
    reset(messages: readonly SessionMessage[]): void {
      rows = messages.filter((row) => row.visibility === 'visible')
      seqOf = new Map(rows.map((row) => [row.id, row.seq]))
    },
    upsert(row: SessionMessage): void {
      const held = seqOf.get(row.id)
      if (held !== undefined) {
        const at = lowerBound(held)
        if (held === row.seq && row.visibility === 'visible') {
          rows[at] = row
          return
        }
        rows.splice(at, 1)
        seqOf.delete(row.id)
      }
      if (row.visibility !== 'visible') return
      seqOf.set(row.id, row.seq)
      // New rows come from the newest commit: almost always at the end.
      if (rows.length === 0 || rows[rows.length - 1]!.seq < row.seq) rows.push(row)
      else rows.splice(lowerBound(row.seq), 0, row)
    },
    /** A copy, without the row `leaveOut` if it is held. */
    snapshot(leaveOut?: string): SessionMessage[] {
      const copy = rows.slice()
      const seq = leaveOut === undefined ? undefined : seqOf.get(leaveOut)
      if (seq !== undefined) copy.splice(lowerBound(seq), 1)
      return copy
    },
  }
}
