/**
 * What a synced session's next step writes, decided from one read of it (docs/decisions/0036).
 * Pure: the loop reads a `SyncView`, these functions decide, the store commits in one
 * transaction.
 *
 * - `planCut`: this device's settled events not yet in a batch become outbox batches.
 * - `planPull`: messages read from the stream are folded into the canonical log; the local log
 *   becomes the canonical log followed by this device's unconfirmed batches, rebased on it.
 * - `planCursorPull`: messages that hold no batch (claims, inputs, garbage) move only the cursor
 *   and the claim; the log is neither read nor folded.
 *
 * @example
 *   const entries = planCut(view, () => nanoid())
 *   const plan = planPull(view, read.messages, read.nextOffset)
 */
import { foldCheckedEvents, foldEvents, initFolds } from '../core/folds'
import { evolveTree, headOf, placeRows, replayTree } from '../core/history-tree'
import type { ClaimFold } from '../core/sync-claim'
import {
  batchKey,
  type CanonicalState,
  canonicalOf,
  foldBatch,
  foldMessage,
  nonBatchOutcome,
  toSyncEvents,
} from '../core/sync-rebase'
import type { StoredEvent } from '../schema/events'
import type { SessionMessage } from '../schema/messages'
import { SYNC_BATCH_VERSION, type SyncBatch } from '../schema/sync'
import type { SessionRow, SyncOutboxRow, SyncStateRow } from '../store/db'
import type { PullCommit, RewrittenLog, SyncView } from '../store/sync'

/** Events per batch, unless one turn alone is longer (a batch ends only between turns). */
export const MAX_BATCH_EVENTS = 500

/** The seq up to which the local log is canonical or already in the outbox. */
export const batchedThrough = (view: Pick<SyncView, 'state' | 'outbox'>): number =>
  Math.max(view.state?.canonicalSeq ?? 0, view.outbox.at(-1)?.toSeq ?? 0)

/**
 * Outbox batches for the settled events after `batchedThrough`: each ends where no turn is open,
 * so a turn still running stays out until it ends.
 */
export function planCut(
  view: SyncView,
  newBatchId: () => string,
  maxEvents = MAX_BATCH_EVENTS,
): SyncOutboxRow[] {
  const state = view.state
  if (!state || !view.row) return []
  const from = batchedThrough(view)
  const events = view.events
  if (events.length <= from) return []
  let tree = replayTree(events.slice(0, from))
  let lastTurn = 0
  for (let i = 0; i < from; i++) {
    const e = events[i]!
    if (e.type === 'turn/start') lastTurn = e.data.turn
  }
  const entries: SyncOutboxRow[] = []
  let start = from
  let parentHead = headOf(tree)
  let baseTurn = lastTurn
  const cutAt = (end: number) => {
    const batch: SyncBatch = {
      v: SYNC_BATCH_VERSION,
      kind: 'batch',
      device: state.deviceId,
      batchId: newBatchId(),
      parentHead,
      baseTurn,
      events: toSyncEvents(events.slice(start, end)),
    }
    entries.push({ sessionId: state.sessionId, fromSeq: start + 1, toSeq: end, batch })
    start = end
  }
  let open = false
  /** The last point after `start` where no turn was open (-1: none yet). */
  let settledEnd = -1
  for (let i = from; i < events.length; i++) {
    const e = events[i]!
    if (e.type === 'turn/start') {
      open = true
      lastTurn = e.data.turn
    } else if (e.type === 'turn/end') open = false
    tree = evolveTree(tree, e)
    if (open) continue
    settledEnd = i + 1
    if (settledEnd - start >= maxEvents) {
      cutAt(settledEnd)
      parentHead = headOf(tree)
      baseTurn = lastTurn
    }
  }
  // What settled before a turn still running leaves now; the running turn waits for its end.
  if (settledEnd > start) cutAt(settledEnd)
  return entries
}

/**
 * The outbox entry `message` is, when it is this device's next batch exactly as stored and lands
 * right after `canonicalThrough`, where the local log has it. The local log up to there is the
 * canonical log, so folding the batch there gives the very events the log holds after it (a
 * batch the device wrote there is appended as written; one a rewrite rebased was rebased on this
 * same log): they need neither the schema check nor the fold again.
 */
