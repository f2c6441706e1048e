import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import type { TimelineRow, TimelineSnapshot } from '../../src/client/types'
import { createEngine } from '../../src/engine/engine'
import { isSessionlineError } from '../../src/schema/errors'
import { DEFAULT_OUTLINE_SLICE } from '../../src/schema/requests'
import { freshDbName } from '../support/engines'
import { changeFeed } from '../support/feed'
import { openPage, type Page, ready, record, seedTurns, turnEvents, until } from './harness'

let page: Page | undefined
afterEach(async () => {
  await page?.close()
  page = undefined
})

async function session(options: Parameters<typeof openPage>[0] = {}) {
  page = await openPage(options)
  const { id } = await page.client.createSession({ title: 'test' })
  return { page, id }
}

const keysOf = (s: TimelineSnapshot) => s.rows.map((row) => row.key)
const rowOf = (s: TimelineSnapshot, key: string): TimelineRow | undefined =>
  s.rows.find((row) => row.key === key)

/** No snapshot ever shows a key twice (no second bubble). */
function expectUniqueKeys(snapshots: readonly TimelineSnapshot[]) {
  for (const s of snapshots) {
    const keys = [...keysOf(s), ...s.queued.map((input) => input.id)]
    expect(new Set(keys).size).toBe(keys.length)
  }
}

