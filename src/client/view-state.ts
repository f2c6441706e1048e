/**
 * What a session view shows, as a plain value, and the one function that changes it: every
 * change a view makes (a load, a page, a feed change, an outline slice, a soft error, the inbox
 * moving) is an action folded by `reduceView`. Pure: no engine, no timers, no promises, so it is
 * tested on plain values; the view dispatches each action and publishes what comes out.
 *
 * @example
 *   let state = initialViewState({ includeInactive: false })
 *   state = reduceView(state, { type: 'opened', page, outline: slice })
 *   state = reduceView(state, { type: 'failed', error }) // a soft error: status stays 'ready'
 */
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { SessionMessage } from '../schema/messages'
import type { MessagePage } from '../schema/requests'
import type { OutlineSlice, TurnOutlineEntry } from '../schema/session'
import type { SyncStatus } from '../schema/sync'
import type { InboxInputs } from './inbox'
import type { TimelineInput, TimelineSnapshot } from './types'
import {
  addRange,
  EMPTY_WINDOW,
  keepEqualRows,
  pageRange,
  replaceRows,
  type TranscriptWindow,
  type WindowFilter,
  windowFromTail,
} from './window'

/** The loaded suffix of the turn outline. */
export interface LoadedOutline {
  /** Every loaded entry, inactive ones too, from position `start`. */
  readonly all: readonly TurnOutlineEntry[]
  /** Position of `all[0]` in the whole outline: how many entries are not loaded yet. */
  readonly start: number
  /** Log head the loaded entries reflect: a slice at or below it is already in them. */
  readonly headSeq: number
  /** `all` as the snapshot shows it (superseded turns only with `includeInactive`). */
  readonly shown: readonly TurnOutlineEntry[]
}

/** Everything a view shows, as one plain value (the snapshot is derived from it). */
export interface ViewState {
  readonly filter: WindowFilter
  readonly status: TimelineSnapshot['status']
  /** The last error, hard (status `error`/`upgraded`) or soft (a failed page; status stays). */
  readonly error: SessionlineError | undefined
  readonly window: TranscriptWindow
  readonly outline: LoadedOutline
  /** Loads of older rows, gaps and jumps running now (`loadingOlder` while above 0). */
  readonly busy: number
  /** The inbox as the page shows it (the `Inbox` owns the receipts and overlays behind it). */
  readonly inbox: InboxInputs
  /** The session's sync status as the engine last said (docs/decisions/0036); undefined when not synced. */
  readonly sync: SyncStatus | undefined
}

/** A page read and what it asked for (the range it covers follows from both). */
export interface PageRead {
  page: MessagePage
  ask: { beforeSeq?: number; afterSeq?: number }
}

/** Versions of rows outside the window that changed while pages were on their way, by id. */
export type LateRows = ReadonlyMap<string, { message: SessionMessage; headSeq: number }>

/** The changes a view makes to what it shows; `reduceView` folds each. */
export type ViewAction =
  /** The first read (or a reload's) came back: the window, the outline, status `ready`. */
  | { type: 'opened'; page: MessagePage; readFrom?: number; outline: OutlineSlice }
  /** The view stopped for good or until a reload: a failed load, a halt, a deleted session, a lost worker. */
  | { type: 'stopped'; error: SessionlineError }
  /** The worker died and a fresh one is on its way: rows stay shown. */
  | { type: 'reconnecting' }
  /** The feed moved the window (rows upserted, text appended, the head advanced). */
  | { type: 'fed'; window: TranscriptWindow }
  /** Pages were read into the window (older rows, a gap, a jump). A working load clears a soft error. */
  | { type: 'paged'; pages: readonly PageRead[]; late?: LateRows }
  /** Row `seq` was read again because an append did not continue the version shown. */
  | { type: 'reread'; seq: number; messages: readonly SessionMessage[] }
  /** A change carried the outline's changed suffix. */
  | { type: 'outlineChanged'; slice: OutlineSlice }
  /** Older outline entries were read, ending where the loaded part began (`end`). */
  | { type: 'outlineOlder'; slice: OutlineSlice; end: number }
  | { type: 'busy'; on: boolean }
  /** A soft error: the view stays usable, the snapshot carries the error until a load works. */
  | { type: 'failed'; error: unknown }
  | { type: 'inbox'; inputs: InboxInputs }
  /** The engine said the session's sync status changed. */
  | { type: 'sync'; status: SyncStatus }

const NO_OUTLINE: readonly TurnOutlineEntry[] = Object.freeze([])
const NO_INPUTS: readonly TimelineInput[] = Object.freeze([])

/** A view before its first load: `loading`, nothing shown. */
export function initialViewState(filter: WindowFilter): ViewState {
  return {
    filter,
    status: 'loading',
    error: undefined,
    window: EMPTY_WINDOW,
    outline: { all: NO_OUTLINE, start: 0, headSeq: -1, shown: NO_OUTLINE },
    busy: 0,
    inbox: { steers: NO_INPUTS, queued: NO_INPUTS },
    sync: undefined,
  }
}

