/**
 * How the engine writes: one readwrite transaction per call, planned from the cached state when
 * the session row's `rev` proves it current, from the stored state otherwise. Seqs come from
 * the session row inside the transaction, so engines sharing a database never collide.
 */
import { SessionlineError } from '../schema/errors'
import type { SessionEvent, StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionlineDb, SessionRow } from '../store/db'
import { getSessionRow, inInboxWrite, inWrite } from '../store/transactions'
import { stampAndFold } from './fold'
import type { Notes } from './notes'
import { type Entry, notFound, type SessionCache, type Snapshot } from './session-cache'

/** The result of a write's plan: what to store and publish; no `next` means nothing to write. */
export interface Plan<T> {
  value: T
  next?: Snapshot
  events?: StoredEvent[]
  rows?: SessionMessage[]
  /** Ids of the rows these events create (stored with `add`, never over another row). */
  created?: readonly string[]
  inputs?: InputReceipt[]
  /** The receipts are new: stored with `add`, so an input that exists after all aborts the write. */
  newInputs?: boolean
}

/** One write: its plan, the reads it needs, and what those reads find when the cache is current. */
export interface WriteSpec<T, P> {
  /** `inbox` writes (admit, cancel, edit) never touch the log and lock fewer tables. */
  scope?: 'log' | 'inbox'
  /** Reads the plan needs besides the session row; issued together with it. */
  prefetch?: () => Promise<P>
  /** Pure but for `now()`: same inputs, same plan. Throws to refuse the write. */
  plan: (base: Snapshot, prefetched: P) => Promise<Plan<T>>
  /** What `prefetch` should find if the cache is current, and how to tell it did; none: no guessing. */
  expect?: (cached: Snapshot) => Expectation<P> | undefined
}

export interface Expectation<P> {
  prefetched: P
  /** The reads a guess needs, when fewer than the careful path's (default: `prefetch`). */
  prefetch?: () => Promise<P>
  holds: (actual: P) => boolean
}

/**
 * Imported sessions are histories another tool wrote (docs/decisions/0005): they have no log
 * to continue and a re-import replaces their rows, so neither input nor events may be added.
 */
function refuseImported(row: SessionRow): void {
  if (row.source === 'native') return
  throw new SessionlineError(
    'invalid_state',
    `session ${JSON.stringify(row.id)} was imported from ${row.source}: imported sessions are read-only`,
    { sessionId: row.id, source: row.source },
  )
}

/** Thrown inside a speculative write to abort it when the cache proved to be behind. */
const STALE: unique symbol = Symbol('stale cache')

/** Names of a failure and, for a bulk write, of each failed item. */
const failureNames = (error: unknown): unknown[] =>
  ((error as { failures?: unknown[] }).failures ?? [error]).map((f) => (f as { name?: unknown })?.name)
const isConstraintError = (error: unknown) => failureNames(error).includes('ConstraintError')

/** Ids of the rows `events` create (user and assistant messages). */
function createdRowIds(events: readonly SessionEvent[]): string[] {
  const ids: string[] = []
  for (const e of events) {
    if (e.type === 'user/message') ids.push(e.data.inputId)
    else if (e.type === 'assistant/start') ids.push(e.data.messageId)
  }
  return ids
}

export interface WriterDeps {
  db: SessionlineDb
  cache: SessionCache
  notes: Notes
  /** Told of every commit's rows after it is published (the search index follows them). */
  onRows?: (sessionId: string, rows: readonly SessionMessage[], fromHead: number, toHead: number) => void
}

export type Writer = ReturnType<typeof createWriter>

