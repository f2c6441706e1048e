/**
 * The canonical log of a synced session (docs/decisions/0036): a pure, deterministic fold over
 * the stream's batches in stream order. Every device folds the same stream, so every device
 * computes the same log, rows and head.
 *
 * A batch that follows the canonical log as it stands (its device saw this head and this last
 * turn) is appended as it is. Otherwise it is rebased: a `history/head {cause: 'switch'}` to the
 * row the device stood on goes first, so the batch's rows become a sibling branch there
 * (docs/decisions/0033), and its turn numbers move up past the canonical last turn, so turn
 * numbers stay unique and growing. Two devices that ran turns while apart thus leave two
 * branches, never an interleaving, and the later batch in stream order holds the head.
 *
 * A batch that does not fold (a grammar violation after the rebase, a row id taken, a parent
 * row the log does not hold, a second `session/created`) is skipped whole, the same way on
 * every device; a batch seen before (a restarted engine sends its outbox again) is ignored.
 *
 * @example
 *   let state = initCanonical('s1')
 *   for (const batch of batches) state = foldBatch(state, batch).state
 */
import type { SessionEvent, StoredEvent } from '../schema/events'
import { SyncBatch, type SyncEvent } from '../schema/sync'
import { SyncCoordination } from '../schema/sync-claim'
import { type Folds, foldCheckedEvents, initFolds } from './folds'
import { childCount, evolveTree, type HistoryTree, hasRow, headOf, replayTree } from './history-tree'
import { rowIdsCreated } from './ids'

/** What the fold needs to place the next batch: the canonical log's folds, tree and batches. */
export interface CanonicalState {
  readonly sessionId: string
  /** Seq of the last canonical event (0: empty). */
  readonly seq: number
  readonly folds: Folds
  readonly tree: HistoryTree
  /** `${device}/${batchId}` of every batch folded in. */
  readonly seen: ReadonlySet<string>
}

/** What one stream message did to the canonical log. */
export type BatchOutcome =
  | { kind: 'appended'; events: StoredEvent[]; rebased: boolean }
  | { kind: 'duplicate' }
  | { kind: 'skipped'; reason: string }
  /** A claim or an input (`src/core/sync-claim.ts` folds those): nothing for the log. */
  | { kind: 'coordination' }

export const initCanonical = (sessionId: string): CanonicalState => ({
  sessionId,
  seq: 0,
  folds: initFolds(),
  tree: replayTree([]),
  seen: new Set(),
})

/** The canonical state after a log already known to be canonical (e.g. the local prefix 1..C). */
export function canonicalOf(
  sessionId: string,
  events: readonly StoredEvent[],
  seen: Iterable<string>,
): CanonicalState {
  return {
    sessionId,
    seq: events.length,
    folds: foldCheckedEvents(initFolds(), events).folds,
    tree: replayTree(events),
    seen: new Set(seen),
  }
}

export const batchKey = (batch: Pick<SyncBatch, 'device' | 'batchId'>) => `${batch.device}/${batch.batchId}`

/** The turn number an event names, moved by `delta`. */
function renumbered(event: SyncEvent, delta: number): SyncEvent {
  if (delta === 0) return event
  switch (event.type) {
    case 'turn/start':
    case 'turn/end':
    case 'step/start':
    case 'step/end':
    case 'assistant/start':
      return { ...event, data: { ...event.data, turn: event.data.turn + delta } } as SyncEvent
    default:
      return event
  }
}

/** The events `batch` brings to a log in `state`: as written, or rebased; a reason when it cannot. */
export function placeBatch(state: CanonicalState, batch: SyncBatch): SyncEvent[] | string {
  const head = headOf(state.tree)
  const lastTurn = state.folds.transcript.lastTurn
  const delta = lastTurn - batch.baseTurn
  const events = batch.events.map((e) => renumbered(e, delta))
  if (batch.parentHead === head) return events
  if (batch.parentHead !== null && !hasRow(state.tree, batch.parentHead))
    return `parent row ${batch.parentHead} is not in the log`
  const children = childCount(state.tree, batch.parentHead)
  const switchTo: SyncEvent = {
    type: 'history/head',
    data: { head: batch.parentHead, cause: 'switch', ...(children > 0 ? { children } : {}) },
    at: batch.events[0]!.at,
  }
  return [switchTo, ...events]
}

