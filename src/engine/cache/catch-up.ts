/**
 * Cross-tab catch-up (docs/decisions/0006): when another engine on the database committed, a
 * watched session reads what changed (the new events, or its cached folds when the gap is large
 * or the session was re-imported) and publishes the difference, serialized per session.
 */
import type { Folds } from '../../core/folds'
import { FOLD_NAMES, foldEvents } from '../../core/folds'
import type { InputReceipt } from '../../schema/inputs'
import type { SessionMessage } from '../../schema/messages'
import type { SessionlineDb } from '../../store/db'
import {
  eventsBetween,
  getReceipts,
  getSessionRow,
  inRead,
  pendingReceipts,
  projectionStates,
  receiptsFrom,
} from '../../store/transactions'
import type { CommitNote } from '../notes'
import { type Entries, type Entry, sameIncarnation, sameVersion } from './entries'
import { FOLD_LISTS, type Loader } from './load'
import type { Publisher } from './publish'

/** Beyond this many new events, a watcher is told to reload (`reset`) instead of being sent rows. */
const CATCH_UP_EVENTS = 2000

/** One version of one receipt: every change bumps `revision`. */
export const sameReceipt = (a: InputReceipt, b: InputReceipt) =>
  a.id === b.id && a.revision === b.revision && a.status === b.status && a.text === b.text

export interface CatchUpDeps {
  db: SessionlineDb
  entries: Entries
  loader: Loader
  publisher: Publisher
  isClosed(): boolean
  /** The cache took another engine's commits (a turn may have opened that a runner here must inherit). */
  caughtUp?(entry: Entry): void
}

export function createCatchUp({ db, entries, loader, publisher, isClosed, caughtUp }: CatchUpDeps) {
  const { foldsFrom, loadSnapshot } = loader
  const { advance, removeEntry } = publisher

  /**
   * Brings the cache up to what the database holds, publishing the difference (serialized per
   * session, on the entry's chain). Calls that arrive while a catch-up is queued but not started
   * share it. It never rejects: a failure goes to the engine's `onError` through the entry.
   */
  function catchUp(entry: Entry): Promise<void> {
    return entry.catchUp(() => runCatchUp(entry))
  }

  async function runCatchUp(entry: Entry): Promise<void> {
    const id = entry.id
    for (let attempt = 0; attempt < 8 && !isClosed(); attempt++) {
      const base = entry.snap
      if (!base) return
      const read = await inRead(db, async () => {
        const row = await getSessionRow(db, id)
        if (!row || sameVersion(base.row, row)) return { row }
        const gap = row.headSeq - base.row.headSeq
        // An imported session changes without events, and a session deleted and created again
        // has another log: reload its cached folds (a reset).
        const same = sameIncarnation(base.row, row)
        const small = row.source === 'native' && same && gap >= 0 && gap <= CATCH_UP_EVENTS
        const [events, cached, pending, admitted] = await Promise.all([
          small && gap > 0 ? eventsBetween(db, id, base.row.headSeq, row.headSeq) : [],
          small ? undefined : projectionStates(db, id, FOLD_NAMES, FOLD_LISTS),
          pendingReceipts(db, id),
          receiptsFrom(db, id, same ? base.row.nextInputSeq : 1),
        ])
        const stillPending = new Set(pending.map((r) => r.id))
        const left = base.pending.filter((r) => !stillPending.has(r.id)).map((r) => r.id)
        // Cached folds are read back in this transaction: their open rows are patched from its log.
        const [settled, stored] = await Promise.all([
          left.length > 0 ? getReceipts(db, left) : [],
          cached && foldsFrom(cached, row),
        ])
        return { row, events, cached, stored, pending, changed: [...admitted, ...settled] }
      })
      if (entry.snap !== base) continue // a local commit moved the cache meanwhile: start again from it
      const { row } = read
      if (!row) return removeEntry(entry)
      if (!('events' in read) || read.events === undefined) return
      let folds: Folds | undefined
      let rows: SessionMessage[] = []
      // A head move changes which rows are visible without events naming them: readers read again.
      const reset =
        read.cached !== undefined ||
        read.events.some((e) => e.type === 'history/head' || e.type === 'history/compact')
      if (read.cached) folds = read.stored ?? (await loadSnapshot(id)).folds
      else ({ folds, rows } = foldEvents(base.folds, read.events))
      if (entry.snap !== base) continue
      const changed = new Map<string, InputReceipt>()
      for (const r of read.changed) if (r) changed.set(r.id, r)
      const before = new Map(base.pending.map((r) => [r.id, r]))
      for (const r of read.pending) {
        const old = before.get(r.id)
        if (!old || !sameReceipt(old, r)) changed.set(r.id, r)
      }
      const samePending =
        read.pending.length === base.pending.length &&
        read.pending.every((r, i) => sameReceipt(r, base.pending[i]!))
      advance(
        entry,
        { row, folds, pending: samePending ? base.pending : read.pending },
        { events: read.events, rows, inputs: [...changed.values()].sort((a, b) => a.seq - b.seq), reset },
      )
      caughtUp?.(entry)
      return
    }
  }

  /** A note from another engine: watched sessions catch up from the database. */
  function onNote(note: CommitNote): void {
    const entry = entries.entries.get(note?.sessionId)
    if (!entry?.snap || isClosed()) return
    if (note.deleted) removeEntry(entry)
    else if (note.rev > entry.snap.row.rev && entry.feed.size > 0) void catchUp(entry)
  }

  return { catchUp, onNote }
}
