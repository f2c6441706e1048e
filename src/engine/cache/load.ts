/**
 * Cold load and rebuild of a session's cached state: the stored fold states when their versions
 * are current, else one replay of the log (a native session) or a derivation from its rows (an
 * imported one), stored back under a new `rev`. Also the in-transaction reads a write falls
 * back to when the cache is behind.
 */
import { CACHED_FOLDS, FOLD_NAMES, type FoldName, type Folds, foldEvents, initFolds } from '../../core/folds'
import {
  hydrateTranscript,
  patchFrom,
  patchLagging,
  type StoredTranscript,
  storedTranscript,
  storesSame,
  WHOLE_ROWS_TRANSCRIPT,
} from '../../core/materialize'
import type { TranscriptState } from '../../core/transcript'
import type { OutlineState } from '../../core/turn-outline'
import type { SessionMessage } from '../../schema/messages'
import type { ProjectionRow, SessionlineDb, SessionRow } from '../../store/db'
import { currentReadHint, type ReadHint } from '../../store/read-hint'
import {
  eventsBetween,
  getSessionRow,
  inRead,
  inWrite,
  type ListTail,
  logBetween,
  pendingReceipts,
  projectionStates,
  putProjectionStates,
} from '../../store/transactions'
import { importedFoldStates } from '../importing'
import type { Notes } from '../notes'
import { notFound, type Snapshot } from './entries'

/**
 * The folds' chunked lists, whose last chunks a load reads beside the fold heads: the outline's
 * entries, the one fold state that grows with the session (issue 28: one round trip less).
 */
export const FOLD_LISTS: readonly ListTail[] = [
  { name: 'turnOutline', key: 'entries' } satisfies { name: FoldName; key: keyof OutlineState },
]

/** Events read per transaction when a projection is rebuilt from the log. */
export const REBUILD_BATCH = 5000

/**
 * `rows`, read with `session`, as a reader must see them: every lagging one patched with the
 * deltas logged after its stored version up to the session's head (docs/decisions/0021). Reads
 * the log only when a row lags, in the transaction in progress if it spans the log.
 */
export async function currentRows(
  db: SessionlineDb,
  session: SessionRow,
  rows: readonly SessionMessage[],
): Promise<SessionMessage[]> {
  const from = patchFrom(
    session.lagging,
    rows.map((row) => row.id),
  )
  if (from === undefined) return rows as SessionMessage[]
  const events = await logBetween(db, session.id, from, session.headSeq)
  return patchLagging(rows, session.lagging, events)
}

/** The folds of `folds` that `putFolds` stores over `previous` (all of them without it). */
export const foldsToStore = (folds: Folds, previous?: Folds): FoldName[] =>
  FOLD_NAMES.filter((name) =>
    // The transcript is stored without its rows' text: a delta leaves the stored state as it was.
    name === 'transcript'
      ? !previous || !storesSame(folds.transcript, previous.transcript)
      : folds[name] !== previous?.[name],
  )

/**
 * The read hint (store/read-hint.ts) of `row` as stored with the state `next`: the pending
 * receipts it holds, and the transcript fold in this code's version when `putFolds` stores it
 * over `previous` (always, without one), else in the version `previous.row`'s hint says.
 */
export function readHintAfter(
  row: { rev: number },
  next: { folds: Folds; pending: readonly unknown[] },
  previous?: { folds: Folds; row: SessionRow },
): ReadHint {
  const stored = !previous || foldsToStore(next.folds, previous.folds).includes('transcript')
  const transcript = stored
    ? CACHED_FOLDS.transcript.version
    : previous && currentReadHint(previous.row)?.transcript
  const hint: ReadHint = { rev: row.rev, pending: next.pending.length }
  return transcript === undefined ? hint : { ...hint, transcript }
}

export type Loader = ReturnType<typeof createLoader>

