import type { Engine, Unsubscribe } from '../engine/types'
import type { ApprovalAnswer } from '../schema/approvals'
import type { AttachmentInput } from '../schema/attachments'
import type { Delivery } from '../schema/common'
import type { SessionlineError } from '../schema/errors'
import type {
  BranchesAnswer,
  CompactRequest,
  ContextAnswer,
  ForkRequest,
  RewindAnswer,
} from '../schema/history'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionInfo, TurnOutlineEntry } from '../schema/session'
import type { SyncStatus } from '../schema/sync'
import type { RailItem } from '../view/rail'

/** State of an input the page admitted and the transcript has not taken yet. */
export type InputState = 'sending' | 'pending' | 'failed'

/**
 * A file of an input in the inbox. While the input is `sending` (or `failed`) only the page has
 * it: `data` holds the bytes (for a thumbnail) and there is no `attachmentId` yet; once the
 * engine answered it is the receipt's `file` part.
 */
export interface TimelineFile {
  name: string
  mediaType: string
  size: number
  attachmentId?: string
  data?: Blob | ArrayBuffer
}

export interface TimelineInput {
  id: string
  text: string
  delivery: Delivery
  state: InputState
  /** Admission seq once the worker answered. */
  seq?: number
  error?: SessionlineError
  /** Files admitted with the text (docs/decisions/0031); absent when none. */
  attachments?: readonly TimelineFile[]
}

export type { RailItem }

/**
 * One row of the timeline: a transcript row, an input still in the inbox, or a gap between two
 * loaded segments (seqs `fromSeq` through `toSeq` not loaded; `view.loadGap(key, …)` pages it in).
 * A message's or input's `key` never changes; a gap's key is stable while the row below it is.
 */
export type TimelineRow =
  | { key: string; kind: 'message'; message: SessionMessage }
  | { key: string; kind: 'input'; input: TimelineInput }
  | { key: string; kind: 'gap'; fromSeq: number; toSeq: number }

export type GapRow = Extract<TimelineRow, { kind: 'gap' }>

/** Which end of a gap to page in from: `older` extends the segment above it downwards, `newer` the one below upwards. */
export type GapEnd = 'older' | 'newer'

export interface TimelineSnapshot {
  /**
   * `reconnecting`: the worker died and a fresh one is starting (rows stay shown, admits wait
   * for it). `upgraded`: a newer version of the app upgraded the database in another tab; this
   * view has stopped and `error` says to reload (its code `storage_unavailable`, `details.reason`
   * 'upgraded').
   */
  status: 'loading' | 'ready' | 'error' | 'reconnecting' | 'upgraded'
  error?: SessionlineError
  /**
   * Loaded transcript rows in seq order, then pending steers in admission order. After a
   * `jumpTo` the rows may form several segments with a `gap` row between each two (never
   * before the first or after the last segment); every segment is contiguous.
   */
  rows: readonly TimelineRow[]
  /** Queued inputs in inbox order (the queue tray): admission order unless `reorder` moved some. */
  queued: readonly TimelineInput[]
  /**
   * The loaded part of the turn outline, ascending by turn: its newest entries at first (a tail
   * slice), more as `loadOutline` reads them. Every entry after the first loaded one is here.
   */
  outline: readonly TurnOutlineEntry[]
  /**
   * How many outline entries come before `outline`, not loaded yet (0 once it is whole): a rail
   * sized to `outlineBefore + rail.length` marks covers the whole session, and calls
   * `loadOutline` when it scrolls into them.
   */
  outlineBefore: number
  /** A mark per turn of `outline` (and of the loaded rows), in turn order; see `mergeTurnRailItems`. */
  rail: readonly RailItem[]
  baseSeq: number
  headSeq: number
  hasOlder: boolean
  loadingOlder: boolean
  /** The session's sync status, once the engine syncs it (`engine.sync`, docs/decisions/0036). */
  sync?: SyncStatus
}

