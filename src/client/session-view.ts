/**
 * A live, optimistic view of one session for a page to render: the loaded window of transcript
 * rows, the inbox inline and in the tray, the turn outline and the rail, behind
 * `subscribe`/`getSnapshot` (a new snapshot object only when something changed).
 *
 * Loading never misses a commit: the view subscribes to the change feed first and buffers what
 * arrives, then reads the tail page (or, for a `loadThrough` asked in the opening task, every
 * row from its seq), the pending receipts and the outline, then applies the buffered changes on
 * top (changes the reads already hold are recognised by their head seq).
 *
 * @example
 *   const view = createSessionView(engine, sessionId)
 *   const stop = view.subscribe(() => render(view.getSnapshot()))
 *   await view.admit('and add a test', { delivery: 'queue' }) // in the tray at once
 */
import { nanoid } from 'nanoid'
import type { ChangeListener, Engine, SessionChange, Unsubscribe } from '../engine/types'
import { type AttachmentInput, byteSize } from '../schema/attachments'
import type { Delivery } from '../schema/common'
import { isSessionlineError, parseOrThrow, SessionlineError } from '../schema/errors'
import {
  CompactRequest,
  ForkRequest,
  ReorderRequest,
  ResendRequest,
  SetDeliveryRequest,
} from '../schema/history'
import { AdmitRequest, EditRequest, type InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import {
  DEFAULT_JUMP_PAGE,
  DEFAULT_PAGE_LIMIT,
  LoadThroughRequest,
  type MessagePage,
  OutlineRequest,
} from '../schema/requests'
import type { OutlineSlice, TurnOutlineEntry } from '../schema/session'
import type { SyncStatus } from '../schema/sync'
import { createTurnRail } from '../view/rail'
import { Inbox } from './inbox'
import { createJump } from './jump'
import { createLoadedTurns } from './loaded-turns'
import { createStore } from './store'
import type {
  GapEnd,
  GapRow,
  OpenOptions,
  SessionView,
  TimelineFile,
  TimelineInput,
  TimelineRow,
  TimelineSnapshot,
} from './types'

/** What an admit sends the engine (and sends again, by id, to a fresh worker). */
interface AdmitSent {
  id: string
  text: string
  delivery: Delivery
  attachments?: AttachmentInput[]
}

import {
  addRange,
  applyMessages,
  baseSeqOf,
  EMPTY_WINDOW,
  gapsOf,
  isKnown,
  type MessageRow,
  pageRange,
  replaceRows,
  type TranscriptWindow,
  type WindowFilter,
  type WindowGap,
  windowFromTail,
} from './window'

/** Rows a jump loads on either side of the turn it lands in. */
const JUMP_CONTEXT = DEFAULT_PAGE_LIMIT

/** What a view needs of an engine (a `SessionlineClient` or an in-process `Engine`). */
export type ViewEngine = Pick<Engine, (typeof VIEW_ENGINE_METHODS)[number]>

/** The engine methods a view calls (`connect` routes exactly these to the current worker). */
export const VIEW_ENGINE_METHODS = [
  'page',
  'loadThrough',
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
  'rewind',
  'fork',
  'compact',
  'reorder',
  'setDelivery',
  'context',
] as const satisfies readonly (keyof Engine)[]

/**
 * How `connect` tells a view about its worker: gone with a fresh one on its way, answering
 * again, or gone for good. Not part of the public view; an in-process engine never calls it.
 */
export interface ViewConnection {
  /** Say `reconnecting`, keep what is shown, and hold admits the dead worker never answered. */
  connectionLost(): void
  /** Re-subscribe, re-read, and re-send the held admits by id. */
  reconnected(): void
  /** Say `error` with `error`; held admits fail with it. */
  connectionFailed(error: SessionlineError): void
}

/**
 * Changes from the feed reach the snapshot at most once per this many milliseconds (about a
 * frame): a change after a quiet spell shows at once, and the changes that arrive within the
 * next frame are applied together, with one copy of the window, when it ends.
 */
const FRAME_MS = 16

const NO_OUTLINE: readonly TurnOutlineEntry[] = Object.freeze([])
const NO_ROWS: readonly TimelineRow[] = Object.freeze([])

/** Anything thrown becomes a `SessionlineError`, so the snapshot's `error` has one type. */
function asSessionlineError(error: unknown): SessionlineError {
  if (isSessionlineError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new SessionlineError('internal', message, undefined, { cause: error })
}

const isUserRow = (message: SessionMessage) => message.role === 'user'

/** The engine refused because a newer version of the app upgraded the database. */
const isUpgraded = (error: SessionlineError) =>
  error.code === 'storage_unavailable' &&
  (error.details as { reason?: unknown } | undefined)?.reason === 'upgraded'

function shallowEqual(a: TimelineSnapshot, b: TimelineSnapshot): boolean {
  const keys = Object.keys(a) as (keyof TimelineSnapshot)[]
  return keys.length === Object.keys(b).length && keys.every((key) => Object.is(a[key], b[key]))
}

const isWorkerGone = (error: unknown) => isSessionlineError(error) && error.code === 'worker_gone'

export function createSessionView(
  engine: ViewEngine,
  sessionId: string,
  options: OpenOptions = {},
): SessionView & ViewConnection {
  const tail = options.tail ?? DEFAULT_PAGE_LIMIT
  const filter: WindowFilter = { includeInactive: options.includeInactive ?? false }

  let status: TimelineSnapshot['status'] = 'loading'
  let error: SessionlineError | undefined
  let window: TranscriptWindow = EMPTY_WINDOW
  /** The loaded suffix of the outline (inactive entries too), from position `outlineStart`. */
  let outlineAll: readonly TurnOutlineEntry[] = NO_OUTLINE
  let outlineStart = 0
  /** Log head the loaded outline reflects: a change at or below it is already in it. */
  let outlineHeadSeq = -1
  /** `outlineAll` as the snapshot shows it (superseded turns only with `includeInactive`). */
  let outline: readonly TurnOutlineEntry[] = NO_OUTLINE
  const inbox = new Inbox()
  let busy = 0
  let disposed = false
  /** Bumped by a reset: answers to reads made before it are dropped. */
  let generation = 0
  /** Changes that arrive while a (re)load reads; applied on top of what it read. */
  let buffered: SessionChange[] | undefined = []
  let unsubscribe: Unsubscribe | undefined
  /** Rows that changed outside the window while pages were on their way. */
  const late = new Map<string, { message: SessionMessage; headSeq: number }>()
  let readsInFlight = 0
  const admitting = new Map<string, Promise<InputReceipt>>()
  /** 'down' while a fresh worker is on its way: admits that met the dead one wait for it. */
  let connection: 'up' | 'down' | 'failed' = 'up'
  let connectionError: SessionlineError | undefined
  let waiters: Array<{ resolve(): void; reject(error: SessionlineError): void }> = []

  /** Superseded turns (an import's history before a compaction) reach the rail only with `includeInactive`. */
  const readableOutline = (entries: readonly TurnOutlineEntry[]) =>
    filter.includeInactive || !entries.some((e) => e.visibility === 'inactive')
      ? entries
      : Object.freeze(entries.filter((e) => e.visibility !== 'inactive'))
  function setOutline(all: readonly TurnOutlineEntry[], start: number, headSeq: number): void {
    outlineAll = all
    outlineStart = start
    outlineHeadSeq = headSeq
    outline = readableOutline(all)
  }

  /** Merges the suffix a change carries over the loaded outline. */
  function mergeOutline(slice: OutlineSlice): void {
    if (slice.headSeq <= outlineHeadSeq) return
    if (slice.start <= outlineStart) {
      setOutline(slice.entries, slice.start, slice.headSeq)
      return
    }
    const keep = slice.start - outlineStart
    // A suffix that starts past what is loaded cannot be joined: read the outline again.
    if (keep > outlineAll.length) {
      void reload()
      return
    }
    setOutline([...outlineAll.slice(0, keep), ...slice.entries], outlineStart, slice.headSeq)
  }

  const loadedTurns = createLoadedTurns()
  const turnRail = createTurnRail()
  /**
   * The rail over the loaded outline: turns loaded below its first entry wait for the outline to
   * reach them (`coverLoadedTurns`), so mark `i` stays the outline's entry `outlineBefore + i`.
   */
  const rail = (turns: ReturnType<typeof loadedTurns>, entries: readonly TurnOutlineEntry[]) => {
    const first = outlineStart > 0 ? outlineAll[0]?.turn : undefined
    const covered = first === undefined || (turns[0]?.turn ?? first) >= first
    return turnRail(covered ? turns : turns.filter((t) => t.turn >= first), entries)
  }
  const inputRows = new WeakMap<TimelineInput, TimelineRow>()
  const initial: TimelineSnapshot = Object.freeze({
    status,
    rows: NO_ROWS,
    queued: Object.freeze([]) as readonly TimelineInput[],
    outline,
    outlineBefore: 0,
    rail: rail([], outline),
    baseSeq: 0,
    headSeq: 0,
    hasOlder: false,
    loadingOlder: false,
  })
  const store = createStore(initial)
  let lastParts: {
    windowRows: readonly TimelineRow[]
    steers: readonly TimelineInput[]
    rows: readonly TimelineRow[]
  } = { windowRows: EMPTY_WINDOW.rows, steers: [], rows: NO_ROWS }
  let lastTimeline: { window: TranscriptWindow; rows: readonly TimelineRow[]; breaks: readonly number[] } = {
    window: EMPTY_WINDOW,
    rows: EMPTY_WINDOW.rows,
    breaks: [],
  }
  let gapRows = new Map<string, GapRow>()

  const gapKey = (gap: WindowGap, rows: TranscriptWindow['rows']) =>
    `gap:${rows[gap.before - 1]?.key ?? `from-${gap.fromSeq}`}`

  /** The window's rows with a gap row between each two segments (the same array while nothing changed). */
  function timeline(): typeof lastTimeline {
    if (lastTimeline.window.rows === window.rows && lastTimeline.window.known === window.known)
      return lastTimeline
    if (window.known.length <= 1) {
      gapRows = new Map()
      lastTimeline = { window, rows: window.rows, breaks: [] }
      return lastTimeline
    }
    const rows: TimelineRow[] = []
    const nextGaps = new Map<string, GapRow>()
    let i = 0
    for (const gap of gapsOf(window)) {
      while (i < gap.before) rows.push(window.rows[i++]!)
      const key = gapKey(gap, window.rows)
      const old = gapRows.get(key)
      const row =
        old !== undefined && old.fromSeq === gap.fromSeq && old.toSeq === gap.toSeq
          ? old
          : Object.freeze({ key, kind: 'gap' as const, fromSeq: gap.fromSeq, toSeq: gap.toSeq })
      nextGaps.set(key, row)
      rows.push(row)
    }
    while (i < window.rows.length) rows.push(window.rows[i++]!)
    gapRows = nextGaps
    lastTimeline = { window, rows: Object.freeze(rows), breaks: gapsOf(window).map((g) => g.before) }
    return lastTimeline
  }

  function inputRow(input: TimelineInput): TimelineRow {
    let row = inputRows.get(input)
    if (row === undefined) {
      row = Object.freeze({ key: input.id, kind: 'input' as const, input })
      inputRows.set(input, row)
    }
    return row
  }

  /** Rebuilds the snapshot from the parts; keeps the old one (and every unchanged part) when equal. */
  /** The session's sync status as the engine last said (docs/decisions/0036). */
  let sync: SyncStatus | undefined

  function publish(): void {
    // Whatever publishes shows the feed's changes that wait for a frame too.
    applyQueued()
    const { steers, queued } = inbox.inputs()
    const segments = timeline()
    let rows = lastParts.rows
    if (lastParts.windowRows !== segments.rows || lastParts.steers !== steers) {
      rows = steers.length === 0 ? segments.rows : Object.freeze([...segments.rows, ...steers.map(inputRow)])
      lastParts = { windowRows: segments.rows, steers, rows }
    }
    const next: TimelineSnapshot = {
      status,
      rows,
      queued,
      outline,
      outlineBefore: outlineStart,
      rail: rail(loadedTurns(window.rows, window.hasOlder, segments.breaks), outline),
      baseSeq: baseSeqOf(window),
      headSeq: window.headSeq,
      hasOlder: window.hasOlder,
      loadingOlder: busy > 0,
    }
    if (error !== undefined) next.error = error
    if (sync !== undefined) next.sync = sync
    if (!shallowEqual(next, store.get())) store.set(Object.freeze(next))
  }

  function settleUserRows(messages: readonly SessionMessage[]): void {
    // A promoted row has its input's id: once the row exists the input is no longer pending.
    for (const message of messages) if (isUserRow(message)) inbox.settle(message.id)
  }

  /** Feed changes waiting for the next frame, and when the last frame was published. */
  let queued: SessionChange[] = []
  let frameTimer: ReturnType<typeof setTimeout> | undefined
  let lastFrame = Number.NEGATIVE_INFINITY

  /** Applies the queued changes, in order, copying the window's rows at most once. */
  function applyQueued(): void {
    if (queued.length === 0) return
    const changes = queued
    queued = []
    const owned = new WeakSet<readonly TimelineRow[]>()
    for (const [i, change] of changes.entries()) {
      // A reset began a reload: what follows it waits for the reload's reads, as it would have.
      if (buffered !== undefined) {
        buffered.push(...changes.slice(i))
        return
      }
      applyChange(change, owned)
    }
  }

  function flushFrame(): void {
    frameTimer = undefined
    if (disposed) return
    applyQueued()
    publish()
    // From the end of this frame: the next is at least FRAME_MS after its listeners were told.
    lastFrame = performance.now()
  }

  function scheduleFrame(): void {
    const wait = lastFrame + FRAME_MS - performance.now()
    if (wait <= 0) {
      // Due: flush now, even if the timer is still waiting (a page busy with messages runs
      // timers late; the frame must not wait for it).
      if (frameTimer !== undefined) clearTimeout(frameTimer)
      flushFrame()
    } else frameTimer ??= setTimeout(flushFrame, Math.ceil(wait)) // timers take whole milliseconds
  }

  function dropQueued(): void {
    queued = []
    if (frameTimer !== undefined) clearTimeout(frameTimer)
    frameTimer = undefined
  }

  function applyChange(change: SessionChange, owned?: WeakSet<readonly TimelineRow[]>): void {
    if (change.sync !== undefined) {
      sync = change.sync // a sync status change carries nothing else
      return
    }
    if (change.halted) {
      const { reason, message } = change.halted
      status = reason === 'upgraded' ? 'upgraded' : 'error'
      error = new SessionlineError('storage_unavailable', message, { reason })
      return
    }
    if (change.deleted) {
      status = 'error'
      error = new SessionlineError('not_found', `session ${sessionId} was deleted`)
      return
    }
    if (change.reset) {
      // The receipts a reset carries count as any change's do (the reload's read replaces them).
      const held: string[] = []
      for (const receipt of change.inputs) {
        if (receipt.sessionId !== sessionId) continue
        // A resend's prompt shown on this page stays until the reload reads its row: no blink.
        if (receipt.status === 'promoted' && inbox.isLocalOnly(receipt.id)) {
          held.push(receipt.id)
          continue
        }
        inbox.applyReceipt(receipt)
      }
      void reload().then(() => {
        // A held prompt whose row the reload did not bring is not on the visible path (a rewind
        // or switch moved the head past it meanwhile): it is no pending input either.
        const gone = held.filter((id) => inbox.isLocalOnly(id) && !isKnownRow(id))
        if (gone.length === 0 || disposed) return
        for (const id of gone) inbox.dropLocal(id)
        publish()
      })
      return
    }
    const applied = applyMessages(
      window,
      change.rows,
      change,
      filter,
      owned as WeakSet<readonly MessageRow[]>,
      change.appends,
    )
    window = applied.window
    if (change.durable && rereading.size > 0) touchRereading(change)
    for (const seq of applied.mismatched) rereadRow(seq)
    if (readsInFlight > 0 && change.durable)
      for (const message of applied.outside) late.set(message.id, { message, headSeq: change.headSeq })
    settleUserRows(change.rows)
    for (const receipt of change.inputs) if (receipt.sessionId === sessionId) inbox.applyReceipt(receipt)
    if (change.views.outline !== undefined) mergeOutline(change.views.outline)
  }

  const onChange: ChangeListener = (change) => {
    if (disposed || change.sessionId !== sessionId) return
    if (buffered !== undefined) {
      buffered.push(change)
      return
    }
    queued.push(change)
    scheduleFrame()
  }

  /**
   * Subscribes (unless subscribed) and reads the tail, the inbox and the outline, all sent at
   * once: one round trip. The engine subscribes within the watch call and orders the reads
   * behind it, so they see at least what the changes continue from; the feed is buffering.
   */
  async function read(gen: number): Promise<void> {
    try {
      // Streamed text arrives as appends onto the rows this view holds (core/text-append).
      const watching =
        unsubscribe === undefined ? engine.watch(sessionId, onChange, { textAppends: true }) : undefined
      // The outline's newest slice, not all of it: the rail's first screen (loadOutline reads more).
      const floor = openingFloor
      openingFloor = undefined
      // What the engine reported before the read left: the read replaces that, not adds to it.
      const reported = inbox.reportedIds()
      const reads = Promise.all([firstRows(floor), engine.pending(sessionId), engine.outline(sessionId)])
      if (watching) {
        // A failed watch fails the reads too; only the watch's error is reported.
        reads.catch(() => undefined)
        const stop = await watching
        // Disposed, or the worker was replaced meanwhile: the read of the fresh one subscribes.
        if (disposed || gen !== generation) {
          stop()
          return
        }
        unsubscribe = stop
      }
      const [page, pending, slice] = await reads
      if (disposed || gen !== generation) return
      window = windowFromTail(page, filter, floor)
      settleUserRows(page.messages)
      inbox.replacePending(pending, reported)
      setOutline(slice.entries, slice.start, slice.headSeq)
      status = 'ready'
      error = undefined
    } catch (thrown) {
      if (disposed || gen !== generation) return
      error = asSessionlineError(thrown)
      status = isUpgraded(error) ? 'upgraded' : 'error'
    }
    const changes = buffered ?? []
    buffered = undefined
    if (status === 'ready') for (const change of changes) applyChange(change)
    publish()
    if (status === 'ready') await coverLoadedTurns().catch(softError)
  }

  function reload(): Promise<void> {
    generation++
    buffered ??= []
    return read(generation)
  }

  /**
   * The rows of the first read: the tail page, or, when `loadThrough(seq)` was called in the
   * task that opened the view, every row from `seq` up in the same round trip (filled to a tail
   * page). A `seq` above every row reads nothing there, so the tail is read after all.
   */
  async function firstRows(floor: number | undefined): Promise<MessagePage> {
    const tailPage = () => engine.page(sessionId, { limit: tail, includeInactive: filter.includeInactive })
    if (floor === undefined) return tailPage()
    const page = await engine.loadThrough(sessionId, {
      seq: floor,
      pageSize: tail,
      includeInactive: filter.includeInactive,
    })
    return page.hasOlder && page.messages.length < tail ? tailPage() : page
  }

  /**
   * The lowest seq `loadThrough` asked for before the first read left; the first read starts in
   * a microtask, so a view opened and asked for older rows in one task reads them in one go.
   */
  let openingFloor: number | undefined
  let firstReadSent = false
  const openedAt = generation
  const ready = Promise.resolve().then(() => {
    firstReadSent = true
    // Disposed, or the connection was lost or failed in the opening task (a view opened while a
    // fresh worker is on its way): the read that follows that, with the floor, is the first.
    if (disposed || generation !== openedAt) return
    return read(generation)
  })

  /**
   * Reads pages and adds each to the window with the range it covers. Changes to rows outside
   * the window are kept meanwhile (`late`), so a page read before such a change cannot bring
   * back the old version. Returns whether the window learned anything.
   */
  async function readInto(
    read: () => Promise<{ page: MessagePage; ask: { beforeSeq?: number; afterSeq?: number } }[]>,
  ): Promise<boolean> {
    const gen = generation
    readsInFlight++
    try {
      const pages = await read()
      if (disposed || gen !== generation) return false
      // Changes that arrived before the pages did go first, as they would have without a frame.
      applyQueued()
      const before = window
      for (const { page, ask } of pages) {
        window = addRange(window, page, pageRange(page, ask), filter, late)
        settleUserRows(page.messages)
      }
      if (status === 'ready') error = undefined // a load that works again clears the last soft error
      publish()
      await coverLoadedTurns()
      return window.known !== before.known
    } finally {
      if (--readsInFlight === 0) late.clear()
    }
  }

  /**
   * Rows being read again because an append did not continue the version shown, by seq: the
   * head of the newest durable change that reached the row meanwhile (0: none), and whether
   * another append missed it meanwhile.
   */
  const rereading = new Map<number, { touchedAt: number; missedAgain: boolean }>()

  /** Notes which rows being read again `change` reached, so an older read cannot replace them. */
  function touchRereading(change: SessionChange): void {
    const touch = (seq: number) => {
      const flight = rereading.get(seq)
      if (flight) flight.touchedAt = Math.max(flight.touchedAt, change.headSeq)
    }
    for (const message of change.rows) touch(message.seq)
    for (const append of change.appends ?? []) touch(append.seq)
  }

  /**
   * Reads one row again: the window holds a version of it that an append does not continue (a
   * page brought it while the feed's appends were on their way). Until the read lands, later
   * appends that do fit it keep extending what is shown.
   */
  function rereadRow(seq: number): void {
    if (disposed) return
    const inFlight = rereading.get(seq)
    if (inFlight) {
      inFlight.missedAgain = true
      return
    }
    const flight = { touchedAt: 0, missedAgain: false }
    rereading.set(seq, flight)
    const gen = generation
    let again = false
    engine
      .page(sessionId, { afterSeq: seq - 1, limit: 1, includeInactive: filter.includeInactive })
      .then((page) => {
        if (disposed || gen !== generation) return
        // A change newer than this read reached the row meanwhile (its final version, say):
        // the read must not take it back. If an append missed that version too, read again.
        if (flight.touchedAt > page.headSeq) {
          again = flight.missedAgain
          return
        }
        const next = replaceRows(
          window,
          page.messages.filter((message) => message.seq === seq),
          filter,
        )
        if (next === window) return
        window = next
        publish()
      })
      .catch(softError)
      .finally(() => {
        rereading.delete(seq)
        if (again) rereadRow(seq)
      })
  }

  const pageOf = async (ask: { beforeSeq?: number; afterSeq?: number; limit: number }) => ({
    page: await engine.page(sessionId, { ...ask, includeInactive: filter.includeInactive }),
    ask,
  })

  /** Fetches the page just below the window and merges it in (used by loadOlder and jumps). */
  async function fetchOlder(limit: number): Promise<boolean> {
    const floor = window.known[0]?.from ?? 1
    if (!window.hasOlder || floor <= 1) return false
    return readInto(async () => [await pageOf({ beforeSeq: floor, limit })])
  }

  /**
   * Loads every row from `seq` up to what the window knows above it (the gap that holds `seq`,
   * or the window's floor) in one engine read, filled to a page boundary, and merges it in (jumps).
   */
  async function fetchThrough(seq: number): Promise<void> {
    const ceiling = gapAt(seq)?.toSeq ?? (window.known[0]?.from ?? 1) - 1
    if (ceiling < 1) return
    const ask = { beforeSeq: ceiling + 1 }
    await readInto(async () => [
      {
        page: await engine.loadThrough(sessionId, {
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
  function gapAt(seq: number): WindowGap | undefined {
    return gapsOf(window).find((gap) => gap.fromSeq <= seq && seq <= gap.toSeq)
  }

  /** Pages `gap` in from one end. */
  function fillGap(gap: WindowGap, end: GapEnd, limit: number): Promise<boolean> {
    return readInto(async () => [
      await pageOf(
        end === 'older'
          ? { beforeSeq: gap.toSeq + 1, limit }
          : { afterSeq: gap.fromSeq - 1, beforeSeq: gap.toSeq + 1, limit },
      ),
    ])
  }

  /** Seq of the start of the turn that holds `seq`, from the outline (the seq itself when none holds it). */
  function turnStartOf(seq: number): number {
    let lo = 0
    let hi = outline.length - 1
    let start = seq
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const entry = outline[mid]!
      if (entry.seq <= seq) {
        start = entry.seq
        lo = mid + 1
      } else hi = mid - 1
    }
    return start
  }

  /** Loads the turn holding `seq` and JUMP_CONTEXT rows either side, as one new segment. */
  async function loadNeighbourhood(seq: number): Promise<void> {
    const start = Math.max(1, turnStartOf(seq))
    // The next loaded range above bounds the read: what it holds is loaded already.
    const above = window.known.find((range) => range.from > start)
    const ceiling = above?.from
    await readInto(async () => {
      const below = pageOf({ beforeSeq: start, limit: JUMP_CONTEXT })
      const after: { page: MessagePage; ask: { beforeSeq?: number; afterSeq?: number } }[] = []
      let from = start - 1
      let beyond = 0
      for (;;) {
        const read = await pageOf({ afterSeq: from, beforeSeq: ceiling, limit: JUMP_CONTEXT })
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

  let outlineRun: Promise<void> | undefined

  /** Reads outline entries `from`… up to the loaded part and puts them before it; one read at a time. */
  async function loadOutlineFrom(from: number): Promise<void> {
    if (status === 'loading') await ready
    while (!disposed && status === 'ready' && outlineStart > from) {
      if (outlineRun !== undefined) {
        await outlineRun
        continue
      }
      const gen = generation
      const end = outlineStart
      outlineRun = (async () => {
        const slice = await engine.outline(sessionId, { start: from, end })
        if (disposed || gen !== generation || end !== outlineStart) return
        if (slice.start + slice.entries.length !== end) return
        setOutline([...slice.entries, ...outlineAll], slice.start, outlineHeadSeq)
        publish()
      })().finally(() => {
        outlineRun = undefined
      })
      await outlineRun
      // Nothing moved (the outline was replaced meanwhile, or is shorter than asked): stop here.
      if (outlineStart === end && gen === generation) return
    }
  }

  /**
   * Extends the outline down to the lowest loaded turn (after a jump or a page of older rows):
   * turn numbers strictly increase, so that turn is at most `first.turn - turn` places before
   * the outline's first loaded entry, and exactly there when no turn number was skipped.
   */
  async function coverLoadedTurns(): Promise<void> {
    const first = outlineAll[0]
    if (outlineStart === 0 || first === undefined) return
    let lowest: number | undefined
    for (const row of window.rows) {
      if (row.message.turn > 0) {
        lowest = row.message.turn
        break
      }
    }
    if (lowest === undefined || lowest >= first.turn) return
    await loadOutlineFrom(Math.max(0, outlineStart - (first.turn - lowest)))
  }

  function setBusy(on: boolean): void {
    busy += on ? 1 : -1
    publish()
  }

  function softError(thrown: unknown): void {
    error = asSessionlineError(thrown)
  }

  const jump = createJump({
    pager: {
      baseSeq: () => baseSeqOf(window),
      hasOlder: () => window.hasOlder,
      covers: (seq) => isKnown(window, Math.max(1, seq)),
      loadThrough: fetchThrough,
    },
    ready: () => (status === 'loading' ? ready : undefined),
    onBusy: setBusy,
    onError: softError,
  })

  let olderRun: Promise<void> | undefined
  function loadOlder(): Promise<void> {
    olderRun ??= (async () => {
      if (status === 'loading') await ready
      if (disposed || !window.hasOlder) return
      setBusy(true)
      try {
        await fetchOlder(tail)
      } catch (thrown) {
        softError(thrown)
      } finally {
        setBusy(false)
      }
    })().finally(() => {
      olderRun = undefined
    })
    return olderRun
  }

  function admit(
    text: string,
    admitOptions: { delivery?: Delivery; id?: string; attachments?: readonly AttachmentInput[] } = {},
  ): Promise<InputReceipt> {
    let request: AdmitSent
    try {
      const parsed = parseOrThrow(AdmitRequest, { ...admitOptions, text }, 'admit request')
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
    inbox.sending(id, request.text, request.delivery, files)
    publish()
    const sent = deliver(request).then(
      (receipt) => {
        inbox.applyReceipt(receipt)
        if (!disposed) publish()
        return receipt
      },
      (thrown: unknown) => {
        const failure = asSessionlineError(thrown)
        inbox.failed(id, failure)
        if (!disposed) publish()
        throw failure
      },
    )
    admitting.set(id, sent)
    const forget = () => {
      if (admitting.get(id) === sent) admitting.delete(id)
    }
    sent.then(forget, forget)
    return sent
  }

  /** Waits until a fresh worker answers (or fails with why it never will). */
  function nextConnection(): Promise<void> {
    if (connection === 'up') return Promise.resolve()
    if (connection === 'failed') return Promise.reject(connectionError)
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }))
  }

  /**
   * Admits `request`, and again on each fresh worker while the old one died before answering:
   * the engine answers a repeated id with the receipt it stored, so a re-send never doubles it.
   */
  async function deliver(request: AdmitSent): Promise<InputReceipt> {
    for (;;) {
      try {
        return await engine.admit(sessionId, request)
      } catch (thrown) {
        if (!isWorkerGone(thrown) || connection !== 'down' || disposed) throw thrown
        await nextConnection()
      }
    }
  }

  function settleWaiters(error?: SessionlineError): void {
    const waiting = waiters
    waiters = []
    for (const waiter of waiting) {
      if (error) waiter.reject(error)
      else waiter.resolve()
    }
  }

  /** Waits for an admit of `id` still on its way; whether it failed is read from the inbox after. */
  async function arrived(id: string): Promise<void> {
    await admitting.get(id)?.catch(() => undefined)
  }

  async function cancel(inputId: string): Promise<void> {
    const token = inbox.beginCancel(inputId)
    publish()
    try {
      await arrived(inputId)
      if (inbox.isLocalOnly(inputId)) {
        inbox.dropLocal(inputId) // never reached the engine: nothing durable to cancel
        return
      }
      inbox.applyReceipt(await engine.cancel(sessionId, inputId))
    } catch (thrown) {
      throw asSessionlineError(thrown)
    } finally {
      inbox.endCancel(inputId, token) // on failure the input shows again
      if (!disposed) publish()
    }
  }

  async function edit(inputId: string, text: string): Promise<void> {
    const request = parseOrThrow(EditRequest, { text }, 'edit request')
    const token = inbox.beginEdit(inputId, request.text)
    publish()
    try {
      await arrived(inputId)
      if (inbox.isLocalOnly(inputId)) {
        inbox.editLocal(inputId, request.text)
        return
      }
      inbox.applyReceipt(await engine.edit(sessionId, inputId, request))
    } catch (thrown) {
      throw asSessionlineError(thrown)
    } finally {
      inbox.endEdit(inputId, token) // on failure the old text shows again
      if (!disposed) publish()
    }
  }

  /**
   * Resends user row `messageId` as `text` on a new branch. The new prompt shows at once as a
   * `sending` input under its own id, which is its row's key too, and stays until the reload the
   * verb's `reset` starts reads that row, so the prompt never leaves the screen in between.
   */
  async function resend(messageId: string, request: { text: string; id?: string }): Promise<InputReceipt> {
    const parsed = parseOrThrow(ResendRequest, request, 'resend request')
    const id = parsed.id ?? nanoid()
    inbox.sending(id, parsed.text, 'steer')
    publish()
    try {
      const receipt = await engine.resend(sessionId, messageId, { text: parsed.text, id })
      // Shown by now (the row was read), or shown by the reload on its way: nothing to do here.
      if (!isKnownRow(id) && !inbox.isLocalOnly(id)) inbox.applyReceipt(receipt)
      return receipt
    } catch (thrown) {
      inbox.dropLocal(id) // a refused resend leaves the branch as it was: the text stays with the caller
      throw asSessionlineError(thrown)
    } finally {
      if (!disposed) publish()
    }
  }

  const isKnownRow = (id: string) => window.rows.some((row) => row.key === id)

  /** Runs `call` on inbox input `inputId` with the change `begin` shows kept on screen until it answers. */
  async function changeInput(
    inputId: string,
    begin: () => object,
    end: (token: object) => void,
    call: () => Promise<InputReceipt>,
  ): Promise<InputReceipt> {
    const token = begin()
    publish()
    try {
      await arrived(inputId)
      const receipt = await call()
      inbox.applyReceipt(receipt)
      return receipt
    } catch (thrown) {
      throw asSessionlineError(thrown)
    } finally {
      end(token) // on failure the input shows as it was
      if (!disposed) publish()
    }
  }

  return {
    sessionId,
    subscribe: store.subscribe,
    getSnapshot: store.get,
    admit,
    cancel,
    edit,
    loadOlder,
    loadThrough(seq) {
      try {
        parseOrThrow(LoadThroughRequest.shape.seq, seq, 'loadThrough seq')
      } catch (thrown) {
        return Promise.reject(thrown)
      }
      if (!firstReadSent) openingFloor = Math.min(openingFloor ?? seq, Math.max(1, seq))
      return jump(seq)
    },
    async jumpTo(seq) {
      parseOrThrow(LoadThroughRequest.shape.seq, seq, 'jumpTo seq')
      if (status === 'loading') await ready
      if (disposed || status !== 'ready' || isKnown(window, Math.max(1, seq))) return
      setBusy(true)
      try {
        await loadNeighbourhood(Math.max(1, seq))
      } catch (thrown) {
        softError(thrown)
      } finally {
        setBusy(false)
      }
    },
    async loadGap(key, end) {
      if (end !== 'older' && end !== 'newer') {
        throw new SessionlineError(
          'invalid_input',
          `loadGap: end must be 'older' or 'newer', not ${String(end)}`,
        )
      }
      const gap = gapsOf(window).find((g) => gapKey(g, window.rows) === key)
      if (disposed || gap === undefined) return
      setBusy(true)
      try {
        await fillGap(gap, end, tail)
      } catch (thrown) {
        softError(thrown)
      } finally {
        setBusy(false)
      }
    },
    async loadOutline(from) {
      parseOrThrow(OutlineRequest.shape.start, from, 'loadOutline from')
      try {
        await loadOutlineFrom(from ?? 0)
      } catch (thrown) {
        softError(thrown)
        publish()
      }
    },
    interrupt: () => engine.interrupt(sessionId),
    resend,
    regenerate: (messageId) => engine.regenerate(sessionId, messageId),
    switchBranch: (messageId) => engine.switchBranch(sessionId, messageId),
    rewind: (messageId) => engine.rewind(sessionId, messageId),
    async fork(forkOptions) {
      return engine.fork(sessionId, parseOrThrow(ForkRequest, forkOptions ?? {}, 'fork request'))
    },
    async compact(compactOptions) {
      return engine.compact(sessionId, parseOrThrow(CompactRequest, compactOptions ?? {}, 'compact request'))
    },
    async reorder(inputId, request) {
      const parsed = parseOrThrow(ReorderRequest, request, 'reorder request')
      return changeInput(
        inputId,
        () => inbox.beginMove(inputId, parsed.before),
        (token) => inbox.endMove(inputId, token),
        () => engine.reorder(sessionId, inputId, parsed),
      )
    },
    async setDelivery(inputId, delivery) {
      const parsed = parseOrThrow(SetDeliveryRequest, delivery, 'delivery')
      return changeInput(
        inputId,
        () => inbox.beginDelivery(inputId, parsed),
        (token) => inbox.endDelivery(inputId, token),
        () => engine.setDelivery(sessionId, inputId, parsed),
      )
    },
    context: () => engine.context(sessionId),
    respondToApproval: (callId, answer) => engine.respondToApproval(sessionId, callId, answer),
    connectionLost() {
      if (disposed || connection !== 'up') return
      connection = 'down'
      generation++ // answers of the dead worker no longer count
      dropQueued()
      buffered = []
      unsubscribe?.()
      unsubscribe = undefined
      status = 'reconnecting'
      publish()
    },
    reconnected() {
      if (disposed || connection !== 'down') return
      connection = 'up'
      settleWaiters()
      void read(generation) // re-subscribes first, then re-reads: nothing in the gap is missed
    },
    connectionFailed(failure) {
      if (disposed || connection === 'failed') return
      connection = 'failed'
      connectionError = failure
      generation++
      dropQueued()
      buffered = undefined
      unsubscribe?.()
      unsubscribe = undefined
      status = 'error'
      error = failure
      settleWaiters(failure)
      publish()
    },
    dispose() {
      if (disposed) return
      disposed = true
      dropQueued()
      buffered = undefined
      unsubscribe?.()
      unsubscribe = undefined
      settleWaiters(new SessionlineError('aborted', `the view of ${sessionId} was disposed`))
    },
  }
}
