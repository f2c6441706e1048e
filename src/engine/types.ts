import type { Folds } from '../core/folds'
import type { TurnState } from '../core/transcript'
import type { ApprovalAnswer, RevokeToolApproval, ToolApprovals } from '../schema/approvals'
import type { Delivery, Json, Usage } from '../schema/common'
import type { StorageLoss } from '../schema/errors'
import type { SessionEvent, StoredEvent } from '../schema/events'
import type {
  BranchesAnswer,
  CompactRequest,
  ContextAnswer,
  ForkRequest,
  ReorderRequest,
  ResendRequest,
  RewindAnswer,
} from '../schema/history'
import type { FileImportReport, ImportFile, ImportProgressListener, ImportRequest } from '../schema/import'
import type { AdmitRequest, EditRequest, InputReceipt } from '../schema/inputs'
import type { SessionMessage, TextAppend } from '../schema/messages'
import type { ExportRequest, StorageReport } from '../schema/portability'
import type { ConfigureRequest } from '../schema/provider'
import type {
  EventsRequest,
  FirstReadRequest,
  LoadThroughRequest,
  MessagePage,
  OutlineRequest,
  PageRequest,
  PromoteMode,
  WatchOptions,
} from '../schema/requests'
import type { SearchHit, SearchOptions } from '../schema/search'
import type {
  CreateSessionRequest,
  OutlineSlice,
  SessionInfo,
  TurnOutlineEntry,
  UsageTotals,
} from '../schema/session'
import type { SyncOptions, SyncStatus } from '../schema/sync'
import type { SessionlineDb } from '../store/db'

/** Views of the built-in projections, by name. */
export interface ProjectionViews {
  turnOutline: readonly TurnOutlineEntry[]
  usage: UsageTotals
  pending: readonly InputReceipt[]
}
export type ProjectionName = keyof ProjectionViews

/**
 * A view's first read in one answer (`Engine.firstRead`): its rows, the pending inputs and the
 * outline's newest slice, what `page` (or `loadThrough`), `pending` and `outline({})` answer.
 */
export interface FirstRead {
  page: MessagePage
  pending: InputReceipt[]
  outline: OutlineSlice
}

/**
 * The views a change carries when they changed: `usage` and `pending` whole, the outline as the
 * slice that changed (every entry from the first changed one to its end, and its new `total`).
 * A slice may start past the entries a reader holds (it was far behind: read the ones between
 * with `outline`); a `reset` change carries no outline (read it again).
 */
export interface ChangeViews {
  outline: OutlineSlice
  usage: UsageTotals
  pending: readonly InputReceipt[]
}

/**
 * What one committed write (or, with `durable: false`, one live streaming preview) changed in
 * a session. Listeners get these in commit order.
 */
export interface SessionChange {
  sessionId: string
  /** false: a live preview of streamed text not yet in the log; the next durable change supersedes it. */
  durable: boolean
  headSeq: number
  /** Transcript rows created or updated, ascending by seq (upsert by id). */
  rows: readonly SessionMessage[]
  /**
   * Only for a watcher that asked for `textAppends`: text streaming rows gained since the
   * version this watcher last got (apply with `applyTextAppend`); those rows are not in `rows`.
   */
  appends?: readonly TextAppend[]
  /** Receipts created or changed (pending, edited, promoted, cancelled), by admission seq. */
  inputs: readonly InputReceipt[]
  /** Only the views that changed (identity gate); the outline as its changed suffix. */
  views: Partial<ChangeViews>
  /** The session's info when it changed; `deleted` when the session is gone. */
  session?: SessionInfo
  deleted?: boolean
  /** The whole transcript was rewritten (a re-import): reload instead of merging. */
  reset?: boolean
  /**
   * The engine lost its database for good and this feed ends here: `upgraded` (a newer version
   * of the app opened it in another tab; reload) or `database_deleted` (site data cleared).
   * Every later call rejects `storage_unavailable` with the same `details.reason`.
   */
  halted?: { reason: StorageLoss; message: string }
  /**
   * The session's sync status changed (`sessionline/sync`, docs/decisions/0036); such a change
   * carries nothing else. Also sent once to a new watcher of a synced session.
   */
  sync?: SyncStatus
}
export type ChangeListener = (change: SessionChange) => void
export type Unsubscribe = () => void