describe('a session view over a real engine through Comlink', () => {
  test('opens synchronously in loading state, then shows the tail, the outline and the rail', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 40)
    const view = page.client.open(id, { tail: 9 }) // starts mid-turn: turn 36's prompt row is not loaded
    expect(view.getSnapshot().status).toBe('loading')
    const s = await ready(view)
    expect(s.status).toBe('ready')
    expect(s.rows).toHaveLength(9)
    expect(s.hasOlder).toBe(true)
    expect(s.outline).toHaveLength(40)
    expect(s.rail.map((item) => item.turn)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1))
    expect(s.rail.filter((item) => item.kind === 'loaded').map((item) => item.turn)).toEqual([
      36, 37, 38, 39, 40,
    ])
    expect(s.rail[35]).toMatchObject({ kind: 'loaded', key: 'a-36' })
    // a turn shows the same words from its rows as from the outline, even when only partly loaded
    for (const item of s.rail) {
      const entry = s.outline.find((e) => e.turn === item.turn)!
      expect([item.prompt, item.response]).toEqual([entry.prompt, entry.response])
    }
    expect(view.getSnapshot()).toBe(view.getSnapshot())
  })

  test('an unknown session ends in the error state with not_found', async () => {
    const { page } = await session()
    const view = page.client.open('no-such-session')
    const s = await ready(view)
    expect(s.status).toBe('error')
    expect(s.error?.code).toBe('not_found')
  })

  test('an admitted steer shows before admit resolves, then pending, then becomes its transcript row in place', async () => {
    const { page, id } = await session()
    await page.engine.append(id, turnEvents(1))
    const view = page.client.open(id)
    await ready(view)
    const seen = record(view)
    const admitted = view.admit('also check the tests', { id: 'in-1' })
    let answered = false
    void admitted.then(() => {
      answered = true
    })
    const now = view.getSnapshot()
    expect(answered).toBe(false)
    expect(now.rows.at(-1)).toEqual({
      key: 'in-1',
      kind: 'input',
      input: { id: 'in-1', text: 'also check the tests', delivery: 'steer', state: 'sending' },
    })
    const receipt = await admitted
    expect(receipt).toMatchObject({ id: 'in-1', status: 'pending', seq: 1 })
    expect(rowOf(view.getSnapshot(), 'in-1')).toMatchObject({
      kind: 'input',
      input: { state: 'pending', seq: 1 },
    })
    await page.client.promote(id, 'settled')
    const promoted = await until(view, (s) => rowOf(s, 'in-1')?.kind === 'message')
    expect(promoted.rows.at(-1)).toMatchObject({
      key: 'in-1',
      kind: 'message',
      message: { id: 'in-1', role: 'user' },
    })
    expectUniqueKeys(seen)
    // the row went sending → pending → message and was never missing in between
    const states = seen
      .slice(1)
      .map((s) => rowOf(s, 'in-1'))
      .map((row) => (row === undefined ? 'missing' : row.kind === 'input' ? row.input.state : 'message'))
    expect([...new Set(states)]).toEqual(['sending', 'pending', 'message'])
  })

  test('a running turn streams into one row in place, and the durable row supersedes the previews', async () => {
    const { page, id } = await session()
    await page.client.configure({ provider: { kind: 'scripted', seed: 3, wordDelayMs: 2, toolRate: 0 } })
    const view = page.client.open(id)
    await ready(view)
    const seen = record(view)
    await view.admit('tell me about lighthouses', { id: 'prompt-1' })
    const isDone = (s: TimelineSnapshot) =>
      s.rows.some(
        (row) =>
          row.kind === 'message' && row.message.role === 'assistant' && row.message.status === 'complete',
      )
    const done = await until(view, isDone)
    expectUniqueKeys(seen)
    const answer = done.rows.find((row) => row.kind === 'message' && row.message.role === 'assistant')!
    const lengths = seen
      .map((s) => rowOf(s, answer.key))
      .filter((row) => row?.kind === 'message')
      .map((row) =>
        row?.kind === 'message'
          ? row.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')
          : '',
      )
      .map((text) => text.length)
    expect(lengths.length).toBeGreaterThan(3) // it was shown while it streamed
    for (let i = 1; i < lengths.length; i++) expect(lengths[i]).toBeGreaterThanOrEqual(lengths[i - 1]!)
    const stored = await page.client.page(id)
    expect(done.rows.map((row) => (row.kind === 'message' ? row.message : row))).toEqual(stored.messages)
    await until(view, (s) => s.outline[0]?.response !== '')
    const final = view.getSnapshot()
    expect(final.rail).toEqual([
      {
        kind: 'loaded',
        turn: 1,
        key: 'prompt-1',
        seq: final.outline[0]!.seq,
        prompt: final.outline[0]!.prompt,
        response: final.outline[0]!.response,
      },
    ])
  })

  test('a queued input stays in the tray until it is promoted', async () => {
    const { page, id } = await session()
    const view = page.client.open(id)
    await ready(view)
    const seen = record(view)
    await Promise.all([
      view.admit('now', { id: 'steer-1' }),
      view.admit('later', { id: 'queue-1', delivery: 'queue' }),
    ])
    let s = view.getSnapshot()
    expect(keysOf(s)).toEqual(['steer-1'])
    expect(s.queued.map((input) => [input.id, input.state])).toEqual([['queue-1', 'pending']])
    await page.client.promote(id, 'settled') // opens turn 1 with the steer; the queued input waits
    s = await until(view, (x) => rowOf(x, 'steer-1')?.kind === 'message')
    expect(s.queued.map((input) => input.id)).toEqual(['queue-1'])
    await page.client.append(id, [{ type: 'turn/end', data: { turn: 1, reason: 'completed' } }])
    await page.client.promote(id, 'settled') // idle: the queued input opens turn 2
    s = await until(view, (x) => rowOf(x, 'queue-1')?.kind === 'message')
    expect(s.queued).toEqual([])
    expect(keysOf(s)).toEqual(['steer-1', 'queue-1'])
    expectUniqueKeys(seen)
    // From its admission on, every snapshot holds it in exactly one place: the tray, then the transcript.
    const places = seen.map((snapshot) => {
      const inTray = snapshot.queued.some((input) => input.id === 'queue-1')
      const row = rowOf(snapshot, 'queue-1')
      if (!inTray && row === undefined) return 'absent'
      if (inTray && row === undefined) return 'tray'
      return !inTray && row?.kind === 'message' ? 'transcript' : 'both, or inline'
    })
    const shown = places.indexOf('tray')
    expect(shown).toBeGreaterThan(0)
    expect(places.slice(0, shown)).toEqual(places.slice(0, shown).map(() => 'absent'))
    expect([...new Set(places.slice(shown))]).toEqual(['tray', 'transcript'])
    expect(places.lastIndexOf('tray')).toBeLessThan(places.indexOf('transcript'))
  })

  test('a failed admit marks its row failed, and a retry with the same id reuses the row', async () => {
    const { page, id } = await session({ timeoutMs: 200 })
    const view = page.client.open(id)
    await ready(view)
    page.stall(true)
    const failure = await view.admit('hello?', { id: 'retry-me' }).catch((e: unknown) => e)
    expect(isSessionlineError(failure) && failure.code).toBe('timeout')
    expect(rowOf(view.getSnapshot(), 'retry-me')).toMatchObject({ kind: 'input', input: { state: 'failed' } })
    page.stall(false)
    const seen = record(view)
    const retry = view.admit('hello?', { id: 'retry-me' })
    expect(rowOf(view.getSnapshot(), 'retry-me')).toMatchObject({
      kind: 'input',
      input: { state: 'sending' },
    })
    await retry
    expect(rowOf(view.getSnapshot(), 'retry-me')).toMatchObject({
      kind: 'input',
      input: { state: 'pending' },
    })
    expect(view.getSnapshot().rows).toHaveLength(1)
    expectUniqueKeys(seen)
  })

  test('cancel and edit show at once and roll back when the engine does not confirm', async () => {
    const { page, id } = await session({ timeoutMs: 200 })
    const view = page.client.open(id)
    await ready(view)
    await view.admit('first words', { id: 'x' })
    page.stall(true)
    const editing = view.edit('x', 'second words')
    expect(rowOf(view.getSnapshot(), 'x')).toMatchObject({ input: { text: 'second words' } })
    await expect(editing).rejects.toMatchObject({ code: 'timeout' })
    expect(rowOf(view.getSnapshot(), 'x')).toMatchObject({ input: { text: 'first words' } })
    const cancelling = view.cancel('x')
    expect(rowOf(view.getSnapshot(), 'x')).toBeUndefined()
    await expect(cancelling).rejects.toMatchObject({ code: 'timeout' })
    expect(rowOf(view.getSnapshot(), 'x')).toMatchObject({ input: { text: 'first words', state: 'pending' } })
    page.stall(false)
    await view.edit('x', 'third words')
    expect(rowOf(view.getSnapshot(), 'x')).toMatchObject({ input: { text: 'third words' } })
    expect(await page.client.pending(id)).toMatchObject([{ id: 'x', text: 'third words' }])
    await view.cancel('x')
    expect(view.getSnapshot().rows).toEqual([])
    expect(await page.client.pending(id)).toEqual([])
  })

  test('inputs admitted elsewhere arrive through the change feed', async () => {
    const { page, id } = await session()
    const view = page.client.open(id)
    await ready(view)
    await page.engine.admit(id, { id: 'other-tab', text: 'from another tab' })
    const s = await until(view, (x) => rowOf(x, 'other-tab') !== undefined)
    expect(rowOf(s, 'other-tab')).toMatchObject({ input: { state: 'pending', text: 'from another tab' } })
  })

  test('another tab on the same database: its admits and turns arrive, and a large rewrite reloads the window', async () => {
    const dbName = freshDbName('tabs')
    const { page, id } = await session({ dbName, broadcast: true })
    const otherTab = createEngine({ indexedDB, IDBKeyRange, dbName, broadcast: true })
    try {
      await seedTurns(page.engine, id, 3)
      const view = page.client.open(id)
      await ready(view)
      await otherTab.admit(id, { id: 'tab-2', text: 'from the other tab', delivery: 'queue' })
      let s = await until(view, (x) => x.queued.some((input) => input.id === 'tab-2'))
      expect(s.queued[0]).toMatchObject({ id: 'tab-2', state: 'pending' })
      // more than the feed sends row by row: the view is told to reload, and does
      page.calls.clear()
      await seedTurns(otherTab, id, 400, 400, 3)
      s = await until(
        view,
        (x) => x.outlineBefore + x.outline.length === 403 && x.rows.at(-1)?.key === 'a-403',
      )
      expect(s.status).toBe('ready')
      expect(s.rows.filter((row) => row.kind === 'message')).toHaveLength(50)
      expect(s.hasOlder).toBe(true)
      expect(s.queued.map((input) => input.id)).toEqual(['tab-2'])
      // The reload is one first read again: rows, pending and outline in one call.
      expect([
        page.calls.get('firstRead'),
        page.calls.get('page'),
        page.calls.get('pending'),
        page.calls.get('outline'),
      ]).toEqual([1, undefined, undefined, undefined])
    } finally {
      await otherTab.close()
    }
  })

  test('commits made while the view loads are not missed', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 5)
    const view = page.client.open(id, { tail: 4 })
    // these race the view's first reads
    const writes = Promise.all([
      page.engine.append(id, turnEvents(6)),
      page.engine.admit(id, { id: 'racing', text: 'racing the load' }),
    ])
    await writes
    const s = await until(
      view,
      (x) => x.status === 'ready' && x.outline.length === 6 && rowOf(x, 'racing') !== undefined,
    )
    expect(keysOf(s).slice(-3)).toEqual(['u-6', 'a-6', 'racing'])
    expect(s.headSeq).toBe(await page.engine.getSession(id).then((info) => info!.headSeq))
  })

  test('the first ready snapshot stays the same object while nothing changes', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 3)
    const view = page.client.open(id)
    const s = await ready(view)
    const seen = record(view)
    await view.loadThrough(1) // covered: nothing to do
    await view.loadOlder() // nothing older
    expect(view.getSnapshot()).toBe(s)
    expect(seen).toHaveLength(1)
  })

  test('a session deleted while open ends in the error state', async () => {
    const { page, id } = await session()
    const view = page.client.open(id)
    await ready(view)
    await page.client.deleteSession(id)
    const s = await until(view, (x) => x.status === 'error')
    expect(s.error?.code).toBe('not_found')
  })

  test('dispose stops the feed: later commits do not reach the view', async () => {
    const { page, id } = await session()
    const view = page.client.open(id)
    const s = await ready(view)
    let notified = 0
    view.subscribe(() => notified++)
    const witness = changeFeed()
    await page.client.watch(id, witness.listener)
    view.dispose()
    await page.engine.append(id, turnEvents(1))
    await witness.until((changes) => changes.some((c) => c.rows.length > 0))
    // The view's push travels on its own port and may land after the witness's: give it that turn.
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(view.getSnapshot()).toBe(s)
    expect(notified).toBe(0)
  })
})

