/**
 * The view's reducer on plain values: no engine, no timers. Each action's effect on the state,
 * the actions that change nothing giving back the same state object (what keeps the snapshot
 * stable), and the outline folded from random slices equal to the whole outline it was cut from.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { TimelineInput } from '../../src/client/types'
import {
  initialViewState,
  joinsOutline,
  outlineStartFor,
  reduceView,
  turnStartOf,
  type ViewAction,
  type ViewState,
} from '../../src/client/view-state'
import { SessionlineError } from '../../src/schema/errors'
import type { SessionMessage } from '../../src/schema/messages'
import type { MessagePage } from '../../src/schema/requests'
import type { OutlineSlice, TurnOutlineEntry } from '../../src/schema/session'

const visibleOnly = { includeInactive: false }

const message = (seq: number, turn = 1, text = `m${seq}`): SessionMessage => ({
  id: `id-${seq}`,
  sessionId: 's',
  seq,
  role: 'assistant',
  turn,
  parts: [{ type: 'text', text }],
  status: 'complete',
  visibility: 'visible',
  createdAt: 0,
  updatedAt: 0,
})

const page = (seqs: readonly number[], headSeq: number, hasOlder = false): MessagePage => ({
  messages: seqs.map((seq) => message(seq, seq)),
  baseSeq: seqs[0] ?? 0,
  headSeq,
  hasOlder,
})

const entry = (turn: number, inactive = false): TurnOutlineEntry => ({
  turn,
  seq: turn * 10,
  prompt: `q${turn}`,
  response: `a${turn}`,
  ...(inactive ? { visibility: 'inactive' as const } : {}),
})

/** Entries `start`… of an outline of `total` turns (turn n at position n - 1), at log head `headSeq`. */
const slice = (start: number, total: number, headSeq: number): OutlineSlice => ({
  headSeq,
  total,
  start,
  entries: Array.from({ length: total - start }, (_, i) => entry(start + i + 1)),
})

const fold = (actions: readonly ViewAction[], state = initialViewState(visibleOnly)): ViewState =>
  actions.reduce(reduceView, state)

const opened = (seqs: readonly number[], headSeq: number, hasOlder = false, outline = slice(0, 0, headSeq)) =>
  fold([{ type: 'opened', page: page(seqs, headSeq, hasOlder), outline }])