function ownBatchAt(
  view: SyncView,
  canonicalThrough: number,
  message: unknown,
  seen: ReadonlySet<string>,
): SyncOutboxRow | undefined {
  const entry = view.outbox.find((o) => o.fromSeq === canonicalThrough + 1)
  if (entry === undefined || entry.toSeq > view.events.length || seen.has(batchKey(entry.batch)))
    return undefined
  const m = message as Partial<SyncBatch> | null
  if (
    typeof m !== 'object' ||
    m === null ||
    m.batchId !== entry.batch.batchId ||
    m.device !== entry.batch.device
  )
    return undefined
  return JSON.stringify(message) === JSON.stringify(entry.batch) ? entry : undefined
}

/**
 * The sync state after `messages` when none of them is a batch: the cursor moves to
 * `nextOffset`, garbage is counted as skipped (as `planPull` counts it) and the claim is the one
 * folded from them. Undefined when a message says it is a batch: then `planPull` folds the read.
 * Nothing of the log is needed, so an idle session's pull (claims, inputs, or a long-poll that
 * ended empty) reads no event and folds nothing.
 */
export function planCursorPull(
  state: SyncStateRow,
  messages: readonly unknown[],
  nextOffset: string,
  claim: ClaimFold,
): SyncStateRow | undefined {
  let skipped = state.skipped
  let lastSkip = state.lastSkip
  for (const message of messages) {
    const outcome = nonBatchOutcome(message)
    if (outcome === undefined) return undefined
    if (outcome.kind === 'skipped') {
      skipped++
      lastSkip = outcome.reason
    }
  }
  return { ...state, offset: nextOffset, skipped, ...(lastSkip !== undefined ? { lastSkip } : {}), claim }
}

/** The comparable part of an event: what a device wrote, not where it stands. */
const sameEvent = (a: StoredEvent, b: StoredEvent) =>
  a.type === b.type && a.at === b.at && JSON.stringify(a.data) === JSON.stringify(b.data)

/** What a pull does. */
export type PullPlan =
  /** Local events are not all in batches yet (a turn is open, or a cut is due): cut or wait first. */
  | { kind: 'not-settled' }
  | {
      kind: 'commit'
      commit: PullCommit
      /** The local log was rewritten (or created): caches and views reload. */
      rewritten: boolean
      /** Others' events were appended after the log (from `fromHead`): these rows are new or changed. */
      appended?: { rows: readonly SessionMessage[]; fromHead: number }
      /** This device's batches that no longer fold on the canonical log (their events left the log). */
      dropped: { batchId: string; reason: string }[]
    }

/** A session row for a log the sync wrote. */
function rowFor(old: SessionRow | undefined, sessionId: string, events: readonly StoredEvent[]): SessionRow {
  const first = events[0]!
  const last = events.at(-1)!
  if (!old) {
    return {
      id: sessionId,
      title: first.type === 'session/created' ? first.data.title : '',
      createdAt: first.at,
      updatedAt: last.at,
      headSeq: events.length,
      nextInputSeq: 1,
      source: 'native',
      rev: 1,
      rebased: 1,
    }
  }
  const { lagging: _lagging, ...kept } = old
  return {
    ...kept,
    headSeq: events.length,
    updatedAt: Math.max(old.updatedAt, last.at),
    rev: old.rev + 1,
    rebased: (old.rebased ?? 0) + 1,
  }
}

/**
 * Folds `messages` (read from the stream after the state's offset) into the canonical log and
 * decides the local log: unchanged when what the stream confirmed is what this device already
 * had there (its own batches, nothing in between), else the canonical log followed by this
 * device's remaining batches rebased on it, all rows and folds rebuilt.
 */
