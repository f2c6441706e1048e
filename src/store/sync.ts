/**
 * The store side of session sync (docs/decisions/0036): a synced session's stream cursor and
 * outbox, read with its log in one transaction, and written with the events a pull brings in
 * one transaction, so a cursor never runs ahead of the log it describes. The sync module folds
 * and decides; this module only reads and writes.
 *
 * @example
 *   const view = await readSyncView(db, 's1')
 *   await commitPull(db, { sessionId: 's1', expectRev: view.row?.rev, state, outbox })
 */

import { SessionlineError } from '../schema/errors'
import type { StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import {
  MAX_KEY,
  MIN_KEY,
  type SendMark,
  type SessionlineDb,
  type SessionRow,
  type SyncOutboxRow,
  type SyncStateRow,
} from './db'
import { eventsBetween } from './transactions'

const range = (sessionId: string) =>
  [
    [sessionId, MIN_KEY],
    [sessionId, MAX_KEY],
  ] as [[string, unknown], [string, unknown]]

/** A synced session's row, cursor and outbox as one transaction read them, without its log. */
export interface SyncHead {
  row?: SessionRow
  state?: SyncStateRow
  /** In local log order. */
  outbox: SyncOutboxRow[]
}

/** A synced session as one transaction read it, its whole log included. */
export interface SyncView extends SyncHead {
  events: StoredEvent[]
}

const outboxOf = (db: SessionlineDb, sessionId: string) =>
  db.syncOutbox
    .where('[sessionId+fromSeq]')
    .between(...range(sessionId))
    .toArray()

/**
 * The log each synced session had at its last read, per database: a sync round reads the log
 * several times (cut, pull, status), and a log's events only ever grow within one incarnation
 * of the session (the engine's cache rule, `sameIncarnation` in src/engine/cache/entries.ts: a
 * session made again has another `createdAt`, a log a pull rewrote a higher `rebased`). A read
 * takes the events past the cached ones, once the row's `rev` has not gone back and the first
 * and last cached events are still stored as they were. Bounded to the sessions read last.
 */
const logs = new WeakMap<SessionlineDb, Map<string, CachedLog>>()
interface CachedLog {
  createdAt: number
  rebased: number
  rev: number
  events: readonly StoredEvent[]
}
const CACHED_LOGS = 4

const sameStored = (a: StoredEvent | undefined, b: StoredEvent) =>
  a !== undefined && a.type === b.type && a.at === b.at && JSON.stringify(a.data) === JSON.stringify(b.data)

/** The session's whole log, in a transaction that includes `db.events` (see `logs`). */
async function wholeLog(db: SessionlineDb, sessionId: string, row: SessionRow | undefined) {
  const cache = logs.get(db) ?? new Map<string, CachedLog>()
  logs.set(db, cache)
  const cached = cache.get(sessionId)
  cache.delete(sessionId)
  let events: StoredEvent[] | undefined
  if (
    row !== undefined &&
    cached !== undefined &&
    cached.createdAt === row.createdAt &&
    cached.rebased === (row.rebased ?? 0) &&
    cached.rev <= row.rev &&
    cached.events.length <= row.headSeq
  ) {
    const n = cached.events.length
    const [first, last, newer] = await Promise.all([
      n > 0 ? db.events.get([sessionId, 1]) : undefined,
      n > 0 ? db.events.get([sessionId, n]) : undefined,
      eventsBetween(db, sessionId, n),
    ])
    if (n === 0 || (sameStored(first, cached.events[0]!) && sameStored(last, cached.events[n - 1]!)))
      events = [...cached.events, ...newer]
  }
  events ??= await eventsBetween(db, sessionId, 0)
  if (row !== undefined) {
    cache.set(sessionId, {
      createdAt: row.createdAt,
      rebased: row.rebased ?? 0,
      rev: row.rev,
      events: [...events],
    })
    for (const key of cache.keys()) {
      if (cache.size <= CACHED_LOGS) break
      cache.delete(key)
    }
  }
  return events
}

/** Outbox rows as their sends stand: a mark recorded in the state since overrides the row's. */
function withMarks(outbox: SyncOutboxRow[], sends: SyncStateRow['sends']): SyncOutboxRow[] {
  if (sends === undefined) return outbox
  return outbox.map((entry) => {
    const mark = sends[entry.batch.batchId]
    if (mark === undefined) return entry
    const { sent: _sent, acked: _acked, ...rest } = entry
    return { ...rest, sent: mark.sent, ...(mark.acked ? { acked: true } : {}) }
  })
}

async function headOf(db: SessionlineDb, sessionId: string): Promise<SyncHead> {
  const [row, state, outbox] = await Promise.all([
    db.sessions.get(sessionId),
    db.syncState.get(sessionId),
    outboxOf(db, sessionId),
  ])
  return { row, state, outbox: withMarks(outbox, state?.sends) }
}

/** The session row, its whole log, its sync state and outbox, read together. */
export function readSyncView(db: SessionlineDb, sessionId: string): Promise<SyncView> {
  return db.transaction('r', [db.sessions, db.events, db.syncState, db.syncOutbox], async () => {
    const head = await headOf(db, sessionId)
    const events = await wholeLog(db, sessionId, head.row)
    return { ...head, events }
  })
}

/**
 * The session row, its sync state and outbox, read together, without the log: what a round
 * needs to know whether anything waits to be cut or pushed (the row's `headSeq` against the
 * cursor's canonical seq and the outbox) and where to read the stream from. An idle session's
 * outbox is empty.
 */
export function readSyncHead(db: SessionlineDb, sessionId: string): Promise<SyncHead> {
  return db.transaction('r', [db.sessions, db.syncState, db.syncOutbox], () => headOf(db, sessionId))
}

/**
 * Starts this engine's sync of a session: the state is made (or read) and its producer epoch
 * moves on, so an older engine still pushing for this device is fenced by the server. A state
 * left by a session deleted since starts over (its cursor described another log).
 */
export function startSyncState(
  db: SessionlineDb,
  sessionId: string,
  url: string,
  deviceId: () => string,
  given?: string,
): Promise<SyncStateRow> {
  return db.transaction('rw', [db.sessions, db.syncState, db.syncOutbox], async () => {
    const [row, old] = await Promise.all([db.sessions.get(sessionId), db.syncState.get(sessionId)])
    const stale = old !== undefined && (old.url !== url || (row === undefined && old.canonicalSeq > 0))
    if (stale)
      await db.syncOutbox
        .where('[sessionId+fromSeq]')
        .between(...range(sessionId))
        .delete()
    const keep = old !== undefined && !stale
    const state: SyncStateRow = {
      sessionId,
      url,
      deviceId: given ?? old?.deviceId ?? deviceId(),
      epoch: old === undefined ? 0 : old.epoch + 1,
      nextProducerSeq: 0,
      offset: keep ? old.offset : '-1',
      canonicalSeq: keep ? old.canonicalSeq : 0,
      seen: keep ? old.seen : [],
      skipped: keep ? old.skipped : 0,
      ...(keep && old.lastSkip !== undefined ? { lastSkip: old.lastSkip } : {}),
      ...(keep && old.claim !== undefined ? { claim: old.claim } : {}),
      // An acknowledged batch stays acknowledged for the next engine (it is not sent again).
      ...(keep && old.sends !== undefined ? { sends: old.sends } : {}),
    }
    await db.syncState.put(state)
    return state
  })
}

/**
 * Adds batches cut from the local log to the outbox, unless the log or the outbox moved since
 * they were cut (then nothing is written and the answer is false).
 */
export function addToOutbox(
  db: SessionlineDb,
  sessionId: string,
  expect: { rev: number; outboxLength: number },
  entries: readonly SyncOutboxRow[],
): Promise<boolean> {
  return db.transaction('rw', [db.sessions, db.syncOutbox], async () => {
    const [row, count] = await Promise.all([
      db.sessions.get(sessionId),
      db.syncOutbox
        .where('[sessionId+fromSeq]')
        .between(...range(sessionId))
        .count(),
    ])
    if (row?.rev !== expect.rev || count !== expect.outboxLength) return false
    await db.syncOutbox.bulkAdd([...entries])
    return true
  })
}

/**
 * Records, in one transaction, how outbox batches were sent or that they were acknowledged (by
 * batch id), with the producer seq to use next. Only the sync state is written: the batches'
 * events stay as they were stored when cut. False, writing nothing, when another engine took
 * over (a newer epoch).
 */
export function recordSends(
  db: SessionlineDb,
  sessionId: string,
  producer: Pick<SyncStateRow, 'epoch' | 'nextProducerSeq'>,
  marks: Readonly<Record<string, SendMark>>,
): Promise<boolean> {
  return db.transaction('rw', [db.syncState], async () => {
    const state = await db.syncState.get(sessionId)
    if (!state || state.epoch !== producer.epoch) return false
    await db.syncState.put({
      ...state,
      nextProducerSeq: producer.nextProducerSeq,
      sends: { ...state.sends, ...marks },
    })
    return true
  })
}

/**
 * Commits a pull that brought no batch (`planCursorPull`): the cursor, the skip count and the
 * claim folded through it, in one transaction, nothing else of the state changed. False,
 * writing nothing, when another engine took over (a newer epoch) or the cursor moved since
 * `next` was planned from `fromOffset`.
 */
export function commitCursor(
  db: SessionlineDb,
  sessionId: string,
  fromOffset: string,
  next: Pick<SyncStateRow, 'epoch' | 'offset' | 'skipped' | 'lastSkip' | 'claim'>,
): Promise<boolean> {
  return db.transaction('rw', [db.syncState], async () => {
    const state = await db.syncState.get(sessionId)
    if (!state || state.epoch !== next.epoch || state.offset !== fromOffset) return false
    await db.syncState.put({
      ...state,
      offset: next.offset,
      skipped: next.skipped,
      ...(next.lastSkip !== undefined ? { lastSkip: next.lastSkip } : {}),
      claim: next.claim ?? null,
    })
    return true
  })
}

/**
 * A new log for a session (or, as `append`, events added after it): its row, the events, the
 * rows they make and how to store its folds.
 */
export interface RewrittenLog {
  row: SessionRow
  events: readonly StoredEvent[]
  rows: readonly SessionMessage[]
  /** Stores the folds in the running transaction (the engine's cache knows how). */
  putFolds: () => Promise<unknown> | undefined
}

/** What one pull commits: the sync state and outbox after it, and the log when it changed. */
export interface PullCommit {
  sessionId: string
  /** The session row's `rev` the pull was folded against (undefined: no such session then). */
  expectRev: number | undefined
  /** The producer epoch of the engine committing (an engine fenced meanwhile commits nothing). */
  epoch: number
  state: SyncStateRow
  outbox: readonly SyncOutboxRow[]
  log?: RewrittenLog
  /**
   * Events other devices wrote, appended after the log as it stands (nothing of it changes):
   * the rows they create or change, the session row and folds after them.
   */
  append?: RewrittenLog
}

/**
 * Commits a pull in one transaction: the log (when it changed: every event, row and fold of the
 * session replaced, the receipts' promoted seqs moved with their rows), the cursor and the
 * outbox. Answers false, writing nothing, when the session changed since it was read.
 */
export function commitPull(db: SessionlineDb, commit: PullCommit): Promise<boolean> {
  const { sessionId, log } = commit
  const tables = [db.sessions, db.events, db.messages, db.projections, db.inputs, db.syncState, db.syncOutbox]
  return db.transaction('rw', tables, async () => {
    const [row, state] = await Promise.all([db.sessions.get(sessionId), db.syncState.get(sessionId)])
    if (row?.rev !== commit.expectRev || state?.epoch !== commit.epoch) return false
    // The outbox rows written carry their sends as the pull read them (`readSyncView` folded
    // the state's marks in), so the marks start over.
    const { sends: _sends, ...cursor } = commit.state
    const writes: Promise<unknown>[] = [
      db.syncState.put(cursor),
      db.syncOutbox
        .where('[sessionId+fromSeq]')
        .between(...range(sessionId))
        .delete()
        .then(async () => {
          if (commit.outbox.length > 0) await db.syncOutbox.bulkAdd([...commit.outbox])
        }),
    ]
    if (commit.append) {
      const { append } = commit
      // Rows are put by id (an event may change a row it already has): one whose id another
      // session holds would be taken from it, so that is refused first.
      await assertRowIdsFree(db, sessionId, append.rows)
      await db.projections
        .where('[sessionId+name]')
        .between(...range(sessionId))
        .delete()
      writes.push(
        db.sessions.put(append.row),
        db.events.bulkAdd([...append.events]),
        append.rows.length > 0 ? db.messages.bulkPut([...append.rows]) : Promise.resolve(),
        Promise.resolve(append.putFolds()),
      )
    }
    if (log) {
      if (row !== undefined && row.source !== 'native')
        throw new SessionlineError(
          'invalid_state',
          `session ${sessionId} is imported; only native sessions sync`,
        )
      const [lower, upper] = range(sessionId)
      await Promise.all([
        db.events.where('[sessionId+seq]').between(lower, upper).delete(),
        db.messages.where('[sessionId+seq]').between(lower, upper).delete(),
        db.projections.where('[sessionId+name]').between(lower, upper).delete(),
      ])
      writes.push(
        db.sessions.put(log.row),
        db.events.bulkAdd([...log.events]),
        // This session's rows are gone by now: an id still held is another session's.
        log.rows.length > 0
          ? db.messages.bulkAdd([...log.rows]).catch((error: unknown) => {
              throw isConstraintError(error) ? rowIdsTaken(sessionId, error) : error
            })
          : Promise.resolve(),
        Promise.resolve(log.putFolds()),
        movePromotedSeqs(db, sessionId, log.rows),
      )
    }
    await Promise.all(writes)
    return true
  })
}

/**
 * The stream's rows take ids another session of this database holds (row ids are global, DESIGN
 * §10): a stream forked on the server from a session this device holds, or batches copied from
 * another session's stream. A `conflict`; the pull's transaction writes nothing.
 */
function rowIdsTaken(sessionId: string, cause: unknown, rowId?: string): SessionlineError {
  return new SessionlineError(
    'conflict',
    `the stream of session ${sessionId} holds rows whose ids another session here holds${rowId ? ` (${rowId})` : ''}: a stream forked from a session this database holds?`,
    { sessionId, ...(rowId ? { rowId } : {}) },
    cause === undefined ? undefined : { cause },
  )
}

/** What an add of a key already held fails with (one add, or some of a bulk add). */
const isConstraintError = (error: unknown) => {
  const name = (error as { name?: string } | undefined)?.name
  return name === 'ConstraintError' || name === 'BulkError'
}

async function assertRowIdsFree(db: SessionlineDb, sessionId: string, rows: readonly SessionMessage[]) {
  if (rows.length === 0) return
  const held = await db.messages.bulkGet(rows.map((r) => r.id))
  const taken = held.find((r) => r !== undefined && r.sessionId !== sessionId)
  if (taken) throw rowIdsTaken(sessionId, undefined, taken.id)
}

/** Receipts promoted into rows that a rewrite moved take their rows' new seqs. */
async function movePromotedSeqs(db: SessionlineDb, sessionId: string, rows: readonly SessionMessage[]) {
  const seqOf = new Map(rows.map((r) => [r.id, r.seq]))
  const receipts = await db.inputs
    .where('[sessionId+seq]')
    .between(...range(sessionId))
    .toArray()
  const moved: InputReceipt[] = []
  for (const r of receipts) {
    const seq = seqOf.get(r.id)
    if (r.status === 'promoted' && seq !== undefined && r.promotedSeq !== seq)
      moved.push({ ...r, promotedSeq: seq })
  }
  if (moved.length > 0) await db.inputs.bulkPut(moved)
}

/** Local events not yet confirmed by the stream: the log past its canonical prefix. */
export function pendingCount(db: SessionlineDb, sessionId: string): Promise<number> {
  return db.transaction('r', [db.sessions, db.syncState], async () => {
    const [row, state] = await Promise.all([db.sessions.get(sessionId), db.syncState.get(sessionId)])
    return Math.max(0, (row?.headSeq ?? 0) - (state?.canonicalSeq ?? 0))
  })
}

/** Forgets a session's sync state and outbox (nothing of its log changes). */
export function forgetSync(db: SessionlineDb, sessionId: string): Promise<void> {
  logs.get(db)?.delete(sessionId)
  return db.transaction('rw', [db.syncState, db.syncOutbox], async () => {
    await Promise.all([
      db.syncState.delete(sessionId),
      db.syncOutbox
        .where('[sessionId+fromSeq]')
        .between(...range(sessionId))
        .delete(),
    ])
  })
}