/** The engine's public surface. Every method validates its input and fails with `SessionlineError`. */
export interface Engine {
  createSession(request?: CreateSessionRequest): Promise<SessionInfo>
  getSession(sessionId: string): Promise<SessionInfo | undefined>
  listSessions(): Promise<SessionInfo[]>
  deleteSession(sessionId: string): Promise<void>

  admit(sessionId: string, request: AdmitRequest): Promise<InputReceipt>
  cancel(sessionId: string, inputId: string): Promise<InputReceipt>
  edit(sessionId: string, inputId: string, request: EditRequest): Promise<InputReceipt>
  /**
   * Inbox: moves pending input `inputId` before pending input `request.before` (`null`: to the
   * end); it keeps its id, and its `revision` is bumped as an edit bumps it. Promotion follows
   * the new order.
   */
  reorder(sessionId: string, inputId: string, request: ReorderRequest): Promise<InputReceipt>
  /** Inbox: makes pending input `inputId` a steer or a queued input, in place (same id, revision bumped). */
  setDelivery(sessionId: string, inputId: string, delivery: Delivery): Promise<InputReceipt>
  pending(sessionId: string): Promise<InputReceipt[]>
  /** The bytes of a stored attachment (a `file` part's `attachmentId`), or undefined when none are stored. */
  attachment(attachmentId: string): Promise<Blob | undefined>
  promote(sessionId: string, mode: PromoteMode): Promise<SessionMessage[]>

  append(sessionId: string, events: readonly SessionEvent[]): Promise<{ headSeq: number }>

  /**
   * History (docs/decisions/0033): the head moves to just before user row `messageId`, which
   * becomes `inactive` with what followed it; its text comes back for the composer. A running
   * turn ends `interrupted` first; pending inputs stay pending.
   */
  rewind(sessionId: string, messageId: string): Promise<RewindAnswer>
  /**
   * History: a new branch where user row `messageId` stood, with the prompt `request.text`; it
   * opens a turn at once and its receipt comes back `promoted`. Same id and text again: the same
   * receipt, nothing written.
   */
  resend(sessionId: string, messageId: string, request: ResendRequest): Promise<InputReceipt>
  /**
   * History: a new branch under the prompt that assistant row `messageId` answered (or user row
   * `messageId` itself), with a turn open for a new answer.
   */
  regenerate(sessionId: string, messageId: string): Promise<void>
  /** History: the head moves to the newest row below row `messageId` (the path through it written last). */
  switchBranch(sessionId: string, messageId: string): Promise<void>
  /**
   * History: row `messageId` and its siblings in creation order (`ids[branch.index]` is the row),
   * so a branch picker can name the row to switch to; native and imported trees alike.
   */
  branches(sessionId: string, messageId: string): Promise<BranchesAnswer>
  /**
   * History: a `summary` row under the head replaces the active path through the row at or below
   * `throughSeq` (default: all of it); those rows turn `inactive` and stay readable with
   * `includeInactive`, and the context becomes the summary and what follows. Answers the row.
   */
  compact(sessionId: string, request?: CompactRequest): Promise<SessionMessage>
  /**
   * History: a new native session whose history is this session's visible path through
   * `throughSeq` (default: all of it), under new row ids. Works on imported sessions too: that
   * is how one is continued. Pending inputs stay with the source.
   */
  fork(sessionId: string, request?: ForkRequest): Promise<SessionInfo>
  /** What the model gets at the next step: the path to the head, its last summary first, every tool call answered. */
  context(sessionId: string): Promise<ContextAnswer>
  events(sessionId: string, request?: EventsRequest): Promise<StoredEvent[]>
  page(sessionId: string, request?: PageRequest): Promise<MessagePage>
  loadThrough(sessionId: string, request: LoadThroughRequest): Promise<MessagePage>
  projection<N extends ProjectionName>(sessionId: string, name: N): Promise<ProjectionViews[N]>
  /**
   * Entries of the turn outline by position (0 is the first turn), `start` to `end` clamped, with
   * the outline's `total`; `{}` reads the newest DEFAULT_OUTLINE_SLICE. Reads only the stored
   * chunks the range needs, so a rail's first screen costs the same at 100,000 turns as at 100.
   */
  outline(sessionId: string, request?: OutlineRequest): Promise<OutlineSlice>
  watch(sessionId: string, listener: ChangeListener, options?: WatchOptions): Promise<Unsubscribe>
  /**
   * A view's first read, sent right behind its `watch`: the rows (`page` of the tail, or
   * `loadThrough` from `seq`) with the pending inputs in one read transaction, and the outline's
   * newest slice, in one answer. Like `page`, it reads after a watch still loading the session,
   * so it sees at least the state that watch's changes continue from.
   */
  firstRead(sessionId: string, request?: FirstReadRequest): Promise<FirstRead>