export function planPull(
  view: SyncView,
  messages: readonly unknown[],
  nextOffset: string,
  putFolds: (
    sessionId: string,
    throughSeq: number,
    folds: ReturnType<typeof initFolds>,
  ) => Promise<unknown> | undefined,
): PullPlan {
  const state = view.state as SyncStateRow
  const sessionId = state.sessionId
  const local = view.events
  if (local.length > batchedThrough(view)) return { kind: 'not-settled' }
  const c = state.canonicalSeq
  const arrived: StoredEvent[] = []
  // This device's own batches, arriving where its log has them, are confirmed without being
  // checked and folded again (`ownBatchAt`); the canonical state is folded from the local log
  // only once something else arrives, or a rewrite needs it.
  const seen = new Set(state.seen)
  let ownThrough = c
  let canonical: CanonicalState | undefined
  let before: CanonicalState | undefined
  const foldedThrough = (): CanonicalState => {
    if (canonical === undefined) {
      canonical = canonicalOf(sessionId, local.slice(0, ownThrough), seen)
      if (ownThrough === c) before = canonical
    }
    return canonical
  }
  let skipped = state.skipped
  let lastSkip = state.lastSkip
  for (const message of messages) {
    if (canonical === undefined) {
      const own = ownBatchAt(view, ownThrough, message, seen)
      if (own !== undefined) {
        seen.add(batchKey(own.batch))
        arrived.push(...local.slice(own.fromSeq - 1, own.toSeq))
        ownThrough = own.toSeq
        continue
      }
    }
    const step = foldMessage(foldedThrough(), message)
    canonical = step.state
    if (step.outcome.kind === 'appended') arrived.push(...step.outcome.events)
    else if (step.outcome.kind === 'skipped') {
      skipped++
      lastSkip = step.outcome.reason
    }
  }
  const canonSeq = canonical?.seq ?? ownThrough
  const canonSeen = canonical?.seen ?? seen
  const remaining = view.outbox.filter((o) => !canonSeen.has(batchKey(o.batch)))
  const next: SyncStateRow = {
    ...state,
    offset: nextOffset,
    canonicalSeq: canonSeq,
    seen: [...canonSeen],
    skipped,
    ...(lastSkip !== undefined ? { lastSkip } : {}),
  }
  const base = { sessionId, expectRev: view.row?.rev, epoch: state.epoch, state: next }
  const confirmed = arrived.every((e, i) => {
    const mine = local[c + i]
    return mine !== undefined && (mine === e || sameEvent(e, mine))
  })
  // In a branched session the rows a device wrote as it went carry branch places the way the
  // verbs and the write path left them (an inactive row's count may lag, docs/decisions/0033),
  // while a replay places every row by the whole tree: once anything of a branched session is
  // canonical, its rows are rebuilt here too, so every device stores the replay's rows.
  // (The branching fold marks a session branched at its first head move or compaction.)
  const everBranched =
    canonical !== undefined
      ? canonical.folds.branching.branched === true
      : local.slice(0, ownThrough).some((e) => e.type === 'history/head' || e.type === 'history/compact')
  const branched = everBranched && arrived.length > 0
  if (confirmed && !branched) {
    return { kind: 'commit', commit: { ...base, outbox: remaining }, rewritten: false, dropped: [] }
  }
  // Others' events after a log that is all canonical, in a session never branched: appended,
  // folded forward from the canonical folds (no rebuild; caches move forward, no reset).
  if (view.row && local.length === c && remaining.length === 0 && !branched) {
    // Nothing of this device's arrived (it had nothing after c): the state was folded from c.
    const from = before ?? canonicalOf(sessionId, local.slice(0, c), state.seen)
    const folded = foldEvents(from.folds, arrived)
    const last = arrived.at(-1)!
    const row: SessionRow = {
      ...view.row,
      headSeq: canonSeq,
      updatedAt: Math.max(view.row.updatedAt, last.at),
      rev: view.row.rev + 1,
    }
    const append: RewrittenLog = {
      row,
      events: arrived,
      rows: folded.rows,
      putFolds: () => putFolds(sessionId, canonSeq, folded.folds),
    }
    return {
      kind: 'commit',
      commit: { ...base, outbox: [], append },
      rewritten: false,
      appended: { rows: folded.rows, fromHead: c },
      dropped: [],
    }
  }
  // Rewrite: the canonical log, then this device's batches the stream has not folded yet.
  const events = [...local.slice(0, c), ...arrived]
  const outbox: SyncOutboxRow[] = []
  const dropped: { batchId: string; reason: string }[] = []
  let spec = foldedThrough()
  for (const entry of remaining) {
    const folded = foldBatch(spec, entry.batch)
    if (folded.outcome.kind !== 'appended') {
      dropped.push({
        batchId: entry.batch.batchId,
        reason: folded.outcome.kind === 'skipped' ? folded.outcome.reason : 'already folded',
      })
      continue
    }
    outbox.push({ ...entry, fromSeq: spec.seq + 1, toSeq: folded.state.seq })
    events.push(...folded.outcome.events)
    spec = folded.state
  }
  if (events.length === 0) return { kind: 'commit', commit: { ...base, outbox }, rewritten: false, dropped }
  const folded = foldCheckedEvents(initFolds(), events)
  const rows = placeRows(folded.rows, replayTree(events))
  const row = rowFor(view.row, sessionId, events)
  const log: RewrittenLog = {
    row,
    events,
    rows,
    putFolds: () => putFolds(sessionId, events.length, folded.folds),
  }
  return { kind: 'commit', commit: { ...base, outbox, log }, rewritten: true, dropped }
}