describe('loadThrough over a real engine', () => {
  test('loads down to the seq in one engine loadThrough, ending on a 200-row page boundary', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 1000) // 2,000 rows
    const view = page.client.open(id)
    await ready(view)
    const target = (await page.client.projection(id, 'turnOutline'))[400]!.seq
    const busy: boolean[] = []
    view.subscribe(() => busy.push(view.getSnapshot().loadingOlder))
    page.calls.clear()
    await view.loadThrough(target)
    const s = view.getSnapshot()
    expect(s.baseSeq).toBeLessThanOrEqual(target)
    // One read transaction for the whole range, not a round trip per 200 rows.
    expect(page.calls.get('loadThrough')).toBe(1)
    expect(page.calls.get('page')).toBeUndefined()
    expect((s.rows.length - 50) % 200).toBe(0)
    // no page more than needed: before the last page the window did not cover the target yet
    const previousBase = s.rows[200]!
    expect(previousBase.kind === 'message' && previousBase.message.seq).toBeGreaterThan(target)
    expect(busy[0]).toBe(true)
    expect(s.loadingOlder).toBe(false)
    expect(s.rail.find((item) => item.turn === 401)).toMatchObject({ kind: 'loaded' })
  })

  test('loadOlder prepends one page of the tail size; calls while it runs share it', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 100)
    const view = page.client.open(id, { tail: 30 })
    const first = await ready(view)
    page.calls.clear()
    const once = view.loadOlder()
    expect(view.loadOlder()).toBe(once)
    expect(view.getSnapshot().loadingOlder).toBe(true) // at once
    await once
    const s = view.getSnapshot()
    expect(page.calls.get('page')).toBe(1)
    expect(s.rows).toHaveLength(60)
    expect(s.rows.slice(30)).toEqual(first.rows)
    expect(s.baseSeq).toBeLessThan(first.baseSeq)
    expect(s.loadingOlder).toBe(false)
  })

  test('is a no-op when the window already covers the seq', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 100)
    const view = page.client.open(id)
    const s = await ready(view)
    page.calls.clear()
    await view.loadThrough(s.baseSeq + 3)
    expect(page.calls.get('page')).toBeUndefined()
    expect(page.calls.get('loadThrough')).toBeUndefined()
    expect(view.getSnapshot()).toBe(s)
  })

  test('a second call retargets to the lowest seq and shares the completion', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 1000)
    const view = page.client.open(id)
    await ready(view)
    const whole = await page.client.projection(id, 'turnOutline')
    const high = whole[800]!.seq
    const low = whole[300]!.seq
    const first = view.loadThrough(high)
    expect(view.getSnapshot().loadingOlder).toBe(true) // at once
    const second = view.loadThrough(low)
    expect(second).toBe(first)
    await first
    expect(view.getSnapshot().baseSeq).toBeLessThanOrEqual(low)
    expect(view.getSnapshot().loadingOlder).toBe(false)
  })

  test('stops when nothing older is left (a seq below the first row)', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 300)
    const view = page.client.open(id)
    await ready(view)
    await view.loadThrough(0)
    const s = view.getSnapshot()
    expect(s.hasOlder).toBe(false)
    expect(s.rows).toHaveLength(600)
    expect(s.rail.every((item) => item.kind === 'loaded')).toBe(true)
  })

  test('fails soft: the promise resolves, busy clears and the snapshot carries the error', async () => {
    const { page, id } = await session({ timeoutMs: 200 })
    await seedTurns(page.engine, id, 500)
    const view = page.client.open(id)
    await ready(view)
    page.stall(true)
    await expect(view.loadThrough(1)).resolves.toBeUndefined()
    const s = view.getSnapshot()
    expect(s.loadingOlder).toBe(false)
    expect(s.error?.code).toBe('timeout')
    expect(s.status).toBe('ready')
    page.stall(false)
    await view.loadOlder()
    expect(view.getSnapshot().error).toBeUndefined()
  })

  test('bad seqs are invalid_input', async () => {
    const { page, id } = await session()
    const view = page.client.open(id)
    await expect(view.loadThrough(-1)).rejects.toMatchObject({ code: 'invalid_input' })
    await expect(view.loadThrough(Number.NaN)).rejects.toMatchObject({ code: 'invalid_input' })
  })

  test('concurrent loadOlder, loadThrough and new turns never corrupt the window', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 600)
    const view = page.client.open(id, { tail: 30 })
    await ready(view)
    const whole = await page.client.projection(id, 'turnOutline')
    const seen = record(view)
    // a fixed, interleaved schedule of page-side loads and worker-side commits
    const work: Promise<unknown>[] = []
    for (let i = 0; i < 12; i++) {
      work.push(view.loadOlder())
      if (i % 3 === 0) work.push(view.loadThrough(whole[590 - i * 40]!.seq))
      if (i % 4 === 1) work.push(seedTurns(page.engine, id, 1, 1, 600 + (i - 1) / 4))
    }
    await Promise.all(work)
    await until(view, (s) => s.outlineBefore + s.outline.length === 603 && !s.loadingOlder)
    const all = await page.client.loadThrough(id, { seq: 0 })
    for (const s of seen) {
      const seqs = s.rows
        .filter((row) => row.kind === 'message')
        .map((row) => (row.kind === 'message' ? row.message.seq : 0))
      // ascending, unique, and exactly the transcript between its first and last row
      const inTranscript = all.messages
        .map((m) => m.seq)
        .filter((seq) => seq >= seqs[0]! && seq <= seqs.at(-1)!)
      expect(seqs).toEqual(inTranscript)
    }
    const last = view.getSnapshot()
    expect(last.rows.at(-1)?.key).toBe('a-603')
    expect(last.baseSeq).toBeLessThanOrEqual(whole[590 - 9 * 40]!.seq)
  })
})