/** Why these events cannot extend a log in `state`, beyond the grammar `foldCheckedEvents` checks. */
function refusal(state: CanonicalState, events: readonly SessionEvent[]): string | undefined {
  const created = events.findIndex((e) => e.type === 'session/created')
  if (state.seq === 0 && created !== 0) return 'the log must open with session/created'
  if (state.seq > 0 && created >= 0) return 'session/created after the log opened'
  const ids = rowIdsCreated(events)
  const fresh = new Set<string>()
  for (const id of ids) {
    if (fresh.has(id) || hasRow(state.tree, id)) return `row id ${id} is already in the log`
    fresh.add(id)
  }
  return undefined
}

/** Folds one batch into the canonical log. Pure; `state` is never changed. */
export function foldBatch(
  state: CanonicalState,
  batch: SyncBatch,
): { state: CanonicalState; outcome: BatchOutcome } {
  const key = batchKey(batch)
  if (state.seen.has(key)) return { state, outcome: { kind: 'duplicate' } }
  const placed = placeBatch(state, batch)
  if (typeof placed === 'string') return { state, outcome: { kind: 'skipped', reason: placed } }
  const refused = refusal(state, placed)
  if (refused !== undefined) return { state, outcome: { kind: 'skipped', reason: refused } }
  const stored = placed.map(
    (e, i) => ({ ...e, sessionId: state.sessionId, seq: state.seq + 1 + i }) as StoredEvent,
  )
  let folds: Folds
  try {
    folds = foldCheckedEvents(state.folds, stored).folds
  } catch (error) {
    return { state, outcome: { kind: 'skipped', reason: (error as Error).message } }
  }
  // A batch is settled: it must leave no turn open, or the next device's batch could not follow.
  if (folds.transcript.openTurn !== null)
    return { state, outcome: { kind: 'skipped', reason: `turn ${folds.transcript.openTurn} is left open` } }
  let tree = state.tree
  for (const e of stored) {
    // The tree ignores a head move to a row it does not hold; a batch must not rely on that.
    const named =
      e.type === 'history/head' ? e.data.head : e.type === 'history/compact' ? e.data.throughId : null
    if (named !== null && !hasRow(tree, named))
      return {
        state,
        outcome: { kind: 'skipped', reason: `${e.type} names row ${named}, which is not in the log` },
      }
    tree = evolveTree(tree, e)
  }
  const seen = new Set(state.seen)
  seen.add(key)
  return {
    state: { sessionId: state.sessionId, seq: state.seq + stored.length, folds, tree, seen },
    outcome: { kind: 'appended', events: stored, rebased: placed.some((e, i) => e !== batch.events[i]) },
  }
}

/** Folds one stream message as read (any JSON): what is neither a batch nor a claim or input is skipped. */
export function foldMessage(
  state: CanonicalState,
  message: unknown,
): { state: CanonicalState; outcome: BatchOutcome; batch?: SyncBatch } {
  const parsed = SyncBatch.safeParse(message)
  if (!parsed.success) return { state, outcome: notBatchOutcome(message, parsed.error) }
  return { ...foldBatch(state, parsed.data), batch: parsed.data }
}

function notBatchOutcome(message: unknown, error: { issues: readonly { message: string }[] }): BatchOutcome {
  if (SyncCoordination.safeParse(message).success) return { kind: 'coordination' }
  return { kind: 'skipped', reason: `not a batch: ${error.issues[0]?.message ?? 'malformed'}` }
}

/**
 * What `foldMessage` does with a message that does not say it is a batch (its `kind` is not
 * `'batch'`): a claim or an input, or a message skipped whole. Neither needs the canonical
 * state, so a pull that brings only such messages folds nothing of the log. Undefined for a
 * message that says it is a batch (it may fold, or be skipped as a malformed batch).
 */
export function nonBatchOutcome(message: unknown): BatchOutcome | undefined {
  if (typeof message === 'object' && message !== null && (message as { kind?: unknown }).kind === 'batch')
    return undefined
  const parsed = SyncBatch.safeParse(message)
  return parsed.success ? undefined : notBatchOutcome(message, parsed.error)
}

/** Reference: the canonical log of a whole stream, folded message by message. */
export function replayStream(sessionId: string, messages: Iterable<unknown>): StoredEvent[] {
  let state = initCanonical(sessionId)
  const log: StoredEvent[] = []
  for (const message of messages) {
    const folded = foldMessage(state, message)
    state = folded.state
    if (folded.outcome.kind === 'appended') log.push(...folded.outcome.events)
  }
  return log
}

/** A local log's events as a batch carries them (no session id, no seq). */
export const toSyncEvents = (events: readonly StoredEvent[]): SyncEvent[] =>
  events.map(({ sessionId: _s, seq: _q, ...rest }) => rest as SyncEvent)