  /** Runner: choose the built-in provider; `none` = host-driven. */
  configure(request: ConfigureRequest): Promise<void>
  /** Runner: abort the running step and end the turn `aborted`; pending input stays pending. */
  interrupt(sessionId: string): Promise<void>

  /**
   * Answers tool call `callId`, which waits for a person's approval (DESIGN §11): approved, it
   * runs; denied, it becomes `denied` and the model is told (`reason` with it). `remember`
   * `session` or `always` approves the tool without asking from now on (stored; see
   * `revokeToolApproval`). A call that waits no more is `invalid_state`, and nothing is written.
   */
  respondToApproval(sessionId: string, callId: string, answer: ApprovalAnswer): Promise<void>
  /** The tools approved without asking in `sessionId`: always, and for this session. */
  toolApprovals(sessionId: string): Promise<ToolApprovals>
  /** Takes back a remembered approval (of one session, or the `always` one): the tool asks again. */
  revokeToolApproval(request: RevokeToolApproval): Promise<void>

  /**
   * Import: stores a Pi, Claude Code or Codex session file (importing it again updates it in
   * place), or a `sessionline` export, restored as the same native session (a `conflict` if that
   * session exists). A `sessionline` file of several exports back to back (every session's
   * export concatenated: "export all") restores them all in one transaction or none, and
   * answers the first.
   */
  importTranscript(request: ImportRequest): Promise<SessionInfo>

  /**
   * One session as a file: `sessionline` (default; lossless, for `importTranscript`) or
   * `markdown` (the visible path, files by name). docs/decisions/0032.
   */
  exportSession(sessionId: string, request?: ExportRequest): Promise<Blob>
  /** The origin's usage and quota, whether its storage is persistent, and each session's size. */
  storage(): Promise<StorageReport>
  /**
   * Asks the browser to keep this origin's data (`navigator.storage.persist()`); answers whether
   * it is persistent now. In a worker, where browsers do not offer the request, it answers
   * `persisted()`: the page's client asks from the page.
   */
  persist(): Promise<boolean>
  /** Import: the session files of a folder, one at a time; unchanged files are skipped; one report per file. */
  importFiles(files: readonly ImportFile[], onProgress?: ImportProgressListener): Promise<FileImportReport[]>

  /**
   * Makes every write acknowledged before it durable: one strict IndexedDB commit, which
   * returns once the browser has the data on disk (README, "Durability").
   */
  flush(): Promise<void>

  /**
   * Full-text search over every session (or one): prompts, answers, reasoning and tool input and
   * output (ranked lower), prefix and typo tolerant, diacritics folded, CJK by character pairs.
   * Visible rows only unless `includeInactive`. Best hits first, at most `limit` (default 20).
   */
  search(query: string, options?: SearchOptions): Promise<SearchHit[]>

  /**
   * Starts syncing one session with a Durable Streams server (`sessionline/sync`,
   * docs/decisions/0036); idempotent. A session this database does not hold yet is pulled and
   * created. `invalid_state` when the engine was made without `sync`.
   */
  sync(sessionId: string, options: SyncOptions): Promise<SyncStatus>
  /** Stops syncing the session (its log, cursor and outbox stay; `sync` resumes). */
  unsync(sessionId: string): Promise<void>
  /** Where the session's sync stands; undefined when this engine does not sync it. */
  syncStatus(sessionId: string): Promise<SyncStatus | undefined>

  close(): Promise<void>
}