describe('the window under random schedules', () => {
  /** Every snapshot's transcript rows are ascending, unique and exactly the transcript between its ends. */
  function expectContiguous(seen: readonly TimelineSnapshot[], all: readonly number[]) {
    for (const s of seen) {
      const seqs = s.rows.flatMap((row) => (row.kind === 'message' ? [row.message.seq] : []))
      if (seqs.length === 0) continue
      expect(seqs).toEqual(all.filter((seq) => seq >= seqs[0]! && seq <= seqs.at(-1)!))
    }
  }

  test('loadOlder, loadThrough and commits in any interleaving keep a contiguous suffix (fixed seed)', async () => {
    const op = fc.record({
      kind: fc.constantFrom('older', 'through', 'turn', 'admit'),
      at: fc.nat(199),
      settle: fc.boolean(),
    })
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 4, maxLength: 14 }),
        fc.integer({ min: 5, max: 60 }),
        async (ops, tail) => {
          const page = await openPage()
          try {
            const { id } = await page.client.createSession()
            await seedTurns(page.engine, id, 200)
            const view = page.client.open(id, { tail })
            await ready(view)
            const whole = await page.client.projection(id, 'turnOutline')
            const seen = record(view)
            let turns = 200
            const work: Promise<unknown>[] = []
            for (const { kind, at, settle } of ops) {
              if (kind === 'older') work.push(view.loadOlder())
              else if (kind === 'through') work.push(view.loadThrough(whole[at]!.seq))
              else if (kind === 'turn') work.push(seedTurns(page.engine, id, 1, 1, turns++))
              else work.push(view.admit(`note ${at}`))
              if (settle) await Promise.all(work)
            }
            await Promise.all(work)
            const settled = await until(
              view,
              (s) => s.outlineBefore + s.outline.length === turns && !s.loadingOlder,
            )
            const lowest = Math.min(...ops.filter((o) => o.kind === 'through').map((o) => whole[o.at]!.seq))
            if (Number.isFinite(lowest)) expect(settled.baseSeq).toBeLessThanOrEqual(lowest)
            const all = (await page.client.loadThrough(id, { seq: 0 })).messages.map((m) => m.seq)
            expectContiguous(seen, all)
            expect(settled.rows.filter((row) => row.kind === 'message').at(-1)?.key).toBe(`a-${turns}`)
            expectUniqueKeys(seen)
          } finally {
            await page.close()
          }
        },
      ),
      { seed: 99, numRuns: 8 },
    )
  }, 120_000)
})

