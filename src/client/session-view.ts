/**
 * A live, optimistic view of one session for a page to render: the loaded window of transcript
 * rows, the inbox inline and in the tray, the turn outline and the rail, behind
 * `subscribe`/`getSnapshot` (a new snapshot object only when something changed).
 *
 * Loading never misses a commit: the view subscribes to the change feed first and buffers what
 * arrives, then reads the tail page (or, for a `loadThrough` asked in the opening task, every
 * row from its seq), the pending receipts and the outline, then applies the buffered changes on
 * top (changes the reads already hold are recognised by their head seq). Given a first read on
 * the page (`connect({dbName})`), the view shows its answer first and sends those reads after
 * it, from the lowest row it showed: the worker's read only adds (docs/decisions/0038).
 *
 * What the view shows is one `ViewState` (view-state.ts), changed only by `#dispatch` (or a
 * `#batch` of dispatches), which publishes the snapshot through the store's identity gate: no
 * path changes what is shown without publishing it. Its helpers each own one thing: the `Inbox`
 * (receipts and optimistic overlays, changed through `#changeInbox`), the `FrameQueue` (feed
 * changes per frame), the `OutlineLoader` (older outline entries), the `ViewLink` (the worker as
 * `connect` reports it) and the `Epoch` (one `AbortSignal` per load: a reset or `dispose` makes
 * every answer still on its way stale).
 *
 * @example
 *   const view = createSessionView(engine, sessionId)
 *   const stop = view.subscribe(() => render(view.getSnapshot()))
 *   await view.admit('and add a test', { delivery: 'queue' }) // in the tray at once
 */