/** What session sync needs of the engine it runs in (the engine builds it for `createEngine({sync})`). */
export interface SyncHost {
  readonly engine: Engine
  readonly db: SessionlineDb
  now(): number
  /** Stores a session's folds through `throughSeq` in the running transaction. */
  putFolds(sessionId: string, throughSeq: number, folds: Folds): Promise<unknown> | undefined
  /** Sync rewrote or created a session's log: caches reload it, watchers get a reset, peers are told. */
  logRewritten(sessionId: string): Promise<void>
  /**
   * Sync appended others' events after the session's log (nothing before `fromHead` changed):
   * the rows they made go to the search index, caches move forward, peers are told.
   */
  logAppended(
    sessionId: string,
    rows: readonly SessionMessage[],
    fromHead: number,
    toHead: number,
  ): Promise<void>
  /** Tells the session's watchers its sync status changed (a change with `sync` only). */
  publishStatus(sessionId: string, status: SyncStatus): void
  /** Whether this engine's runner runs turns (has a provider): only such a device claims a session's runner. */
  runsTurns(): boolean
  /** Lets this engine's runner open turns for the session's input (`true`) or holds it back. */
  setRunnerGate(sessionId: string, allow: boolean): void
  /** Sync changed the session's receipts (promoted by rows that arrived): caches reload them. */
  inputsChanged(sessionId: string): Promise<void>
}

/** A sync implementation an engine plugs in (`createSessionSync()` of `sessionline/sync`). */
export interface SessionSync {
  attach(host: SyncHost): SyncDriver
}

/** The engine's sync verbs, served by the attached implementation. */
export interface SyncDriver {
  sync(sessionId: string, options: SyncOptions): Promise<SyncStatus>
  unsync(sessionId: string): Promise<void>
  status(sessionId: string): Promise<SyncStatus | undefined>
  /** Stops every session's sync; awaited before the engine closes its database. */
  close(): Promise<void>
}

export type { Json, StorageLoss, TurnState }

/**
 * What the runner (src/engine/runner.ts) needs from the engine beyond its public API.
 * The engine builds one host and hands it to `createRunner`.
 */
export interface RunnerHost {
  readonly engine: Engine
  /** Turn state from the engine's fold (cached, no replay). */
  turnState(sessionId: string): Promise<TurnState>
  /** Rows that can still change (streaming, or with calls running or waiting), from the same fold. */
  openRows(sessionId: string): Promise<readonly SessionMessage[]>
  /** Fold not-yet-durable events (assistant/delta) over the open rows in memory and push a
   *  `durable: false` change to watchers; the next durable append supersedes it. */
  publishLive(sessionId: string, events: readonly SessionEvent[]): void
  /** Called after every newly admitted input, so an idle or stopped runner can start a turn (edits and cancels are not input). */
  onInput(listener: (sessionId: string) => void): Unsubscribe
  /** Asks the runner of another engine on this database that runs turn `turn` of the session to stop it. */
  requestStop(sessionId: string, turn: number): void
  /** Called when another engine asks for a stop (see `requestStop`); listening opens the channel. */
  onStopRequest(listener: (sessionId: string, turn: number) => void): Unsubscribe
  /** Clock of the engine (tests inject one). */
  now(): number
}

export interface Runner {
  configure(request: ConfigureRequest): Promise<void>
  interrupt(sessionId: string): Promise<void>
  /**
   * Before a history verb (docs/decisions/0033): end the turn this runner drives `interrupted`
   * and wait for its end; nothing when it drives none (the verb ends a turn it finds open).
   */
  stopTurn(sessionId: string): Promise<void>
  /**
   * The summary of `context` (the rows a compaction replaces) written by the provider, with the
   * usage of that request; `aborted` when an interrupt or closing stops it, `invalid_state`
   * without a provider. Writes nothing (docs/decisions/0033, amendment).
   */
  summarize(sessionId: string, context: readonly SessionMessage[]): Promise<{ text: string; usage?: Usage }>
  /**
   * Take over from a runner that is gone: close the turn it left open (`turn/end interrupted`) if
   * no live runner owns it, and run the input it had accepted, unless the log's last turn was
   * stopped or failed before any of that input came (a stop or failure pauses a session until new
   * input).
   */
  recover(sessionId: string): Promise<void>
  /**
   * Opens (`allow`) or shuts the session's gate: while shut, this runner opens no turn for the
   * session's input (another device runs its turns, docs/decisions/0036 amendment); a turn
   * already open still runs. Opening it looks at the input that waited.
   */
  setGate(sessionId: string, allow: boolean): void
  /** Whether this runner runs turns (it has a provider and is not closed). */
  runsTurns(): boolean
  close(): Promise<void>
}