describe('the outline under random schedules', () => {
  test('loadOutline, older pages, jumps and new turns in any interleaving leave the outline equal to the engine from outlineBefore on (fixed seed)', async () => {
    const op = fc.record({
      kind: fc.constantFrom('outline', 'older', 'jump', 'turn'),
      at: fc.nat(599),
      settle: fc.boolean(),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 3, maxLength: 10 }), async (ops) => {
        const page = await openPage()
        try {
          const { id } = await page.client.createSession()
          await seedTurns(page.engine, id, 600) // the outline crosses two chunk boundaries (256)
          const view = page.client.open(id, { tail: 20 })
          await ready(view)
          const start = await page.client.projection(id, 'turnOutline')
          const seen = record(view)
          let turns = 600
          const work: Promise<unknown>[] = []
          for (const { kind, at, settle } of ops) {
            if (kind === 'outline') work.push(view.loadOutline(at))
            else if (kind === 'older') work.push(view.loadOlder())
            else if (kind === 'jump') work.push(view.jumpTo(start[at]!.seq))
            else work.push(seedTurns(page.engine, id, 1, 1, turns++))
            if (settle) await Promise.all(work)
          }
          await Promise.all(work)
          const settled = await until(
            view,
            (s) => s.outlineBefore + s.outline.length === turns && !s.loadingOlder,
          )
          const whole = await page.client.projection(id, 'turnOutline')
          expect(settled.outline).toEqual(whole.slice(settled.outlineBefore))
          const asked = ops.filter((o) => o.kind === 'outline').map((o) => o.at)
          if (asked.length > 0) expect(settled.outlineBefore).toBeLessThanOrEqual(Math.min(...asked))
          for (const s of seen) {
            // Every snapshot: the outline is a run of the engine's, and mark i is entry outlineBefore + i.
            expect(s.outline.map((e) => e.turn)).toEqual(
              Array.from({ length: s.outline.length }, (_, k) => s.outlineBefore + k + 1),
            )
            expect(s.rail.map((item) => item.turn)).toEqual(s.outline.map((e) => e.turn))
          }
        } finally {
          await page.close()
        }
      }),
      { seed: 13, numRuns: 6 },
    )
  }, 180_000)
})

