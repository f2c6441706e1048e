/**
 * The small owners a session view is built from, each on its own: the epoch (one AbortSignal
 * per load), the link to the worker (admits that wait for a fresh one), the outline loader (one
 * read at a time, stale answers dropped), the feed, the late rows and the rows read again, driven
 * by plain functions instead of an engine.
 */
import { describe, expect, test } from 'vitest'
import { Epoch } from '../../src/client/epoch'
import { LateRows } from '../../src/client/late-rows'
import { OutlineLoader } from '../../src/client/outline-loader'
import { RowRereads } from '../../src/client/row-rereads'
import { createSessionView, openSessionView } from '../../src/client/session-view'
import { ViewFeed } from '../../src/client/view-feed'
import { ViewLink } from '../../src/client/view-link'
import { initialViewState, reduceView, type ViewState } from '../../src/client/view-state'
import type { SessionChange } from '../../src/engine/types'
import { SessionlineError } from '../../src/schema/errors'
import type { SessionMessage } from '../../src/schema/messages'
import type { MessagePage } from '../../src/schema/requests'
import type { OutlineSlice, TurnOutlineEntry } from '../../src/schema/session'
import { inProcessEngine } from '../support/engines'
import { until } from './harness'

/** A promise and its resolvers, to answer a call when the test says so. */
function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

const gone = () => new SessionlineError('worker_gone', 'the worker died')

describe('the epoch', () => {
  test('a reset aborts the signal of every earlier load; the new one is live', () => {
    const epoch = new Epoch()
    const first = epoch.signal
    const second = epoch.reset()
    expect(first.aborted).toBe(true)
    expect(second.aborted).toBe(false)
    expect(epoch.signal).toBe(second)
    expect(epoch.ended).toBe(false)
  })

  test('after end every signal, current or later, is aborted', () => {
    const epoch = new Epoch()
    const current = epoch.signal
    epoch.end()
    expect(current.aborted).toBe(true)
    expect(epoch.ended).toBe(true)
    expect(epoch.reset().aborted).toBe(true)
  })
})

describe('the view link', () => {
  test('a call that met a dead worker is sent again once a fresh one answers', async () => {
    const link = new ViewLink()
    const answers = [deferred<string>(), deferred<string>()]
    let calls = 0
    const sent = link.retrying(
      () => answers[calls++]!.promise,
      () => false,
    )
    expect(link.lost()).toBe(true)
    answers[0]!.reject(gone())
    await Promise.resolve()
    expect(calls).toBe(1) // waits for the fresh worker
    expect(link.back()).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(calls).toBe(2)
    answers[1]!.resolve('receipt')
    await expect(sent).resolves.toBe('receipt')
  })

  test('waiting calls fail with the reason once no worker will answer', async () => {
    const link = new ViewLink()
    link.lost()
    const sent = link.retrying(
      () => Promise.reject(gone()),
      () => false,
    )
    const failure = new SessionlineError('worker_gone', 'gave up after 3 restarts')
    await Promise.resolve()
    expect(link.failed(failure)).toBe(true)
    expect(link.failed(failure)).toBe(false)
    await expect(sent).rejects.toBe(failure)
  })

  test('other errors, a live link or a caller that stopped caring fail at once', async () => {
    const link = new ViewLink()
    const refused = new SessionlineError('invalid_input', 'no')
    await expect(
      link.retrying(
        () => Promise.reject(refused),
        () => false,
      ),
    ).rejects.toBe(refused)
    const died = gone()
    await expect(
      link.retrying(
        () => Promise.reject(died),
        () => false,
      ),
    ).rejects.toBe(died) // up: not waiting
    link.lost()
    await expect(
      link.retrying(
        () => Promise.reject(died),
        () => true,
      ),
    ).rejects.toBe(died)
  })

  test('close fails waiting calls and keeps the state', async () => {
    const link = new ViewLink()
    link.lost()
    const sent = link.retrying(
      () => Promise.reject(gone()),
      () => false,
    )
    await Promise.resolve()
    const disposed = new SessionlineError('aborted', 'disposed')
    link.close(disposed)
    await expect(sent).rejects.toBe(disposed)
    expect(link.state).toBe('down')
  })
})