export interface SessionView {
  readonly sessionId: string
  subscribe(listener: () => void): Unsubscribe
  /** Stable between changes (safe for `useSyncExternalStore`). */
  getSnapshot(): TimelineSnapshot
  /** Shows the row synchronously; resolves to the durable receipt. */
  admit(
    text: string,
    options?: { delivery?: Delivery; id?: string; attachments?: readonly AttachmentInput[] },
  ): Promise<InputReceipt>
  cancel(inputId: string): Promise<void>
  edit(inputId: string, text: string): Promise<void>
  loadOlder(): Promise<void>
  /**
   * Loads older rows until `seq` is loaded (through any gap on the way), contiguously below the
   * window. Called in the task that opened the view, it rides the first read: one round trip.
   */
  loadThrough(seq: number): Promise<void>
  /**
   * Loads the neighbourhood of `seq` (the turn that holds it, a page either side) without the
   * history in between: the window may then have a gap. Resolves once the row at or after `seq`
   * is in `rows`.
   */
  jumpTo(seq: number): Promise<void>
  /** Pages a gap in from one end (`older`: below the segment above it; `newer`: above the one below). */
  loadGap(key: string, end: GapEnd): Promise<void>
  /**
   * Loads the outline from position `from` (0: the first turn) up to its loaded part, for a rail
   * scrolled above what it holds; resolves once `outlineBefore <= from`. Concurrent calls share
   * one read.
   */
  loadOutline(from: number): Promise<void>
  interrupt(): Promise<void>
  /**
   * Answers a tool call of this session that waits for approval (a tool part in state
   * `awaiting-approval`); see `Engine.respondToApproval`. A call that waits no more is
   * `invalid_state`.
   */
  respondToApproval(callId: string, answer: ApprovalAnswer): Promise<void>
  /**
   * History (docs/decisions/0033): user row `messageId` again as `text`, on a new branch whose
   * turn runs. The new prompt shows at once under `id` (default: a new one), its row's key.
   */
  resend(messageId: string, request: { text: string; id?: string }): Promise<InputReceipt>
  /** History: a new answer on a new branch to the prompt assistant row `messageId` answered (or user row `messageId`). */
  regenerate(messageId: string): Promise<void>
  /** History: the newest path through row `messageId` becomes the head; rows keep their keys. */
  switchBranch(messageId: string): Promise<void>
  /** History: row `messageId` and its siblings in creation order (see `Engine.branches`). */
  branches(messageId: string): Promise<BranchesAnswer>
  /** History: back to just before user row `messageId`; answers its text for the composer. */
  rewind(messageId: string): Promise<RewindAnswer>
  /** History: a new native session with this one's visible path (also continues an imported session). */
  fork(options?: ForkRequest): Promise<SessionInfo>
  /** History: a summary row replaces the active path through `throughSeq` (default: all); answers the row. */
  compact(options?: CompactRequest): Promise<SessionMessage>
  /** Inbox: moves pending input `inputId` before pending input `before` (`null`: the end); the tray shows it there at once. */
  reorder(inputId: string, request: { before: string | null }): Promise<InputReceipt>
  /** Inbox: makes pending input `inputId` a steer or a queued input in place; shown at once. */
  setDelivery(inputId: string, delivery: Delivery): Promise<InputReceipt>
  /** What the model gets at the next step (see `Engine.context`). */
  context(): Promise<ContextAnswer>
  dispose(): void
}

export interface OpenOptions {
  /** Rows of the first tail page (default 50). */
  tail?: number
  includeInactive?: boolean
}

/** The page-side client: every engine call, plus `open`. */
export interface SessionlineClient extends Omit<Engine, 'watch' | 'close'> {
  watch: Engine['watch']
  open(sessionId: string, options?: OpenOptions): SessionView
  /** Disposes every view and releases the worker connection (does not terminate the worker). */
  close(): Promise<void>
}