describe('the view reducer', () => {
  test('starts loading with nothing shown', () => {
    const state = initialViewState(visibleOnly)
    expect(state).toMatchObject({ status: 'loading', error: undefined, busy: 0 })
    expect(state.window.rows).toEqual([])
    expect(state.outline).toMatchObject({ all: [], start: 0, shown: [] })
  })

  test('opened: ready, with the page as the window and the slice as the outline; an earlier error is gone', () => {
    const failed = fold([{ type: 'failed', error: new SessionlineError('timeout', 'slow') }])
    const state = reduceView(failed, {
      type: 'opened',
      page: page([5, 6, 7], 7, true),
      outline: slice(3, 7, 7),
    })
    expect(state.status).toBe('ready')
    expect(state.error).toBeUndefined()
    expect(state.window.rows.map((r) => r.message.seq)).toEqual([5, 6, 7])
    expect(state.window.hasOlder).toBe(true)
    expect(state.outline.start).toBe(3)
    expect(state.outline.all.map((e) => e.turn)).toEqual([4, 5, 6, 7])
  })

  test('the outline shows inactive turns only with includeInactive', () => {
    const outline: OutlineSlice = {
      headSeq: 9,
      total: 3,
      start: 0,
      entries: [entry(1, true), entry(2), entry(3)],
    }
    const opening: ViewAction = { type: 'opened', page: page([], 9), outline }
    const plain = reduceView(initialViewState(visibleOnly), opening)
    expect(plain.outline.all).toHaveLength(3)
    expect(plain.outline.shown.map((e) => e.turn)).toEqual([2, 3])
    const everything = reduceView(initialViewState({ includeInactive: true }), opening)
    expect(everything.outline.shown).toBe(everything.outline.all)
  })

  test('a soft error keeps the status; a page that loads clears it, but not a hard one', () => {
    const error = new SessionlineError('timeout', 'slow')
    const soft = reduceView(opened([10, 11], 11, true), { type: 'failed', error })
    expect(soft).toMatchObject({ status: 'ready', error })
    const paged = reduceView(soft, {
      type: 'paged',
      pages: [{ page: page([8, 9], 11, false), ask: { beforeSeq: 10 } }],
    })
    expect(paged.error).toBeUndefined()
    expect(paged.window.rows.map((r) => r.message.seq)).toEqual([8, 9, 10, 11])
    expect(paged.window.hasOlder).toBe(false)

    const stopped = reduceView(soft, { type: 'stopped', error: new SessionlineError('not_found', 'deleted') })
    const after = reduceView(stopped, {
      type: 'paged',
      pages: [{ page: page([8, 9], 11), ask: { beforeSeq: 10 } }],
    })
    expect(after).toMatchObject({ status: 'error', error: { code: 'not_found' } })
  })

  test('anything thrown becomes a SessionlineError', () => {
    const state = reduceView(opened([], 0), { type: 'failed', error: new Error('boom') })
    expect(state.error).toBeInstanceOf(SessionlineError)
    expect(state.error).toMatchObject({ code: 'internal', message: 'boom' })
  })

  test('stopped: upgraded for a database a newer app upgraded, error for anything else', () => {
    const upgraded = new SessionlineError('storage_unavailable', 'reload', { reason: 'upgraded' })
    expect(reduceView(opened([], 0), { type: 'stopped', error: upgraded }).status).toBe('upgraded')
    const closed = new SessionlineError('storage_unavailable', 'gone', { reason: 'closed' })
    expect(reduceView(opened([], 0), { type: 'stopped', error: closed }).status).toBe('error')
    const gone = new SessionlineError('worker_gone', 'gone')
    expect(reduceView(opened([], 0), { type: 'stopped', error: gone })).toMatchObject({
      status: 'error',
      error: gone,
    })
  })

  test('busy counts overlapping loads', () => {
    const state = fold([
      { type: 'busy', on: true },
      { type: 'busy', on: true },
      { type: 'busy', on: false },
    ])
    expect(state.busy).toBe(1)
    expect(reduceView(state, { type: 'busy', on: false }).busy).toBe(0)
  })

  test('actions that change nothing give back the same state object', () => {
    const state = opened([1, 2], 2, false, slice(0, 2, 2))
    const inbox = state.inbox
    expect(reduceView(state, { type: 'fed', window: state.window })).toBe(state)
    expect(reduceView(state, { type: 'inbox', inputs: inbox })).toBe(state)
    expect(reduceView(state, { type: 'outlineChanged', slice: slice(0, 2, 2) })).toBe(state) // not news
    expect(reduceView(state, { type: 'reread', seq: 2, messages: [state.window.rows[1]!.message] })).toBe(
      state,
    )
    // Pages of what the window knows already.
    expect(reduceView(state, { type: 'paged', pages: [{ page: page([1, 2], 2), ask: {} }] })).toBe(state)
    const reconnecting = reduceView(state, { type: 'reconnecting' })
    expect(reconnecting.status).toBe('reconnecting')
    expect(reduceView(reconnecting, { type: 'reconnecting' })).toBe(reconnecting)
  })

  test('reread replaces the row at its seq only', () => {
    const state = opened([1, 2, 3], 3)
    const next = reduceView(state, {
      type: 'reread',
      seq: 2,
      messages: [message(2, 2, 'read again'), message(3, 3, 'not asked')],
    })
    const texts = next.window.rows.map((r) => (r.message.parts[0] as { text: string }).text)
    expect(texts).toEqual(['m1', 'read again', 'm3'])
  })

  test('the inbox shown is the one dispatched', () => {
    const input: TimelineInput = { id: 'i', text: 'hi', delivery: 'queue', state: 'sending' }
    const inputs = { steers: [], queued: [input] }
    expect(reduceView(initialViewState(visibleOnly), { type: 'inbox', inputs }).inbox).toBe(inputs)
  })

  test('an outline suffix merges over the loaded part; one that starts past it does not join', () => {
    const state = opened([], 50, false, slice(4, 6, 50))
    const merged = reduceView(state, { type: 'outlineChanged', slice: { ...slice(5, 8, 60) } })
    expect(merged.outline).toMatchObject({ start: 4, headSeq: 60 })
    expect(merged.outline.all.map((e) => e.turn)).toEqual([5, 6, 7, 8])
    const replaced = reduceView(state, { type: 'outlineChanged', slice: slice(2, 8, 60) })
    expect(replaced.outline.start).toBe(2)
    const past = slice(9, 10, 60)
    expect(joinsOutline(state.outline, past)).toBe(false)
    expect(reduceView(state, { type: 'outlineChanged', slice: past })).toBe(state)
  })

  test('older outline entries go before the loaded part only when they end where it begins', () => {
    const state = opened([], 50, false, slice(4, 6, 50))
    const older = reduceView(state, {
      type: 'outlineOlder',
      slice: { ...slice(1, 6, 50), entries: [entry(2), entry(3), entry(4)] },
      end: 4,
    })
    expect(older.outline).toMatchObject({ start: 1, headSeq: 50 })
    expect(older.outline.all.map((e) => e.turn)).toEqual([2, 3, 4, 5, 6])
    // Read up to position 5, but the loaded part begins at 4 now: dropped.
    const stale = { ...slice(1, 6, 50), entries: [entry(2), entry(3), entry(4), entry(5)] }
    expect(reduceView(state, { type: 'outlineOlder', slice: stale, end: 5 })).toBe(state)
    // Shorter than asked (ends before the loaded part): dropped.
    const short = { ...slice(0, 6, 50), entries: [entry(1), entry(2)] }
    expect(reduceView(state, { type: 'outlineOlder', slice: short, end: 4 })).toBe(state)
  })

  test('outlineStartFor: where the outline must load from to reach the lowest loaded turn', () => {
    // Turns 7…10 in the outline (positions 6…9); rows of turns 3 and 4 loaded.
    const state = opened([3, 4], 40, true, slice(6, 10, 40))
    expect(outlineStartFor(state)).toBe(2)
    // Loaded rows within the outline, or a whole outline: nothing to load.
    expect(outlineStartFor(opened([8, 9], 40, true, slice(6, 10, 40)))).toBeUndefined()
    expect(outlineStartFor(opened([3, 4], 40, true, slice(0, 10, 40)))).toBeUndefined()
  })

  test('turnStartOf: the seq of the turn that holds a seq, or the seq itself', () => {
    const outline = [entry(1), entry(2), entry(3)] // seqs 10, 20, 30
    expect(turnStartOf(outline, 25)).toBe(20)
    expect(turnStartOf(outline, 30)).toBe(30)
    expect(turnStartOf(outline, 99)).toBe(30)
    expect(turnStartOf(outline, 5)).toBe(5)
    expect(turnStartOf([], 7)).toBe(7)
  })

  test('the loaded outline stays the whole outline from its start, whatever slices come in any order (fixed seed)', () => {
    /** Grows the whole outline, reads older parts and reorders their arrival; checks every state against the whole. */
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('turns' as const),
        added: fc.integer({ min: 1, max: 4 }),
        back: fc.nat(6),
      }),
      fc.record({ kind: fc.constant('older' as const), at: fc.nat(40) }),
      fc.record({ kind: fc.constant('land' as const), which: fc.nat(10) }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.array(op, { maxLength: 40 }), (first, ops) => {
        let total = first
        let head = 100
        let state = opened([], head, true, slice(Math.max(0, total - 5), total, head))
        /** Older reads on their way: the slice read, and where the loaded part began when asked. */
        const inFlight: { slice: OutlineSlice; end: number }[] = []
        const check = () => {
          const { all, start, shown } = state.outline
          expect(all).toEqual(slice(start, total, head).entries)
          expect(shown).toBe(all) // nothing inactive here
        }
        for (const o of ops) {
          if (o.kind === 'turns') {
            // A change carries the changed suffix: from a position at or below the old end.
            const from = Math.max(0, total - o.back)
            total += o.added
            head += 10
            state = reduceView(state, { type: 'outlineChanged', slice: slice(from, total, head) })
          } else if (o.kind === 'older') {
            const end = state.outline.start
            const from = Math.min(o.at, end)
            inFlight.push({
              slice: { ...slice(from, total, head), entries: slice(from, end, head).entries },
              end,
            })
          } else if (inFlight.length > 0) {
            const [read] = inFlight.splice(o.which % inFlight.length, 1)
            state = reduceView(state, { type: 'outlineOlder', ...read! })
          }
          check()
        }
      }),
      { seed: 30, numRuns: 200 },
    )
  })
})