export function createLoader(db: SessionlineDb, notes: Notes) {
  /**
   * Inside a transaction over `messages` and `events`: fold states from cached projection rows,
   * the transcript's open rows read back and patched; undefined when one is missing or outdated.
   */
  async function foldsFrom(
    rows: ReadonlyMap<string, ProjectionRow>,
    session: SessionRow,
  ): Promise<Folds | undefined> {
    const states: Partial<Record<FoldName, unknown>> = {}
    for (const name of FOLD_NAMES) {
      const row = rows.get(name)
      if (!row) return undefined
      const whole = name === 'transcript' && row.version === WHOLE_ROWS_TRANSCRIPT
      if (row.version !== CACHED_FOLDS[name].version && !whole) return undefined
      states[name] = row.state
    }
    const stored = rows.get('transcript') as ProjectionRow
    // Every fold is present, each stored by `putFolds` under the version its code still has.
    if (stored.version === WHOLE_ROWS_TRANSCRIPT) return states as Folds
    const transcript = await transcriptFrom(stored.state as StoredTranscript, session)
    return transcript && ({ ...states, transcript } as Folds)
  }

  async function transcriptFrom(
    stored: StoredTranscript,
    session: SessionRow,
  ): Promise<TranscriptState | undefined> {
    if (!Array.isArray(stored.open)) return undefined
    if (stored.open.length === 0) return hydrateTranscript(stored, new Map())
    const found = await db.messages.bulkGet(stored.open)
    if (found.some((row) => row === undefined || row.sessionId !== session.id)) return undefined
    const open = await currentRows(db, session, found as SessionMessage[])
    return hydrateTranscript(stored, new Map(open.map((row) => [row.id, row])))
  }

  /** Stores the folds that differ from `previous` (all of them without it). */
  function putFolds(
    sessionId: string,
    throughSeq: number,
    folds: Folds,
    previous?: Folds,
  ): Promise<unknown> | undefined {
    const changed = foldsToStore(folds, previous)
    if (changed.length === 0) return undefined
    return putProjectionStates(
      db,
      sessionId,
      throughSeq,
      changed.map((name) => ({
        name,
        version: CACHED_FOLDS[name].version,
        state: name === 'transcript' ? storedTranscript(folds.transcript) : folds[name],
        previous: name === 'transcript' ? undefined : previous?.[name],
      })),
    )
  }

  /** Cold open: cached state when it is current, else one rebuild from the log. */
  async function loadSnapshot(sessionId: string): Promise<Snapshot> {
    const stored = await inRead(db, async () => {
      // All three at once (one round trip less than reading the row first); the outline's
      // earlier chunks stay in the store: a cold open reads what a fold step needs.
      const [row, cached, pending] = await Promise.all([
        getSessionRow(db, sessionId),
        projectionStates(db, sessionId, FOLD_NAMES, FOLD_LISTS),
        pendingReceipts(db, sessionId),
      ])
      return row ? { row, cached, pending, folds: await foldsFrom(cached, row) } : undefined
    })
    if (!stored) throw notFound(sessionId)
    const { folds } = stored
    if (folds) return { row: stored.row, folds, pending: stored.pending }
    const rebuilt =
      stored.row.source === 'native'
        ? await rebuild(sessionId, stored.cached)
        : await rebuildImported(sessionId)
    notes.post({ sessionId, rev: rebuilt.row.rev })
    return rebuilt
  }

  /**
   * Replays the log in batches of REBUILD_BATCH events (one read transaction each), then writes
   * the states (and, when the transcript fold changed, the rows of a native session) in one
   * transaction that first folds whatever was appended meanwhile.
   */
  async function rebuild(sessionId: string, cached: ReadonlyMap<string, ProjectionRow>): Promise<Snapshot> {
    const transcriptVersion = cached.get('transcript')?.version
    const transcriptStale =
      transcriptVersion !== CACHED_FOLDS.transcript.version && transcriptVersion !== WHOLE_ROWS_TRANSCRIPT
    let folds = initFolds()
    const rows = new Map<string, SessionMessage>()
    let through = 0
    for (;;) {
      const events = await inRead(db, () => eventsBetween(db, sessionId, through, undefined, REBUILD_BATCH))
      const folded = foldEvents(folds, events)
      folds = folded.folds
      for (const row of folded.rows) rows.set(row.id, row)
      through = events.at(-1)?.seq ?? through
      if (events.length < REBUILD_BATCH) break
    }
    return inWrite(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      const rest = await eventsBetween(db, sessionId, through)
      const folded = foldEvents(folds, rest)
      for (const r of folded.rows) rows.set(r.id, r)
      // Imported sessions hold rows that no event produced; only a native log can rewrite them.
      if (transcriptStale && row.source === 'native') {
        await db.messages
          .where('[sessionId+seq]')
          .between([sessionId, 0], [sessionId, Number.POSITIVE_INFINITY])
          .delete()
        // Every row is stored whole again: none lags.
        const { lagging: _lagging, ...current } = row
        return storeRebuilt(current, folded.folds, db.messages.bulkPut([...rows.values()]))
      }
      return storeRebuilt(row, folded.folds)
    })
  }

  /** An imported session has no log (docs/decisions/0005): its folds are derived from its rows. */
  async function rebuildImported(sessionId: string): Promise<Snapshot> {
    return inWrite(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      const rows = await db.messages
        .where('[sessionId+seq]')
        .between([sessionId, 0], [sessionId, Number.POSITIVE_INFINITY])
        .toArray()
      return storeRebuilt(row, importedFoldStates(rows))
    })
  }

  /**
   * Inside a rebuild's transaction: stores the rebuilt folds (and `rows`, a write already
   * issued) under a new `rev`, so a peer holding the old state reloads it.
   */
  async function storeRebuilt(row: SessionRow, folds: Folds, rows?: Promise<unknown>): Promise<Snapshot> {
    const [pending] = await Promise.all([
      pendingReceipts(db, row.id),
      putFolds(row.id, row.headSeq, folds),
      rows,
    ])
    const rev = row.rev + 1
    const next: SessionRow = { ...row, rev, readHint: readHintAfter({ rev }, { folds, pending }) }
    await db.sessions.put(next)
    return { row: next, folds, pending }
  }

  /** Inside a transaction: the session's state as stored (when the cache is behind). */
  async function snapshotInTx(sessionId: string, row: SessionRow): Promise<Snapshot> {
    const [cached, pending] = await Promise.all([
      projectionStates(db, sessionId, FOLD_NAMES, FOLD_LISTS),
      pendingReceipts(db, sessionId),
    ])
    let folds = await foldsFrom(cached, row)
    if (!folds) {
      // Another engine of a different version wrote these; replaying inside the transaction
      // keeps this write correct, and the next cold open rebuilds the cache.
      folds = foldEvents(initFolds(), await eventsBetween(db, sessionId, 0)).folds
    }
    return { row, folds, pending }
  }

  /**
   * Inside an inbox write whose cache is behind: the pending receipts as stored. Inbox writes do
   * not touch the log, so the folds are carried over unread and the cache is caught up after.
   * Those folds may predate `row`: nothing decided here may read them (the inbox rules do not,
   * and `materialize` keeps the row's lagging list whole for a commit without events).
   */
  async function inboxInTx(
    sessionId: string,
    row: SessionRow,
    cached: Snapshot | undefined,
  ): Promise<Snapshot> {
    return { row, folds: cached?.folds ?? initFolds(), pending: await pendingReceipts(db, sessionId) }
  }

  return { foldsFrom, putFolds, loadSnapshot, snapshotInTx, inboxInTx }
}