const entry = (turn: number): TurnOutlineEntry => ({
  turn,
  seq: turn * 10,
  prompt: `q${turn}`,
  response: `a${turn}`,
})
const outlineSlice = (start: number, end: number, headSeq = 100): OutlineSlice => ({
  headSeq,
  total: end,
  start,
  entries: Array.from({ length: end - start }, (_, i) => entry(start + i + 1)),
})

/** A loader over a plain state, with its outline reads answered by hand. */
function loaderOver(loadedFrom: number, total: number) {
  let state: ViewState = reduceView(initialViewState({ includeInactive: false }), {
    type: 'opened',
    page: { messages: [], baseSeq: 0, headSeq: 100, hasOlder: false },
    outline: outlineSlice(loadedFrom, total),
  })
  const epoch = new Epoch()
  const reads: { start: number; end: number; answer: ReturnType<typeof deferred<OutlineSlice>> }[] = []
  const loader = new OutlineLoader({
    state: () => state,
    opening: () => undefined,
    epoch,
    read(start, end) {
      const answer = deferred<OutlineSlice>()
      reads.push({ start, end, answer })
      return answer.promise
    },
    prepend(slice, end) {
      state = reduceView(state, { type: 'outlineOlder', slice, end })
    },
  })
  return { loader, reads, epoch, state: () => state }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('the outline loader', () => {
  test('concurrent calls share one read; a call for further back reads the rest after it', async () => {
    const { loader, reads, state } = loaderOver(50, 60)
    const near = loader.loadFrom(40)
    const same = loader.loadFrom(40)
    const far = loader.loadFrom(10)
    await tick()
    expect(reads.map(({ start, end }) => [start, end])).toEqual([[40, 50]])
    reads[0]!.answer.resolve(outlineSlice(40, 50))
    await near
    await same
    await tick()
    expect(state().outline.start).toBe(40)
    expect(reads.map(({ start, end }) => [start, end])).toEqual([
      [40, 50],
      [10, 40],
    ])
    reads[1]!.answer.resolve(outlineSlice(10, 40))
    await far
    expect(state().outline.start).toBe(10)
    expect(state().outline.all.map((e) => e.turn)).toEqual(Array.from({ length: 50 }, (_, i) => i + 11))
  })

  test('an answer of an earlier epoch is dropped, and the call reads again in the new one', async () => {
    const { loader, reads, epoch, state } = loaderOver(50, 60)
    const loading = loader.loadFrom(0)
    await tick()
    epoch.reset() // a reload: what was asked before it may no longer fit
    reads[0]!.answer.resolve({ ...outlineSlice(0, 50), entries: [entry(99)] })
    await tick()
    expect(state().outline.start).toBe(50)
    expect(reads.map(({ start, end }) => [start, end])).toEqual([
      [0, 50],
      [0, 50],
    ])
    reads[1]!.answer.resolve(outlineSlice(0, 50))
    await loading
    expect(state().outline.start).toBe(0)
    expect(state().outline.all[0]).toEqual(entry(1))
  })

  test('a disposed view stops loading its outline', async () => {
    const { loader, reads, epoch, state } = loaderOver(50, 60)
    const loading = loader.loadFrom(0)
    await tick()
    epoch.end()
    reads[0]!.answer.resolve(outlineSlice(0, 50))
    await loading
    expect(state().outline.start).toBe(50)
    expect(reads).toHaveLength(1)
  })

  test('a read that brings less than asked stops the call instead of asking again', async () => {
    const { loader, reads, state } = loaderOver(50, 60)
    const loading = loader.loadFrom(0)
    await tick()
    reads[0]!.answer.resolve({ ...outlineSlice(0, 50), entries: [entry(1)] })
    await loading
    expect(state().outline.start).toBe(50)
    expect(reads).toHaveLength(1)
  })
})

describe('the public view', () => {
  test('carries no connection hooks: connect gets them apart', async () => {
    const { engine, close } = await inProcessEngine()
    try {
      const view = createSessionView(engine, 's')
      expect(Object.keys(view)).not.toEqual(expect.arrayContaining(['connectionLost']))
      expect('reconnected' in view || 'connectionFailed' in view).toBe(false)
      view.dispose()
    } finally {
      await close()
    }
  })
})

describe('a disposed view', () => {
  test('tells its listeners nothing more, and its admits still reach the engine or fail', async () => {
    const { engine, close } = await inProcessEngine()
    try {
      await engine.createSession({ id: 's' })
      const view = createSessionView(engine, 's')
      const ready = await until(view, (s) => s.status === 'ready')
      let told = 0
      view.subscribe(() => told++)
      view.dispose()
      const receipt = await view.admit('after dispose', { id: 'late', delivery: 'queue' })
      expect(receipt.id).toBe('late')
      await engine.admit('s', { id: 'other', text: 'from elsewhere', delivery: 'queue' })
      await new Promise((resolve) => setTimeout(resolve, 30))
      expect(told).toBe(0)
      expect(view.getSnapshot()).toBe(ready)
    } finally {
      await close()
    }
  })
})

describe('a view on an injected frame clock', () => {
  test('a feed change within a frame reaches the snapshot only when the frame ends', async () => {
    const { engine, close } = await inProcessEngine()
    try {
      await engine.createSession({ id: 's' })
      let now = 1_000
      const timers: (() => void)[] = []
      const frames = {
        now: () => now,
        setTimer: (run: () => void) => timers.push(run),
        clearTimer: () => undefined,
      }
      const { view } = openSessionView(engine, 's', {}, { frames })
      await until(view, (s) => s.status === 'ready')
      await engine.admit('s', { id: 'first', text: 'one', delivery: 'queue' })
      // After a quiet spell: at once.
      await until(view, (s) => s.queued.some((input) => input.id === 'first'))
      await engine.admit('s', { id: 'second', text: 'two', delivery: 'queue' })
      await new Promise((resolve) => setTimeout(resolve, 20))
      // Within the frame (the clock has not moved): it waits for the frame's timer.
      expect(view.getSnapshot().queued.map((input) => input.id)).toEqual(['first'])
      expect(timers).toHaveLength(1)
      now += 16
      timers.shift()!()
      expect(view.getSnapshot().queued.map((input) => input.id)).toEqual(['first', 'second'])
      view.dispose()
    } finally {
      await close()
    }
  })
})

const change = (headSeq: number, rows: readonly SessionMessage[] = [], sessionId = 's'): SessionChange => ({
  sessionId,
  durable: true,
  headSeq,
  rows,
  inputs: [],
  views: {},
})

const row = (seq: number, text: string): SessionMessage => ({
  id: `id-${seq}`,
  sessionId: 's',
  seq,
  role: 'assistant',
  turn: 1,
  parts: [{ type: 'text', text }],
  status: 'streaming',
  visibility: 'visible',
  createdAt: 0,
  updatedAt: 0,
})

describe('the feed', () => {
  /** A feed whose frames flush by hand (a clock that never moves past the first frame). */
  function feedOf() {
    const epoch = new Epoch()
    const applied: number[][] = []
    const timers = new Set<() => void>()
    const feed = new ViewFeed('s', epoch, (changes) => applied.push(changes.map((c) => c.headSeq)), {
      now: () => 0,
      setTimer: (run) => timers.add(run) && run,
      clearTimer: (timer) => timers.delete(timer as () => void),
    })
    return { feed, epoch, applied, timers }
  }

  test('holds changes while the first load reads, then hands them over in order; live ones go to the frames', () => {
    const { feed, applied } = feedOf()
    expect(feed.holding).toBe(true)
    feed.listener(change(1))
    feed.listener(change(2))
    expect(applied).toEqual([])
    expect(feed.release().map((c) => c.headSeq)).toEqual([1, 2])
    feed.listener(change(3))
    expect(applied).toEqual([[3]])
  })

  test('ignores other sessions, and everything once the epoch ended', () => {
    const { feed, epoch } = feedOf()
    feed.listener(change(1, [], 'other'))
    epoch.end()
    feed.listener(change(2))
    expect(feed.release()).toEqual([])
  })

  test('stop unsubscribes and drops what waits; holding again for a fresh worker', () => {
    const { feed, applied, timers } = feedOf()
    feed.release()
    let stopped = 0
    feed.subscribe(() => stopped++)
    expect(feed.subscribed).toBe(true)
    feed.listener(change(1)) // flushed at once
    feed.listener(change(2)) // waits for the frame
    feed.stop(true)
    expect(stopped).toBe(1)
    expect(feed.subscribed).toBe(false)
    expect(feed.take()).toEqual([])
    expect(feed.holding).toBe(true)
    expect(timers.size).toBe(0)
    expect(applied).toEqual([[1]])
    feed.stop(false)
    expect(feed.holding).toBe(false)
  })
})

describe('the late rows', () => {
  test('are noted only while a page read runs, and dropped when the last one ends', async () => {
    const late = new LateRows()
    late.note(change(5, [row(2, 'before any read')]), [row(2, 'before any read')])
    expect(late.rows.size).toBe(0)
    const first = deferred<void>()
    const second = deferred<void>()
    const reading = [late.during(() => first.promise), late.during(() => second.promise)]
    late.note(change(6, [row(2, 'new')]), [row(2, 'new')])
    late.note({ ...change(7, [row(3, 'preview')]), durable: false }, [row(3, 'preview')])
    expect([...late.rows.keys()]).toEqual(['id-2'])
    expect(late.rows.get('id-2')).toMatchObject({ headSeq: 6, message: { parts: [{ text: 'new' }] } })
    first.resolve()
    await reading[0]
    expect(late.rows.size).toBe(1) // another read still runs
    second.resolve()
    await reading[1]
    expect(late.rows.size).toBe(0)
  })
})

describe('the rows read again', () => {
  function rereadsOf() {
    const epoch = new Epoch()
    const reads: { seq: number; answer: ReturnType<typeof deferred<MessagePage>> }[] = []
    const replaced: string[] = []
    const errors: unknown[] = []
    const rereads = new RowRereads({
      read(seq) {
        const answer = deferred<MessagePage>()
        reads.push({ seq, answer })
        return answer.promise
      },
      epoch,
      replace: (_, messages) => replaced.push(...messages.map((m) => (m.parts[0] as { text: string }).text)),
      fail: (error) => errors.push(error),
    })
    return { rereads, reads, replaced, errors, epoch }
  }
  const pageAt = (headSeq: number, text: string): MessagePage => ({
    messages: [row(4, text)],
    baseSeq: 4,
    headSeq,
    hasOlder: true,
  })

  test('one read per row at a time; its answer replaces the row', async () => {
    const { rereads, reads, replaced } = rereadsOf()
    rereads.reread(4)
    rereads.reread(4)
    expect(reads).toHaveLength(1)
    reads[0]!.answer.resolve(pageAt(10, 'read again'))
    await tick()
    expect(replaced).toEqual(['read again'])
  })

  test('a read a newer durable change overtook is dropped, and read again when an append missed meanwhile', async () => {
    const { rereads, reads, replaced } = rereadsOf()
    rereads.reread(4)
    rereads.touch(change(12, [row(4, 'final')]))
    rereads.reread(4) // another append missed while the read was on its way
    reads[0]!.answer.resolve(pageAt(10, 'older than the change'))
    await tick()
    expect(replaced).toEqual([])
    expect(reads.map((r) => r.seq)).toEqual([4, 4])
    reads[1]!.answer.resolve(pageAt(13, 'newest'))
    await tick()
    expect(replaced).toEqual(['newest'])
  })

  test('a failed read is reported; a read of an ended view starts nothing', async () => {
    const { rereads, reads, errors, epoch } = rereadsOf()
    rereads.reread(4)
    const failure = new SessionlineError('timeout', 'slow')
    reads[0]!.answer.reject(failure)
    await tick()
    expect(errors).toEqual([failure])
    epoch.end()
    rereads.reread(4)
    expect(reads).toHaveLength(1)
  })
})