describe('the rail of a long session', () => {
  test('the first ready snapshot sizes the rail for all 10,000 turns from the newest outline slice; the rest loads on demand', async () => {
    const { page, id } = await session()
    await seedTurns(page.engine, id, 10_000, 1000)
    const whole = await page.client.projection(id, 'turnOutline')
    page.calls.clear()
    const view = page.client.open(id)
    const s = await ready(view)
    expect(s.rows).toHaveLength(50)
    expect(s.hasOlder).toBe(true)
    // One ranged read of the outline (its newest DEFAULT_OUTLINE_SLICE entries), never all of it.
    // (The first read reads it, with the rows and the inbox, in one call.)
    expect([page.calls.get('firstRead'), page.calls.get('outline'), page.calls.get('projection')]).toEqual([
      1,
      undefined,
      undefined,
    ])
    expect(s.outline).toEqual(whole.slice(10_000 - DEFAULT_OUTLINE_SLICE))
    expect(s.outlineBefore).toBe(10_000 - DEFAULT_OUTLINE_SLICE)
    expect(s.outlineBefore + s.rail.length).toBe(10_000)
    expect(s.rail.map((item) => item.turn)).toEqual(
      Array.from({ length: DEFAULT_OUTLINE_SLICE }, (_, i) => 10_000 - DEFAULT_OUTLINE_SLICE + i + 1),
    )
    expect(s.rail.filter((item) => item.kind === 'loaded')).toHaveLength(25)

    // Rows loaded below the outline's slice pull the outline down to them: mark i stays entry outlineBefore + i.
    await view.loadThrough(whole[4_999]!.seq)
    const after = view.getSnapshot()
    const lowest = after.rows[0]?.kind === 'message' ? after.rows[0].message.turn : 0
    expect(lowest).toBeLessThanOrEqual(5000) // filled down to a page boundary
    expect(after.outlineBefore).toBe(lowest - 1)
    expect(after.outline).toEqual(whole.slice(lowest - 1))
    expect(after.rail[5_000 - lowest]).toMatchObject({ kind: 'loaded', turn: 5000, key: 'u-5000' })

    // A rail scrolled to the top loads the rest, in one read.
    page.calls.clear()
    await view.loadOutline(0)
    const top = view.getSnapshot()
    expect(page.calls.get('outline')).toBe(1)
    expect(top.outlineBefore).toBe(0)
    expect(top.outline).toEqual(whole)
    expect(top.rail).toHaveLength(10_000)
    expect(top.rail[0]).toEqual({
      kind: 'unloaded',
      turn: 1,
      seq: whole[0]!.seq,
      prompt: 'question 1',
      response: 'answer 1',
    })
    expect(top.rail[9_999]).toBe(after.rail.at(-1)) // marks that did not change kept their identity
    await view.loadOutline(0) // nothing left to read
    expect(view.getSnapshot()).toBe(top)
  }, 120_000)
})