/** Anything thrown becomes a `SessionlineError`, so the snapshot's `error` has one type. */
export function asSessionlineError(error: unknown): SessionlineError {
  if (isSessionlineError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new SessionlineError('internal', message, undefined, { cause: error })
}

/** The engine refused because a newer version of the app upgraded the database. */
export const isUpgraded = (error: SessionlineError): boolean =>
  error.code === 'storage_unavailable' &&
  (error.details as { reason?: unknown } | undefined)?.reason === 'upgraded'

function outlineOf(
  all: readonly TurnOutlineEntry[],
  start: number,
  headSeq: number,
  filter: WindowFilter,
): LoadedOutline {
  // Superseded turns (an import's history before a compaction) reach the rail only with `includeInactive`.
  const shown =
    filter.includeInactive || !all.some((e) => e.visibility === 'inactive')
      ? all
      : Object.freeze(all.filter((e) => e.visibility !== 'inactive'))
  return { all, start, headSeq, shown }
}

/**
 * Whether the suffix `slice` carries can be merged over `outline`: it is not news, or it starts
 * within (or right after) the loaded part. One that starts past it leaves entries unknown
 * between them: the outline must be read again.
 */
export const joinsOutline = (outline: LoadedOutline, slice: OutlineSlice): boolean =>
  slice.headSeq <= outline.headSeq || slice.start - outline.start <= outline.all.length

function mergeOutline(outline: LoadedOutline, slice: OutlineSlice, filter: WindowFilter): LoadedOutline {
  if (slice.headSeq <= outline.headSeq || !joinsOutline(outline, slice)) return outline
  if (slice.start <= outline.start) return outlineOf(slice.entries, slice.start, slice.headSeq, filter)
  const keep = slice.start - outline.start
  return outlineOf([...outline.all.slice(0, keep), ...slice.entries], outline.start, slice.headSeq, filter)
}

function prependOutline(
  outline: LoadedOutline,
  slice: OutlineSlice,
  end: number,
  filter: WindowFilter,
): LoadedOutline {
  // Replaced meanwhile, or shorter than asked: the entries do not end where the loaded part begins.
  if (outline.start !== end || slice.start + slice.entries.length !== end) return outline
  return outlineOf([...slice.entries, ...outline.all], slice.start, outline.headSeq, filter)
}

function paged(state: ViewState, pages: readonly PageRead[], late: LateRows | undefined): ViewState {
  let window = state.window
  for (const { page, ask } of pages) window = addRange(window, page, pageRange(page, ask), state.filter, late)
  // A load that works again clears the last soft error.
  const error = state.status === 'ready' ? undefined : state.error
  return window === state.window && error === state.error ? state : { ...state, window, error }
}

/** The next state after `action`; `state` itself when the action changes nothing. */
export function reduceView(state: ViewState, action: ViewAction): ViewState {
  switch (action.type) {
    case 'opened': {
      const { page, readFrom, outline } = action
      return {
        ...state,
        status: 'ready',
        error: undefined,
        window: keepEqualRows(state.window, windowFromTail(page, state.filter, readFrom)),
        outline: outlineOf(outline.entries, outline.start, outline.headSeq, state.filter),
      }
    }
    case 'stopped':
      return { ...state, status: isUpgraded(action.error) ? 'upgraded' : 'error', error: action.error }
    case 'reconnecting':
      return state.status === 'reconnecting' ? state : { ...state, status: 'reconnecting' }
    case 'fed':
      return action.window === state.window ? state : { ...state, window: action.window }
    case 'paged':
      return paged(state, action.pages, action.late)
    case 'reread': {
      const rows = action.messages.filter((message) => message.seq === action.seq)
      const window = replaceRows(state.window, rows, state.filter)
      return window === state.window ? state : { ...state, window }
    }
    case 'outlineChanged': {
      const outline = mergeOutline(state.outline, action.slice, state.filter)
      return outline === state.outline ? state : { ...state, outline }
    }
    case 'outlineOlder': {
      const outline = prependOutline(state.outline, action.slice, action.end, state.filter)
      return outline === state.outline ? state : { ...state, outline }
    }
    case 'busy':
      return { ...state, busy: state.busy + (action.on ? 1 : -1) }
    case 'failed':
      return { ...state, error: asSessionlineError(action.error) }
    case 'inbox':
      return action.inputs === state.inbox ? state : { ...state, inbox: action.inputs }
    case 'sync':
      return { ...state, sync: action.status }
  }
}

/**
 * The outline position to load from so the outline reaches the lowest loaded turn (after a jump
 * or a page of older rows), or undefined when it does: turn numbers strictly increase, so that
 * turn is at most `first.turn - turn` places before the first loaded entry, and exactly there
 * when no turn number was skipped.
 */
export function outlineStartFor(state: ViewState): number | undefined {
  const { outline, window } = state
  const first = outline.all[0]
  if (outline.start === 0 || first === undefined) return undefined
  const lowest = window.rows.find((row) => row.message.turn > 0)?.message.turn
  if (lowest === undefined || lowest >= first.turn) return undefined
  return Math.max(0, outline.start - (first.turn - lowest))
}

/** Seq of the start of the turn that holds `seq`, from the loaded outline (`seq` itself when none holds it). */
export function turnStartOf(outline: readonly TurnOutlineEntry[], seq: number): number {
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