export function createWriter({ db, cache, notes, onRows }: WriterDeps) {
  /**
   * Runs one write: `plan` sees the session's state as of this transaction (the cache when the
   * row's `rev` proves it current) and returns what to store; a throw writes nothing.
   *
   * With a current cache, the write goes in one round trip: the plan is made from the cache and
   * what `expect` says the reads will find, and its writes are issued right behind the reads.
   * Requests of a transaction run in order, so the reads see the state before the writes; if
   * they show the cache was behind (or an input or row the plan did not expect), the
   * transaction is aborted, nothing is written, and the write runs again the careful way.
   */
  async function commit<T, P = undefined>(sessionId: string, writeSpec: WriteSpec<T, P>): Promise<T> {
    const spec: WriteSpec<T, P> = {
      ...writeSpec,
      plan: (base, prefetched) => {
        refuseImported(base.row)
        return writeSpec.plan(base, prefetched)
      },
    }
    const entry = await cache.loaded(sessionId)
    const scope = spec.scope ?? 'log'
    const transaction = scope === 'inbox' ? inInboxWrite : inWrite
    const cached = entry.snap
    const guess = cached && spec.expect ? await speculate(spec, cached) : undefined
    if (cached && guess) {
      const out = await transaction(db, async () => {
        const reads = Promise.all([getSessionRow(db, sessionId), (guess.prefetch ?? spec.prefetch)?.()])
        const writes = guess.out.next ? persist(sessionId, cached, guess.out) : undefined
        // If we abort below, these fail with the abort; that failure is expected, not news.
        writes?.catch(() => undefined)
        const [row, prefetched] = await reads
        if (row?.rev !== cached.row.rev || !guess.holds(prefetched as P)) throw STALE
        await writes
        return guess.out
      }).catch((error: unknown) => {
        if (error === STALE) return undefined
        throw error
      })
      if (out) return published(entry, cached, out, true)
    }
    const { base, out, complete } = await transaction(db, async () => {
      // Every IndexedDB request is a round trip to the storage process: what the plan will need
      // is asked for together with the session row, not after it.
      const [row, prefetched] = await Promise.all([getSessionRow(db, sessionId), spec.prefetch?.()])
      if (!row) throw notFound(sessionId)
      const current = entry.snap
      const base =
        current && current.row.rev === row.rev
          ? current
          : scope === 'inbox'
            ? await cache.inboxInTx(sessionId, row, current)
            : await cache.snapshotInTx(sessionId, row)
      const out = await spec.plan(base, prefetched as P)
      if (out.next) await persist(sessionId, base, out)
      // An inbox write on a stale cache carried the folds over unread: its state is partial.
      return { base, out, complete: base === current || scope === 'log' }
    })
    return published(entry, base, out, complete)
  }

  /** The plan made from the cache and the expected reads, or undefined if it cannot be made. */
  async function speculate<T, P>(spec: WriteSpec<T, P>, cached: Snapshot) {
    const expected = spec.expect?.(cached)
    if (!expected) return undefined
    try {
      return {
        out: await spec.plan(cached, expected.prefetched),
        prefetch: expected.prefetch,
        holds: expected.holds,
      }
    } catch {
      // The careful path raises the error, if it still holds against the stored state.
      return undefined
    }
  }

  /** After a commit: tells peers, moves the cache and pushes the change; returns the write's value. */
  function published<T>(entry: Entry, base: Snapshot, out: Plan<T>, complete: boolean): T {
    const next = out.next
    if (!next) return out.value
    notes.post({ sessionId: entry.id, rev: next.row.rev })
    const change = { events: out.events ?? [], rows: out.rows ?? [], inputs: out.inputs ?? [] }
    const current = entry.snap
    if (current && current.row.rev === base.row.rev && complete) cache.advance(entry, next, change)
    else if (current && current.row.rev < next.row.rev) {
      // The cache had missed another engine's commits: watchers get those and ours from the
      // database, in order; with nobody watching, a complete new state is all that matters.
      if (entry.feed.size > 0 || !complete) void cache.catchUp(entry)
      else cache.advance(entry, next, change)
    }
    onRows?.(entry.id, change.rows, base.row.headSeq, next.row.headSeq)
    return out.value
  }

  async function persist<T>(sessionId: string, base: Snapshot, out: Plan<T>): Promise<void> {
    const next = out.next as Snapshot
    const writes: Promise<unknown>[] = [db.sessions.put(next.row)]
    if (out.events?.length) writes.push(db.events.bulkAdd(out.events))
    if (out.rows?.length) {
      const created = new Set(out.created)
      const fresh = out.rows.filter((row) => created.has(row.id))
      const updated = fresh.length === 0 ? out.rows : out.rows.filter((row) => !created.has(row.id))
      if (fresh.length > 0)
        writes.push(db.messages.bulkAdd(fresh).catch((error: unknown) => rowIdTaken(error)))
      if (updated.length > 0) writes.push(db.messages.bulkPut(updated))
    }
    if (out.inputs?.length) {
      writes.push(
        out.newInputs
          ? db.inputs.bulkAdd(out.inputs).catch((error: unknown) => {
              // Only a write that guessed the id was new gets here: the careful path redoes it.
              throw isConstraintError(error) ? STALE : error
            })
          : db.inputs.bulkPut(out.inputs),
      )
    }
    const states = cache.putFolds(sessionId, next.row.headSeq, next.folds, base.folds)
    if (states) writes.push(states)
    await Promise.all(writes)
  }

  /** A row `add` failed: the only constraint on rows is their id. */
  function rowIdTaken(error: unknown): never {
    if (!isConstraintError(error)) throw error
    const names = failureNames(error)
    throw new SessionlineError(
      'invalid_state',
      'a row with one of these ids already exists',
      { names },
      { cause: error },
    )
  }

  const bump = (row: SessionRow, at: number, changes: Partial<SessionRow> = {}): SessionRow => ({
    ...row,
    ...changes,
    updatedAt: at,
    rev: row.rev + 1,
  })

  /**
   * Stamps and folds events after `base` (append and promote). Rows they create are stored with
   * `add`, so the database itself refuses an id some row already has (see `persist`); an id of
   * one of this session's pending inputs is refused here, as promoting that input could then
   * never create its row. (Admit refuses ids that rows already use.)
   */
  function planEvents(sessionId: string, base: Snapshot, events: readonly SessionEvent[], at: number) {
    const folded = stampAndFold(base.folds, events, sessionId, base.row.headSeq + 1, at)
    const created = createdRowIds(folded.stored)
    const pendingIds = new Set(base.pending.map((r) => r.id))
    const clash = folded.stored.find((e) => e.type === 'assistant/start' && pendingIds.has(e.data.messageId))
    if (clash?.type === 'assistant/start') {
      throw new SessionlineError(
        'invalid_state',
        `id ${JSON.stringify(clash.data.messageId)} is a pending input's id`,
        {
          id: clash.data.messageId,
        },
      )
    }
    const headSeq = base.row.headSeq + events.length
    return { folded, headSeq, created }
  }

  return { commit, planEvents, bump }
}
