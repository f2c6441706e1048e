/**
 * A live, optimistic view of one session for a page to render: the loaded window of transcript
 * rows, the inbox inline and in the tray, the turn outline and the rail, behind
 * `subscribe`/`getSnapshot` (a new snapshot object only when something changed).
 *
 * Loading never misses a commit: the view subscribes to the change feed first and buffers what
 * arrives, then reads the tail page, the pending receipts and the outline, then applies the
 * buffered changes on top (changes the reads already hold are recognised by their head seq).
 *
 * @example
 *   const view = createSessionView(engine, sessionId)
 *   const stop = view.subscribe(() => render(view.getSnapshot()))
 *   await view.admit('and add a test', { delivery: 'queue' }) // in the tray at once
 */
import { nanoid } from 'nanoid'
import type { ChangeListener, Engine, SessionChange, Unsubscribe } from '../engine/types'
import type { Delivery } from '../schema/common'
import { isSessionlineError, parseOrThrow, SessionlineError } from '../schema/errors'
import { AdmitRequest, EditRequest, type InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import {
  DEFAULT_JUMP_PAGE,
  DEFAULT_PAGE_LIMIT,
  LoadThroughRequest,
  type MessagePage,
} from '../schema/requests'
import type { TurnOutlineEntry } from '../schema/session'
import { createTurnRail } from '../view/rail'
import { Inbox } from './inbox'
import { createJump } from './jump'
import { createLoadedTurns } from './loaded-turns'
import { createStore } from './store'
import type { OpenOptions, SessionView, TimelineInput, TimelineRow, TimelineSnapshot } from './types'
import {
  applyMessages,
  baseSeqOf,
  EMPTY_WINDOW,
  prependPage,
  type TranscriptWindow,
  type WindowFilter,
  windowFromTail,
} from './window'

/** What a view needs of an engine (a `SessionlineClient` or an in-process `Engine`). */
export type ViewEngine = Pick<
  Engine,
  'page' | 'loadThrough' | 'pending' | 'projection' | 'watch' | 'admit' | 'cancel' | 'edit' | 'interrupt'
>

const NO_OUTLINE: readonly TurnOutlineEntry[] = Object.freeze([])
const NO_ROWS: readonly TimelineRow[] = Object.freeze([])

/** Anything thrown becomes a `SessionlineError`, so the snapshot's `error` has one type. */
function asSessionlineError(error: unknown): SessionlineError {
  if (isSessionlineError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new SessionlineError('internal', message, undefined, { cause: error })
}

const isUserRow = (message: SessionMessage) => message.role === 'user'

function shallowEqual(a: TimelineSnapshot, b: TimelineSnapshot): boolean {
  const keys = Object.keys(a) as (keyof TimelineSnapshot)[]
  return keys.length === Object.keys(b).length && keys.every((key) => Object.is(a[key], b[key]))
}

export function createSessionView(
  engine: ViewEngine,
  sessionId: string,
  options: OpenOptions = {},
): SessionView {
  const tail = options.tail ?? DEFAULT_PAGE_LIMIT
  const filter: WindowFilter = { includeInactive: options.includeInactive ?? false }

  let status: TimelineSnapshot['status'] = 'loading'
  let error: SessionlineError | undefined
  let window: TranscriptWindow = EMPTY_WINDOW
  let outline: readonly TurnOutlineEntry[] = NO_OUTLINE
  const inbox = new Inbox()
  let busy = 0
  let disposed = false
  /** Bumped by a reset: answers to reads made before it are dropped. */
  let generation = 0
  /** Changes that arrive while a (re)load reads; applied on top of what it read. */
  let buffered: SessionChange[] | undefined = []
  let unsubscribe: Unsubscribe | undefined
  /** Rows that changed below the window while older pages were on their way. */
  const late = new Map<string, { message: SessionMessage; headSeq: number }>()
  let olderInFlight = 0
  const admitting = new Map<string, Promise<InputReceipt>>()

  const loadedTurns = createLoadedTurns()
  const rail = createTurnRail()
  const inputRows = new WeakMap<TimelineInput, TimelineRow>()
  const initial: TimelineSnapshot = Object.freeze({
    status,
    rows: NO_ROWS,
    queued: Object.freeze([]) as readonly TimelineInput[],
    outline,
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

  function inputRow(input: TimelineInput): TimelineRow {
    let row = inputRows.get(input)
    if (row === undefined) {
      row = Object.freeze({ key: input.id, kind: 'input' as const, input })
      inputRows.set(input, row)
    }
    return row
  }

  /** Rebuilds the snapshot from the parts; keeps the old one (and every unchanged part) when equal. */
  function publish(): void {
    const { steers, queued } = inbox.inputs()
    let rows = lastParts.rows
    if (lastParts.windowRows !== window.rows || lastParts.steers !== steers) {
      rows = steers.length === 0 ? window.rows : Object.freeze([...window.rows, ...steers.map(inputRow)])
      lastParts = { windowRows: window.rows, steers, rows }
    }
    const next: TimelineSnapshot = {
      status,
      rows,
      queued,
      outline,
      rail: rail(loadedTurns(window.rows, window.hasOlder), outline),
      baseSeq: baseSeqOf(window),
      headSeq: window.headSeq,
      hasOlder: window.hasOlder,
      loadingOlder: busy > 0,
    }
    if (error !== undefined) next.error = error
    if (!shallowEqual(next, store.get())) store.set(Object.freeze(next))
  }

  function settleUserRows(messages: readonly SessionMessage[]): void {
    // A promoted row has its input's id: once the row exists the input is no longer pending.
    for (const message of messages) if (isUserRow(message)) inbox.settle(message.id)
  }

  function applyChange(change: SessionChange): void {
    if (change.deleted) {
      status = 'error'
      error = new SessionlineError('not_found', `session ${sessionId} was deleted`)
      return
    }
    if (change.reset) {
      void reload()
      return
    }
    const applied = applyMessages(window, change.rows, change, filter)
    window = applied.window
    if (olderInFlight > 0 && change.durable)
      for (const message of applied.outside) late.set(message.id, { message, headSeq: change.headSeq })
    settleUserRows(change.rows)
    for (const receipt of change.inputs) if (receipt.sessionId === sessionId) inbox.applyReceipt(receipt)
    if (change.views.turnOutline !== undefined) outline = change.views.turnOutline
  }

  const onChange: ChangeListener = (change) => {
    if (disposed || change.sessionId !== sessionId) return
    if (buffered !== undefined) {
      buffered.push(change)
      return
    }
    applyChange(change)
    publish()
  }

  /** Reads the tail, the inbox and the outline; the feed is already buffering. */
  async function read(gen: number): Promise<void> {
    try {
      if (unsubscribe === undefined) {
        const stop = await engine.watch(sessionId, onChange)
        if (disposed) {
          stop()
          return
        }
        unsubscribe = stop
      }
      const [page, pending, currentOutline] = await Promise.all([
        engine.page(sessionId, { limit: tail, includeInactive: filter.includeInactive }),
        engine.pending(sessionId),
        engine.projection(sessionId, 'turnOutline'),
      ])
      if (disposed || gen !== generation) return
      window = windowFromTail(page, filter)
      settleUserRows(page.messages)
      for (const receipt of pending) inbox.applyReceipt(receipt)
      outline = currentOutline
      status = 'ready'
      error = undefined
    } catch (thrown) {
      if (disposed || gen !== generation) return
      status = 'error'
      error = asSessionlineError(thrown)
    }
    const changes = buffered ?? []
    buffered = undefined
    if (status === 'ready') for (const change of changes) applyChange(change)
    publish()
  }

  function reload(): Promise<void> {
    generation++
    buffered ??= []
    return read(generation)
  }

  const ready = read(generation)

  /** Fetches the `limit` rows just below the window and merges them in (loadOlder). */
  const fetchOlder = (limit: number) =>
    fetchBelow((beforeSeq) =>
      engine.page(sessionId, { beforeSeq, limit, includeInactive: filter.includeInactive }),
    )

  /** Fetches every row from `seq` up to the window in one engine read, and merges them in (jumps). */
  const fetchThrough = (seq: number) =>
    fetchBelow((beforeSeq) =>
      engine.loadThrough(sessionId, {
        seq,
        beforeSeq,
        pageSize: DEFAULT_JUMP_PAGE,
        includeInactive: filter.includeInactive,
      }),
    )

  /** Reads rows below the window with `read(baseSeq)` and merges them in. */
  async function fetchBelow(read: (beforeSeq: number) => Promise<MessagePage>): Promise<void> {
    const before = baseSeqOf(window)
    if (before === 0 || !window.hasOlder) return
    const gen = generation
    olderInFlight++
    let page: MessagePage
    try {
      page = await read(before)
    } finally {
      if (--olderInFlight === 0) late.clear()
    }
    if (disposed || gen !== generation) return
    window = prependPage(window, page, filter, late)
    settleUserRows(page.messages)
    if (status === 'ready') error = undefined // a load that works again clears the last soft error
    publish()
  }

  function setBusy(on: boolean): void {
    busy += on ? 1 : -1
    publish()
  }

  function softError(thrown: unknown): void {
    error = asSessionlineError(thrown)
  }

  const jump = createJump({
    pager: { baseSeq: () => baseSeqOf(window), hasOlder: () => window.hasOlder, loadThrough: fetchThrough },
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
    admitOptions: { delivery?: Delivery; id?: string } = {},
  ): Promise<InputReceipt> {
    let request: { id: string; text: string; delivery: Delivery }
    try {
      const parsed = parseOrThrow(AdmitRequest, { ...admitOptions, text }, 'admit request')
      request = { id: parsed.id ?? nanoid(), text: parsed.text, delivery: parsed.delivery }
    } catch (thrown) {
      return Promise.reject(thrown)
    }
    const { id } = request
    inbox.sending(id, request.text, request.delivery)
    publish()
    const sent = engine.admit(sessionId, request).then(
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
      return jump(seq)
    },
    interrupt: () => engine.interrupt(sessionId),
    dispose() {
      if (disposed) return
      disposed = true
      buffered = undefined
      unsubscribe?.()
      unsubscribe = undefined
    },
  }
}
