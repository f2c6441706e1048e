/**
 * The turn outline: one entry per turn, `{turn, seq, prompt, response}`, for the turn rail.
 *
 * Rules (docs/architecture.md §6):
 * - `turn/start` opens an entry (`seq` is that event's seq) only when no turn is open and its
 *   number advances past every earlier turn; anything else is skipped, with its messages.
 *   The open turn's entry is in the outline at once, with `prompt` and `response` empty, so the
 *   rail can point at a turn that is still running.
 * - The turn's first human (`source: 'user'`) `user/message` fills `prompt`; later steers,
 *   synthetic messages and messages outside a turn are ignored.
 * - The newest text of the turn's assistant messages is buffered as a draft (a bounded prefix:
 *   previews only ever read `PREVIEW_LIMITS.scanChars` characters); `turn/end` commits it to
 *   `response`. `response` stays empty while the turn is open.
 *
 * The entries array only changes when an entry visibly changes (at most three times per turn:
 * the turn opens, its prompt arrives, its response commits), and `view` returns it as is, so the
 * identity gate pushes nothing for streamed deltas.
 */
import type { StoredEvent } from '../schema/events'
import type { TurnOutlineEntry } from '../schema/session'
import {
  type ChunkedList,
  createTransientEdits,
  emptyList,
  type ListEdits,
  lastItem,
  listItems,
  persistentEdits,
} from './chunked-list'
import { clampPrompt, clampResponse, PREVIEW_LIMITS } from './preview'
import type { Projection } from './projection'

export interface OutlineOpenTurn {
  turn: number
  /** Seq of the turn's `turn/start`. */
  seq: number
  /** The clamped first human prompt, once it came. */
  prompt: string | undefined
  /** A prefix (long enough for `clampResponse`) of the newest assistant text of the turn. */
  draft: string | undefined
  /** The assistant message the draft was read from (absent in states stored before it was always set). */
  draftMessageId?: string | undefined
}

export interface OutlineState {
  /** One entry per turn, in a chunked list: a step copies one chunk, not every entry. */
  entries: ChunkedList<TurnOutlineEntry>
  open: OutlineOpenTurn | undefined
}

/** One more character than a preview reads, so a draft still knows it goes on past the scan. */
const DRAFT_CHARS = PREVIEW_LIMITS.scanChars + 1

/** `text` cut to `DRAFT_CHARS` (sliced only when longer: most drafts are short). */
function draftOf(text: string): string {
  return text.length > DRAFT_CHARS ? text.slice(0, DRAFT_CHARS) : text
}

// The constructors below are spelled out (no spread) and give every open turn the same shape:
// they run for every streamed delta, and one shape keeps those steps monomorphic.
const outlineState = (entries: OutlineState['entries'], open: OutlineOpenTurn | undefined): OutlineState => ({
  entries,
  open,
})
const openTurnOf = (
  turn: number,
  seq: number,
  prompt: string | undefined,
  draft: string | undefined,
  draftMessageId: string | undefined,
): OutlineOpenTurn => ({ turn, seq, prompt, draft, draftMessageId })

/**
 * The entry of the open turn with its prompt or response set. The open turn's entry is always
 * one this fold appended (`openTurn`), so it has exactly these four fields.
 */
const entryOf = (last: TurnOutlineEntry, prompt: string, response: string): TurnOutlineEntry => ({
  turn: last.turn,
  seq: last.seq,
  prompt,
  response,
})

const lastTurn = (state: OutlineState) => lastItem(state.entries)?.turn ?? 0

function openTurn(state: OutlineState, turn: number, seq: number, edits: ListEdits): OutlineState {
  if (state.open !== undefined || turn <= lastTurn(state)) return state
  return outlineState(
    edits.appendItem(state.entries, { turn, seq, prompt: '', response: '' }),
    openTurnOf(turn, seq, undefined, undefined, undefined),
  )
}

function takePrompt(state: OutlineState, text: string, edits: ListEdits): OutlineState {
  const open = state.open
  if (open === undefined || open.prompt !== undefined) return state
  const prompt = clampPrompt(text)
  const last = lastItem(state.entries)!
  const entries =
    prompt === last.prompt
      ? state.entries
      : edits.replaceLast(state.entries, entryOf(last, prompt, last.response))
  return outlineState(entries, openTurnOf(open.turn, open.seq, prompt, open.draft, open.draftMessageId))
}

function extendDraft(state: OutlineState, messageId: string, text: string): OutlineState {
  const open = state.open
  if (open === undefined || text === '') return state
  if (open.draftMessageId !== messageId)
    return outlineState(state.entries, openTurnOf(open.turn, open.seq, open.prompt, draftOf(text), messageId))
  const draft = open.draft ?? ''
  if (draft.length >= DRAFT_CHARS) return state // the preview is settled: nothing past the scan counts
  return outlineState(
    state.entries,
    openTurnOf(open.turn, open.seq, open.prompt, draftOf(draft + text), messageId),
  )
}

function closeTurn(state: OutlineState, turn: number, edits: ListEdits): OutlineState {
  const open = state.open
  if (open === undefined || open.turn !== turn) return state
  if (open.draft === undefined) return outlineState(state.entries, undefined)
  const response = clampResponse(open.draft)
  const last = lastItem(state.entries)!
  const entries =
    response === last.response
      ? state.entries
      : edits.replaceLast(state.entries, entryOf(last, last.prompt, response))
  return outlineState(entries, undefined)
}

/** One step of the outline fold, changing lists through `edits`. */
function applyOutline(state: OutlineState, event: StoredEvent, edits: ListEdits): OutlineState {
  switch (event.type) {
    case 'turn/start':
      return openTurn(state, event.data.turn, event.seq, edits)
    case 'user/message':
      return event.data.source === 'user' ? takePrompt(state, event.data.text, edits) : state
    case 'assistant/delta':
      return event.data.text === undefined ? state : extendDraft(state, event.data.messageId, event.data.text)
    case 'turn/end':
      return closeTurn(state, event.data.turn, edits)
    default:
      return state
  }
}

export const turnOutline: Projection<OutlineState, readonly TurnOutlineEntry[]> = {
  name: 'turnOutline',
  // 2: entries became a chunked list (1 kept a plain array, copied whole on every change).
  version: 2,
  init: () => ({ entries: emptyList(), open: undefined }),
  apply: (state, event) => applyOutline(state, event, persistentEdits),
  view: (state) => listItems(state.entries),
}

/**
 * A transient replay of the outline fold: the same steps as `turnOutline.apply`, but the entry
 * list's chunk array and last chunk, once this replay has copied them, are patched in place
 * (core/chunked-list `createTransientEdits`). A persistent step copies the chunk array, which
 * grows with the session, three times a turn; a replay copies it once per `state()`.
 *
 * Intermediate states are never handed out, so nobody can tell: `state()` is the state the pure
 * fold ends with (the very state it was given when no event changed it), and what it was given is
 * never touched. `state()` seals what it hands out: a later `add` copies again rather than patch it.
 *
 * @example
 *   const replay = createOutlineReplay(state)
 *   for (const event of batch) replay.add(event)
 *   state = replay.state()
 */
export function createOutlineReplay(start: OutlineState) {
  const edits = createTransientEdits()
  let state = start
  return {
    add(event: StoredEvent): void {
      state = applyOutline(state, event, edits)
    },
    state(): OutlineState {
      edits.seal()
      return state
    },
  }
}