import { nanoid } from 'nanoid'
import type { Engine, SessionChange, Unsubscribe } from '../engine/types'
import type { ApprovalAnswer } from '../schema/approvals'
import { type AttachmentInput, byteSize } from '../schema/attachments'
import type { Delivery } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import {
  type BranchesAnswer,
  CompactRequest,
  type ContextAnswer,
  ForkRequest,
  ReorderRequest,
  ResendRequest,
  type RewindAnswer,
  SetDeliveryRequest,
} from '../schema/history'
import { AdmitRequest, EditRequest, type InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import {
  DEFAULT_JUMP_PAGE,
  DEFAULT_PAGE_LIMIT,
  type FirstReadRequest,
  LoadThroughRequest,
  OutlineRequest,
} from '../schema/requests'
import type { OutlineSlice, SessionInfo } from '../schema/session'
import type { FirstScreen, FirstScreenRead, FirstScreenStart } from '../store/first-screen'
import { Epoch } from './epoch'
import type { FrameScheduler } from './frame-queue'
import { Inbox } from './inbox'
import { createJump } from './jump'
import { LateRows } from './late-rows'
import { OutlineLoader } from './outline-loader'
import { RowRereads } from './row-rereads'
import { createStore, type Store } from './store'
import type { GapEnd, OpenOptions, SessionView, TimelineFile, TimelineSnapshot } from './types'
import { ViewFeed } from './view-feed'
import { ViewLink } from './view-link'
import { createSnapshots, gapKey } from './view-snapshot'
import {
  asSessionlineError,
  initialViewState,
  joinsOutline,
  outlineStartFor,
  type PageRead,
  reduceView,
  turnStartOf,
  type ViewAction,
  type ViewState,
} from './view-state'
import { applyMessages, baseSeqOf, gapsOf, isKnown, type MessageRow, type WindowGap } from './window'

/** What an admit sends the engine (and sends again, by id, to a fresh worker). */
interface AdmitSent {
  id: string
  text: string
  delivery: Delivery
  attachments?: AttachmentInput[]
}

/** Rows a jump loads on either side of the turn it lands in. */
const JUMP_CONTEXT = DEFAULT_PAGE_LIMIT

/** What a view needs of an engine (a `SessionlineClient` or an in-process `Engine`). */
export type ViewEngine = Pick<Engine, (typeof VIEW_ENGINE_METHODS)[number]>

/** The engine methods a view calls (`connect` routes exactly these to the current worker). */
export const VIEW_ENGINE_METHODS = [
  'page',
  'loadThrough',
  'firstRead',
  'pending',
  'projection',
  'outline',
  'watch',
  'admit',
  'cancel',
  'edit',
  'interrupt',
  'respondToApproval',
  'resend',
  'regenerate',
  'switchBranch',
  'branches',
  'rewind',
  'fork',
  'compact',
  'reorder',
  'setDelivery',
  'context',
] as const satisfies readonly (keyof Engine)[]

/**
 * How `connect` tells a view about its worker: gone with a fresh one on its way, answering
 * again, or gone for good. Not part of the public view (`openSessionView` hands it out apart);
 * an in-process engine never calls it.
 */
export interface ViewConnection {
  /** Say `reconnecting`, keep what is shown, and hold admits the dead worker never answered. */
  connectionLost(): void
  /** Re-subscribe, re-read, and re-send the held admits by id. */
  reconnected(): void
  /** Say `error` with `error`; held admits fail with it. */
  connectionFailed(error: SessionlineError): void
}

/** How a view is opened beyond `OpenOptions`: what `connect` and tests pass. */
export interface ViewHooks {
  /** Called once when the view is disposed (`connect` stops tracking it). */
  onDispose?: () => void
  /** The clock and timer of the view's frames (the page's by default). */
  frames?: FrameScheduler
  /**
   * Starts reading the first screen on the page, read-only, before the worker's first read leaves
   * (`connect({dbName})`, store/first-screen.ts). Called as the view is opened, before it is
   * built; its rows are asked in the opening task's microtasks, once a `loadThrough` called in
   * that task has set the floor. Its answer is undefined when only the worker can answer.
   */
  startFirstScreen?: (request: FirstScreenStart) => FirstScreenRead
}

/** What `LiveSessionView` gets beyond the hooks: the first screen's read, already started. */
type ViewStart = Omit<ViewHooks, 'startFirstScreen'> & { firstScreen?: FirstScreenRead }

/** The outline before the worker's first read brings it: none loaded, as of no head. */
const NO_OUTLINE_YET: OutlineSlice = { headSeq: 0, total: 0, start: 0, entries: [] }

const isUserRow = (message: SessionMessage) => message.role === 'user'

const nextTask = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

/** What the first read (or a reload's) brought, or why it failed. */
type FirstRead =
  | {
      opened: Extract<ViewAction, { type: 'opened' }>
      pending: readonly InputReceipt[]
      /** Ids of the pending receipts the engine had reported before the read left. */
      reported: ReadonlySet<string>
    }
  | { error: SessionlineError }

/** A view's page read: what it asked, and the page. */
type Ask = { beforeSeq?: number; afterSeq?: number; limit: number }

/** The view behind the public object: its state is private and changes only through `#dispatch`. */
class LiveSessionView implements SessionView {
  readonly sessionId: string
  readonly #engine: ViewEngine
  readonly #tail: number
  readonly #store: Store<TimelineSnapshot>
  readonly #toSnapshot = createSnapshots()
  #state: ViewState
  /** Depth of the `#batch` calls running: the outermost one publishes. */
  #depth = 0

  /** The inbox, changed only through `#changeInbox` (which publishes); read through `#inbox`. */
  readonly #inboxOwner = new Inbox()
  readonly #inbox: Pick<Inbox, 'isLocalOnly' | 'reportedIds'> = this.#inboxOwner
  readonly #epoch = new Epoch()
  readonly #link = new ViewLink()
  readonly #feed: ViewFeed
  readonly #onDispose: (() => void) | undefined

  readonly #late = new LateRows()
  readonly #outlines = new OutlineLoader({
    state: () => this.#state,
    opening: () => this.#opening(),
    epoch: this.#epoch,
    read: (start, end) => this.#engine.outline(this.sessionId, { start, end }),
    prepend: (slice, end) => this.#dispatch({ type: 'outlineOlder', slice, end }),
  })
  readonly #rereads = new RowRereads({
    read: (seq) =>
      this.#engine.page(this.sessionId, {
        afterSeq: seq - 1,
        limit: 1,
        includeInactive: this.#state.filter.includeInactive,
      }),
    epoch: this.#epoch,
    replace: (seq, messages) => this.#dispatch({ type: 'reread', seq, messages }),
    fail: (error) => this.#softError(error),
  })
  readonly #jump = createJump({
    pager: {
      baseSeq: () => baseSeqOf(this.#state.window),
      hasOlder: () => this.#state.window.hasOlder,
      covers: (seq) => isKnown(this.#state.window, Math.max(1, seq)),
      loadThrough: (seq) => this.#fetchThroughOnceOpen(seq),
    },
    ready: () => this.#firstShown(),
    onBusy: (on) => this.#dispatch({ type: 'busy', on }),
    onError: (error) => this.#softError(error),
  })
  /** Admits on their way, by input id. */
  readonly #admitting = new Map<string, Promise<InputReceipt>>()
  /**
   * The lowest seq `loadThrough` asked for before the first read left; the first read starts in
   * a microtask, so a view opened and asked for older rows in one task reads them in one go.
   */
  #openingFloor: number | undefined
  #firstReadSent = false
  /**
   * Set by a first screen read on the page: the lowest row it showed. The worker's first read
   * then reads every row from there up, and no more (no fill to a page boundary).
   */
  #shownFrom: number | undefined
  /**
   * The worker's first read has been applied. Until then the view is opening even when a read on
   * the page already shows the first screen: loads wait for the worker's read, which replaces it.
   */
  #workerOpened = false
  /** The first screen read on the page is shown, or there is none (it resolves either way). */
  readonly #shown: Promise<void>
  readonly #opened: Promise<void>
  #olderRun: Promise<void> | undefined

  constructor(engine: ViewEngine, sessionId: string, options: OpenOptions, hooks: ViewStart) {
    this.#engine = engine
    this.sessionId = sessionId
    this.#tail = options.tail ?? DEFAULT_PAGE_LIMIT
    this.#onDispose = hooks.onDispose
    this.#state = initialViewState({ includeInactive: options.includeInactive ?? false })
    this.#store = createStore(this.#toSnapshot(this.#state))
    this.#feed = new ViewFeed(
      sessionId,
      this.#epoch,
      (changes) => this.#batch(() => this.#applyChanges(changes)),
      hooks.frames,
    )
    const opening = this.#epoch.signal
    const { firstScreen } = hooks
    const shown = Promise.resolve().then(async () => {
      this.#firstReadSent = true
      // Disposed, or the connection was lost or failed in the opening task (a view opened while a
      // fresh worker is on its way): the read that follows that, with the floor, is the first.
      if (opening.aborted) return false
      if (firstScreen) await this.#readOnPage(firstScreen, opening)
      return !opening.aborted
    })
    this.#shown = shown.then(() => undefined)
    this.#opened = shown.then(async (go) => {
      if (!go) return
      // A first screen read on the page is rendered (and what awaits it runs) before the
      // worker's read is sent: that read only takes over.
      if (this.#state.status !== 'loading') await nextTask()
      if (!opening.aborted) return this.#read(opening)
    })
  }

  readonly subscribe = (listener: () => void): Unsubscribe => this.#store.subscribe(listener)
  readonly getSnapshot = (): TimelineSnapshot => this.#store.get()

  // ---- the funnel ----

  /** Folds `action` into the state and publishes (at the end of the outermost batch). */
  #dispatch(action: ViewAction): void {
    this.#batch(() => {
      this.#state = reduceView(this.#state, action)
    })
  }

  /**
   * Runs `change` (dispatches, inbox changes) and publishes once at the end of the outermost
   * batch, with the feed's changes that wait for a frame applied too. A disposed view changes
   * nothing a listener sees.
   */
  #batch(change: () => void): void {
    this.#depth++
    try {
      change()
      if (this.#depth === 1) this.#applyQueued()
    } finally {
      this.#depth--
      if (this.#depth === 0 && !this.#epoch.ended) this.#store.set(this.#toSnapshot(this.#state))
    }
  }

  /** Changes the inbox with `change` and publishes what the page shows of it. */
  #changeInbox<T>(change: (inbox: Inbox) => T): T {
    let result!: T
    this.#batch(() => {
      result = change(this.#inboxOwner)
      this.#dispatch({ type: 'inbox', inputs: this.#inboxOwner.inputs() })
    })
    return result
  }

  #softError(error: unknown): void {
    this.#dispatch({ type: 'failed', error })
  }

  /**
   * While nothing is shown yet, a promise of the first screen: the one read on the page, or else
   * the worker's. A `loadThrough` that screen covers is done then (the worker's read only adds).
   */
  #firstShown(): Promise<void> | undefined {
    if (this.#state.status !== 'loading') return undefined
    return this.#shown.then(() => (this.#state.status === 'loading' ? this.#opened : undefined))
  }

  /** `#fetchThrough` once the worker's first read is applied (it replaces the window). */
  async #fetchThroughOnceOpen(seq: number): Promise<void> {
    const opening = this.#opening()
    if (opening !== undefined) await opening
    if (this.#epoch.ended || isKnown(this.#state.window, Math.max(1, seq))) return
    return this.#fetchThrough(seq)
  }

  /** While the first load runs (until the worker's first read is applied), a promise of its end. */
  #opening(): Promise<void> | undefined {
    return this.#state.status === 'loading' || !this.#workerOpened ? this.#opened : undefined
  }

  // ---- the feed ----

  /** Applies the changes waiting for a frame (whoever publishes shows them). */
  #applyQueued(): void {
    const changes = this.#feed.take()
    if (changes.length > 0) this.#applyChanges(changes)
  }

  /** Applies `changes` in order, copying the window's rows at most once. */
  #applyChanges(changes: readonly SessionChange[]): void {
    const owned = new WeakSet<readonly MessageRow[]>()
    for (const [i, change] of changes.entries()) {
      // A reset began a reload: what follows it waits for the reload's reads, as it would have.
      if (this.#feed.holding) {
        this.#feed.hold(changes.slice(i))
        return
      }
      this.#applyChange(change, owned)
    }
  }

  #applyChange(change: SessionChange, owned?: WeakSet<readonly MessageRow[]>): void {
    if (change.sync !== undefined) {
      this.#dispatch({ type: 'sync', status: change.sync }) // a sync status change carries nothing else
      return
    }
    if (change.halted) {
      const { reason, message } = change.halted
      this.#dispatch({
        type: 'stopped',
        error: new SessionlineError('storage_unavailable', message, { reason }),
      })
      return
    }
    if (change.deleted) {
      const error = new SessionlineError('not_found', `session ${this.sessionId} was deleted`)
      this.#dispatch({ type: 'stopped', error })
      return
    }
    if (change.reset) {
      this.#applyReset(change)
      return
    }
    const applied = applyMessages(
      this.#state.window,
      change.rows,
      change,
      this.#state.filter,
      owned,
      change.appends,
    )
    this.#dispatch({ type: 'fed', window: applied.window })
    this.#rereads.touch(change)
    for (const seq of applied.mismatched) this.#rereads.reread(seq)
    this.#late.note(change, applied.outside)
    // Most changes (streamed text) carry neither: no inbox change to publish.
    if (change.inputs.length > 0 || change.rows.some(isUserRow)) {
      this.#changeInbox((inbox) => {
        this.#settleUserRows(inbox, change.rows)
        for (const receipt of change.inputs)
          if (receipt.sessionId === this.sessionId) inbox.applyReceipt(receipt)
      })
    }
    const slice = change.views.outline
    if (slice === undefined) return
    // A suffix that starts past what is loaded cannot be joined: read the outline again.
    if (joinsOutline(this.#state.outline, slice)) this.#dispatch({ type: 'outlineChanged', slice })
    else void this.#reload()
  }

  #applyReset(change: SessionChange): void {
    // The receipts a reset carries count as any change's do (the reload's read replaces them).
    const held: string[] = []
    this.#changeInbox((inbox) => {
      for (const receipt of change.inputs) {
        if (receipt.sessionId !== this.sessionId) continue
        // A resend's prompt shown on this page stays until the reload reads its row: no blink.
        if (receipt.status === 'promoted' && inbox.isLocalOnly(receipt.id)) {
          held.push(receipt.id)
          continue
        }
        inbox.applyReceipt(receipt)
      }
    })
    void this.#reload().then(() => {
      // A held prompt whose row the reload did not bring is not on the visible path (a rewind
      // or switch moved the head past it meanwhile): it is no pending input either.
      const gone = held.filter((id) => this.#inbox.isLocalOnly(id) && !this.#isKnownRow(id))
      if (gone.length === 0 || this.#epoch.ended) return
      this.#changeInbox((inbox) => {
        for (const id of gone) inbox.dropLocal(id)
      })
    })
  }

  /** A promoted row has its input's id: once the row exists the input is no longer pending. */
  #settleUserRows(inbox: Inbox, messages: readonly SessionMessage[]): void {
    for (const message of messages) if (isUserRow(message)) inbox.settle(message.id)
  }

  // ---- loading ----

  /**
   * Subscribes (unless subscribed) and reads the tail, the inbox and the outline in one
   * `firstRead` sent with the watch: one round trip. The engine subscribes within the watch call
   * and orders the read behind it, so it sees at least what the changes continue from; the feed
   * is buffering.
   */
  async #read(signal: AbortSignal): Promise<void> {
    let read: FirstRead
    try {
      const answer = await this.#readFirst(signal)
      if (answer === undefined) return
      read = answer
    } catch (thrown) {
      if (signal.aborted) return
      read = { error: asSessionlineError(thrown) }
    }
    this.#batch(() => {
      if ('error' in read) this.#dispatch({ type: 'stopped', error: read.error })
      else {
        const { opened, pending, reported } = read
        this.#workerOpened = true
        this.#dispatch(opened)
        this.#changeInbox((inbox) => {
          this.#settleUserRows(inbox, opened.page.messages)
          inbox.replacePending(pending, reported)
        })
      }
      const changes = this.#feed.release()
      if (this.#state.status === 'ready') for (const change of changes) this.#applyChange(change)
    })
    if (this.#state.status === 'ready') await this.#coverLoadedTurns().catch((e) => this.#softError(e))
  }

  /**
   * The first screen read on the page while the worker starts (docs/decisions/0038): shown as the
   * worker's first read would show it, then replaced by that read, which leaves only after this
   * one has read. So the worker's answer holds at least what this one showed (a later state of
   * the same database), and it reads from the same lowest row up: it only ever adds to the
   * window. Nothing is shown when the page cannot answer as the worker would.
   */
  async #readOnPage(firstScreen: FirstScreenRead, signal: AbortSignal): Promise<void> {
    const floor = this.#openingFloor
    const reported = this.#inbox.reportedIds()
    let read: FirstScreen | undefined
    try {
      read = await firstScreen.rows(floor)
    } catch {
      return // the worker's read answers, as it would have without this one
    }
    if (read === undefined || signal.aborted || this.#state.status !== 'loading') return
    const { page, pending } = read
    this.#batch(() => {
      this.#dispatch({ type: 'opened', page, readFrom: floor, outline: NO_OUTLINE_YET })
      this.#changeInbox((inbox) => {
        this.#settleUserRows(inbox, page.messages)
        inbox.replacePending(pending, reported)
      })
    })
    this.#shownFrom = page.messages[0]?.seq
  }

  /** Subscribes unless subscribed, then the first read; undefined when the epoch moved on meanwhile. */
  async #readFirst(signal: AbortSignal): Promise<FirstRead | undefined> {
    const engine = this.#engine
    // Streamed text arrives as appends onto the rows this view holds (core/text-append).
    const watching = this.#feed.subscribed
      ? undefined
      : engine.watch(this.sessionId, this.#feed.listener, { textAppends: true })
    const shownFrom = this.#shownFrom
    const readFrom =
      shownFrom === undefined ? this.#openingFloor : Math.min(this.#openingFloor ?? shownFrom, shownFrom)
    this.#openingFloor = undefined
    this.#shownFrom = undefined
    // What the engine reported before the read left: the read replaces that, not adds to it.
    const reported = this.#inbox.reportedIds()
    // The rows, the inbox and the outline's newest slice (the rail's first screen; loadOutline
    // reads more) in one call sent right behind the watch, answered in one reply.
    const read = engine.firstRead(this.sessionId, this.#firstRowsRequest(readFrom, shownFrom))
    if (watching) {
      // A failed watch fails the read too; only the watch's error is reported.
      read.catch(() => undefined)
      const stop = await watching
      // Disposed, or the worker was replaced meanwhile: the read of the fresh one subscribes.
      if (signal.aborted) {
        stop()
        return undefined
      }
      this.#feed.subscribe(stop)
    }
    const { page, pending, outline } = await read
    if (signal.aborted) return undefined
    return { opened: { type: 'opened', page, readFrom, outline }, pending, reported }
  }

  #reload(): Promise<void> {
    const signal = this.#epoch.reset()
    this.#feed.hold()
    return this.#read(signal)
  }

  /**
   * The rows of the first read: the tail page, or, when `loadThrough(seq)` was called in the
   * task that opened the view, every row from `seq` up in the same round trip (filled to a page
   * of the tail's size, or of 1 after a first screen read on the page, which set the floor). A
   * `seq` above every row reads nothing there, so the engine reads the tail after all.
   */
  #firstRowsRequest(floor: number | undefined, shownFrom: number | undefined): FirstReadRequest {
    const { includeInactive } = this.#state.filter
    if (floor === undefined) return { tail: this.#tail, includeInactive }
    return {
      tail: this.#tail,
      seq: floor,
      pageSize: shownFrom === undefined ? this.#tail : 1,
      includeInactive,
    }
  }

  /**
   * Reads pages and adds each to the window with the range it covers. Changes to rows outside
   * the window are kept meanwhile (`#late`), so a page read before such a change cannot bring
   * back the old version. Returns whether the window learned anything.
   */
  async #readInto(read: () => Promise<PageRead[]>): Promise<boolean> {
    const signal = this.#epoch.signal
    return this.#late.during(async () => {
      const pages = await read()
      if (signal.aborted) return false
      let before = this.#state.window
      this.#batch(() => {
        // Changes that arrived before the pages did go first, as they would have without a frame.
        this.#applyQueued()
        before = this.#state.window
        this.#dispatch({ type: 'paged', pages, late: this.#late.rows })
        this.#changeInbox((inbox) => {
          for (const { page } of pages) this.#settleUserRows(inbox, page.messages)
        })
      })
      await this.#coverLoadedTurns()
      return this.#state.window.known !== before.known
    })
  }

  async #pageOf(ask: Ask): Promise<PageRead> {
    const { includeInactive } = this.#state.filter
    return { page: await this.#engine.page(this.sessionId, { ...ask, includeInactive }), ask }
  }

  /** Fetches the page just below the window and merges it in. */
  async #fetchOlder(limit: number): Promise<boolean> {
    const { window } = this.#state
    const floor = window.known[0]?.from ?? 1
    if (!window.hasOlder || floor <= 1) return false
    return this.#readInto(async () => [await this.#pageOf({ beforeSeq: floor, limit })])
  }

  /**
   * Loads every row from `seq` up to what the window knows above it (the gap that holds `seq`,
   * or the window's floor) in one engine read, filled to a page boundary, and merges it in (jumps).
   */
  async #fetchThrough(seq: number): Promise<void> {
    const { window, filter } = this.#state
    const ceiling = this.#gapAt(seq)?.toSeq ?? (window.known[0]?.from ?? 1) - 1
    if (ceiling < 1) return
    const ask = { beforeSeq: ceiling + 1 }
    await this.#readInto(async () => [
      {
        page: await this.#engine.loadThrough(this.sessionId, {
          seq: Math.max(1, seq),
          beforeSeq: ask.beforeSeq,
          pageSize: DEFAULT_JUMP_PAGE,
          includeInactive: filter.includeInactive,
        }),
        ask,
      },
    ])
  }

  /** The gap that holds `seq`, if any. */
  #gapAt(seq: number): WindowGap | undefined {
    return gapsOf(this.#state.window).find((gap) => gap.fromSeq <= seq && seq <= gap.toSeq)
  }

  /** Pages `gap` in from one end. */
  #fillGap(gap: WindowGap, end: GapEnd, limit: number): Promise<boolean> {
    return this.#readInto(async () => [
      await this.#pageOf(
        end === 'older'
          ? { beforeSeq: gap.toSeq + 1, limit }
          : { afterSeq: gap.fromSeq - 1, beforeSeq: gap.toSeq + 1, limit },
      ),
    ])
  }

  /** Loads the turn holding `seq` and JUMP_CONTEXT rows either side, as one new segment. */
  async #loadNeighbourhood(seq: number): Promise<void> {
    const start = Math.max(1, turnStartOf(this.#state.outline.shown, seq))
    // The next loaded range above bounds the read: what it holds is loaded already.
    const above = this.#state.window.known.find((range) => range.from > start)
    const ceiling = above?.from
    await this.#readInto(async () => {
      const below = this.#pageOf({ beforeSeq: start, limit: JUMP_CONTEXT })
      const after: PageRead[] = []
      let from = start - 1
      let beyond = 0
      for (;;) {
        const read = await this.#pageOf({ afterSeq: from, beforeSeq: ceiling, limit: JUMP_CONTEXT })
        after.push(read)
        const last = read.page.messages.at(-1)
        if (!read.page.hasNewer || last === undefined) break
        beyond += read.page.messages.filter((m) => m.seq > seq).length
        if (last.seq >= seq && beyond >= JUMP_CONTEXT) break
        from = last.seq
      }
      return [await below, ...after]
    })
  }

  /** Extends the outline down to the lowest loaded turn (after a jump or a page of older rows). */
  async #coverLoadedTurns(): Promise<void> {
    const from = outlineStartFor(this.#state)
    if (from !== undefined) await this.#outlines.loadFrom(from)
  }

  /** Runs `load` with `loadingOlder` shown; its error is a soft one, shown with the end of the load. */
  async #whileBusy(load: () => Promise<unknown>): Promise<void> {
    this.#dispatch({ type: 'busy', on: true })
    let failed = false
    let failure: unknown
    try {
      await load()
    } catch (thrown) {
      failed = true
      failure = thrown
    }
    this.#batch(() => {
      if (failed) this.#softError(failure)
      this.#dispatch({ type: 'busy', on: false })
    })
  }

  loadOlder(): Promise<void> {
    this.#olderRun ??= (async () => {
      const opening = this.#opening()
      if (opening !== undefined) await opening
      if (this.#epoch.ended || !this.#state.window.hasOlder) return
      await this.#whileBusy(() => this.#fetchOlder(this.#tail))
    })().finally(() => {
      this.#olderRun = undefined
    })
    return this.#olderRun
  }

  loadThrough(seq: number): Promise<void> {
    try {
      parseOrThrow(LoadThroughRequest.shape.seq, seq, 'loadThrough seq')
    } catch (thrown) {
      return Promise.reject(thrown)
    }
    if (!this.#firstReadSent) this.#openingFloor = Math.min(this.#openingFloor ?? seq, Math.max(1, seq))
    return this.#jump(seq)
  }

  async jumpTo(seq: number): Promise<void> {
    parseOrThrow(LoadThroughRequest.shape.seq, seq, 'jumpTo seq')
    const opening = this.#opening()
    if (opening !== undefined) await opening
    const { status, window } = this.#state
    if (this.#epoch.ended || status !== 'ready' || isKnown(window, Math.max(1, seq))) return
    await this.#whileBusy(() => this.#loadNeighbourhood(Math.max(1, seq)))
  }

  async loadGap(key: string, end: GapEnd): Promise<void> {
    if (end !== 'older' && end !== 'newer') {
      throw new SessionlineError(
        'invalid_input',
        `loadGap: end must be 'older' or 'newer', not ${String(end)}`,
      )
    }
    const { window } = this.#state
    const gap = gapsOf(window).find((g) => gapKey(g, window.rows) === key)
    if (this.#epoch.ended || gap === undefined) return
    await this.#whileBusy(() => this.#fillGap(gap, end, this.#tail))
  }

  async loadOutline(from: number): Promise<void> {
    parseOrThrow(OutlineRequest.shape.start, from, 'loadOutline from')
    try {
      await this.#outlines.loadFrom(from ?? 0)
    } catch (thrown) {
      this.#softError(thrown)
    }
  }

  // ---- the inbox ----

  admit(
    text: string,
    options: { delivery?: Delivery; id?: string; attachments?: readonly AttachmentInput[] } = {},
  ): Promise<InputReceipt> {
    let request: AdmitSent
    try {
      const parsed = parseOrThrow(AdmitRequest, { ...options, text }, 'admit request')
      request = { id: parsed.id ?? nanoid(), text: parsed.text, delivery: parsed.delivery }
      if (parsed.attachments?.length) request.attachments = parsed.attachments
    } catch (thrown) {
      return Promise.reject(thrown)
    }
    const { id } = request
    // Shown at once with its files (the bytes stay on the page for thumbnails until the receipt).
    const files = request.attachments?.map(
      (a): TimelineFile => ({ name: a.name, mediaType: a.mediaType, size: byteSize(a.data), data: a.data }),
    )
    this.#changeInbox((inbox) => inbox.sending(id, request.text, request.delivery, files))
    // Sent again on each fresh worker while the old one died before answering: the engine
    // answers a repeated id with the receipt it stored, so a re-send never doubles it.
    const sent = this.#link
      .retrying(
        () => this.#engine.admit(this.sessionId, request),
        () => this.#epoch.ended,
      )
      .then(
        (receipt) => {
          this.#changeInbox((inbox) => inbox.applyReceipt(receipt))
          return receipt
        },
        (thrown: unknown) => {
          const failure = asSessionlineError(thrown)
          this.#changeInbox((inbox) => inbox.failed(id, failure))
          throw failure
        },
      )
    this.#admitting.set(id, sent)
    const forget = () => {
      if (this.#admitting.get(id) === sent) this.#admitting.delete(id)
    }
    sent.then(forget, forget)
    return sent
  }

  /** Waits for an admit of `id` still on its way; whether it failed is read from the inbox after. */
  async #arrived(id: string): Promise<void> {
    await this.#admitting.get(id)?.catch(() => undefined)
  }

  /**
   * Runs `call` on inbox input `inputId` with the change `begin` shows kept on screen until it
   * answers; what `call` answers (a change of the inbox) and the end of the shown change are
   * published together. On failure the input shows as it was.
   */
  async #changeInput<T>(
    inputId: string,
    begin: (inbox: Inbox) => object,
    end: (inbox: Inbox, token: object) => void,
    call: () => Promise<(inbox: Inbox) => T>,
  ): Promise<T> {
    const token = this.#changeInbox(begin)
    let settle: ((inbox: Inbox) => T) | undefined
    let failure: SessionlineError | undefined
    try {
      await this.#arrived(inputId)
      settle = await call()
    } catch (thrown) {
      failure = asSessionlineError(thrown)
    }
    const answer = this.#changeInbox((inbox) => {
      const value = settle?.(inbox)
      end(inbox, token)
      return value
    })
    if (failure !== undefined) throw failure
    return answer as T
  }

  /** What a receipt answer does to the inbox: it is applied, and answered. */
  #receipt(receipt: InputReceipt): (inbox: Inbox) => InputReceipt {
    return (inbox) => {
      inbox.applyReceipt(receipt)
      return receipt
    }
  }

  cancel(inputId: string): Promise<void> {
    return this.#changeInput(
      inputId,
      (inbox) => inbox.beginCancel(inputId),
      (inbox, token) => inbox.endCancel(inputId, token),
      async () => {
        // Never reached the engine: nothing durable to cancel.
        if (this.#inbox.isLocalOnly(inputId)) return (inbox) => inbox.dropLocal(inputId)
        const receipt = await this.#engine.cancel(this.sessionId, inputId)
        return (inbox) => void inbox.applyReceipt(receipt)
      },
    )
  }

  async edit(inputId: string, text: string): Promise<void> {
    const request = parseOrThrow(EditRequest, { text }, 'edit request')
    return this.#changeInput(
      inputId,
      (inbox) => inbox.beginEdit(inputId, request.text),
      (inbox, token) => inbox.endEdit(inputId, token), // on failure the old text shows again
      async () => {
        if (this.#inbox.isLocalOnly(inputId)) return (inbox) => inbox.editLocal(inputId, request.text)
        const receipt = await this.#engine.edit(this.sessionId, inputId, request)
        return (inbox) => void inbox.applyReceipt(receipt)
      },
    )
  }

  async reorder(inputId: string, request: { before: string | null }): Promise<InputReceipt> {
    const parsed = parseOrThrow(ReorderRequest, request, 'reorder request')
    return this.#changeInput(
      inputId,
      (inbox) => inbox.beginMove(inputId, parsed.before),
      (inbox, token) => inbox.endMove(inputId, token),
      async () => this.#receipt(await this.#engine.reorder(this.sessionId, inputId, parsed)),
    )
  }

  async setDelivery(inputId: string, delivery: Delivery): Promise<InputReceipt> {
    const parsed = parseOrThrow(SetDeliveryRequest, delivery, 'delivery')
    return this.#changeInput(
      inputId,
      (inbox) => inbox.beginDelivery(inputId, parsed),
      (inbox, token) => inbox.endDelivery(inputId, token),
      async () => this.#receipt(await this.#engine.setDelivery(this.sessionId, inputId, parsed)),
    )
  }

  /**
   * Resends user row `messageId` as `text` on a new branch. The new prompt shows at once as a
   * `sending` input under its own id, which is its row's key too, and stays until the reload the
   * verb's `reset` starts reads that row, so the prompt never leaves the screen in between.
   */
  async resend(messageId: string, request: { text: string; id?: string }): Promise<InputReceipt> {
    const parsed = parseOrThrow(ResendRequest, request, 'resend request')
    const id = parsed.id ?? nanoid()
    this.#changeInbox((inbox) => inbox.sending(id, parsed.text, 'steer'))
    try {
      const receipt = await this.#engine.resend(this.sessionId, messageId, { text: parsed.text, id })
      // Shown by now (the row was read), or shown by the reload on its way: nothing to do here.
      this.#changeInbox((inbox) => {
        if (!this.#isKnownRow(id) && !inbox.isLocalOnly(id)) inbox.applyReceipt(receipt)
      })
      return receipt
    } catch (thrown) {
      // A refused resend leaves the branch as it was: the text stays with the caller.
      this.#changeInbox((inbox) => inbox.dropLocal(id))
      throw asSessionlineError(thrown)
    }
  }

  #isKnownRow(id: string): boolean {
    return this.#state.window.rows.some((row) => row.key === id)
  }

  // ---- verbs the engine answers alone ----

  interrupt(): Promise<void> {
    return this.#engine.interrupt(this.sessionId)
  }
  regenerate(messageId: string): Promise<void> {
    return this.#engine.regenerate(this.sessionId, messageId)
  }
  switchBranch(messageId: string): Promise<void> {
    return this.#engine.switchBranch(this.sessionId, messageId)
  }

  branches(messageId: string): Promise<BranchesAnswer> {
    return this.#engine.branches(this.sessionId, messageId)
  }
  rewind(messageId: string): Promise<RewindAnswer> {
    return this.#engine.rewind(this.sessionId, messageId)
  }
  async fork(options?: ForkRequest): Promise<SessionInfo> {
    return this.#engine.fork(this.sessionId, parseOrThrow(ForkRequest, options ?? {}, 'fork request'))
  }
  async compact(options?: CompactRequest): Promise<SessionMessage> {
    return this.#engine.compact(
      this.sessionId,
      parseOrThrow(CompactRequest, options ?? {}, 'compact request'),
    )
  }
  context(): Promise<ContextAnswer> {
    return this.#engine.context(this.sessionId)
  }
  respondToApproval(callId: string, answer: ApprovalAnswer): Promise<void> {
    return this.#engine.respondToApproval(this.sessionId, callId, answer)
  }

  // ---- lifecycle ----

  /** The hooks `connect` calls; see `ViewConnection`. */
  readonly connection: ViewConnection = {
    connectionLost: () => {
      if (this.#epoch.ended || !this.#link.lost()) return
      this.#epoch.reset() // answers of the dead worker no longer count
      this.#feed.stop(true) // the fresh worker's read subscribes again
      this.#dispatch({ type: 'reconnecting' })
    },
    reconnected: () => {
      if (this.#epoch.ended || !this.#link.back()) return
      void this.#read(this.#epoch.signal) // re-subscribes first, then re-reads: nothing in the gap is missed
    },
    connectionFailed: (failure) => {
      if (this.#epoch.ended || !this.#link.failed(failure)) return
      this.#epoch.reset()
      this.#feed.stop(false)
      this.#dispatch({ type: 'stopped', error: failure })
    },
  }

  dispose(): void {
    if (this.#epoch.ended) return
    this.#epoch.end()
    this.#feed.stop(false)
    this.#link.close(new SessionlineError('aborted', `the view of ${this.sessionId} was disposed`))
    this.#onDispose?.()
  }
}

/** The public face of `live`: every `SessionView` member, callable unbound (as a plain object's are). */
function publicView(live: LiveSessionView): SessionView {
  return {
    sessionId: live.sessionId,
    subscribe: live.subscribe,
    getSnapshot: live.getSnapshot,
    admit: (text, options) => live.admit(text, options),
    cancel: (inputId) => live.cancel(inputId),
    edit: (inputId, text) => live.edit(inputId, text),
    loadOlder: () => live.loadOlder(),
    loadThrough: (seq) => live.loadThrough(seq),
    jumpTo: (seq) => live.jumpTo(seq),
    loadGap: (key, end) => live.loadGap(key, end),
    loadOutline: (from) => live.loadOutline(from),
    interrupt: () => live.interrupt(),
    respondToApproval: (callId, answer) => live.respondToApproval(callId, answer),
    resend: (messageId, request) => live.resend(messageId, request),
    regenerate: (messageId) => live.regenerate(messageId),
    switchBranch: (messageId) => live.switchBranch(messageId),
    branches: (messageId) => live.branches(messageId),
    rewind: (messageId) => live.rewind(messageId),
    fork: (options) => live.fork(options),
    compact: (options) => live.compact(options),
    reorder: (inputId, request) => live.reorder(inputId, request),
    setDelivery: (inputId, delivery) => live.setDelivery(inputId, delivery),
    context: () => live.context(),
    dispose: () => live.dispose(),
  }
}

/**
 * Opens a view of `sessionId` and hands out, apart from it, the hooks by which `connect` tells
 * it about its worker.
 */
export function openSessionView(
  engine: ViewEngine,
  sessionId: string,
  options: OpenOptions = {},
  hooks: ViewHooks = {},
): { view: SessionView; connection: ViewConnection } {
  const { startFirstScreen, ...rest } = hooks
  // Started before the view is built: IndexedDB reads what does not depend on the rows meanwhile.
  const firstScreen = startFirstScreen?.({
    sessionId,
    tail: options.tail ?? DEFAULT_PAGE_LIMIT,
    includeInactive: options.includeInactive ?? false,
  })
  const live = new LiveSessionView(engine, sessionId, options, {
    ...rest,
    ...(firstScreen && { firstScreen }),
  })
  return { view: publicView(live), connection: live.connection }
}

/** A live view of `sessionId` over `engine` (see the module's doc). */
export function createSessionView(
  engine: ViewEngine,
  sessionId: string,
  options: OpenOptions = {},
): SessionView {
  return openSessionView(engine, sessionId, options).view
}
