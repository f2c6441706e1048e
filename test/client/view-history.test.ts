/**
 * The history verbs on a `SessionView`, through a real engine over the real wire (Comlink on a
 * MessageChannel, fake-indexeddb): a resend's prompt shows at once and never blinks, a switch keeps
 * every row's key, the tray follows `reorder` and `setDelivery` at once, and after any sequence of
 * verbs the view's rows equal those of a view opened fresh on the same session (no key twice).
 */
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import { openPage, type Page, ready, record, until } from './harness'

let page: Page | undefined
afterEach(async () => {
  await page?.close()
  page = undefined
})

const keysOf = (s: TimelineSnapshot) => s.rows.map((row) => row.key)

function expectUniqueKeys(snapshots: readonly TimelineSnapshot[]) {
  for (const s of snapshots) {
    const keys = [...keysOf(s), ...s.queued.map((input) => input.id)]
    expect(new Set(keys).size, keys.join(' ')).toBe(keys.length)
  }
}

const answer = (turn: number, step: number, messageId: string, text: string): SessionEvent[] => [
  { type: 'step/start', data: { turn, step } },
  { type: 'assistant/start', data: { messageId, turn, step } },
  { type: 'assistant/delta', data: { messageId, text } },
  { type: 'assistant/end', data: { messageId, finish: 'stop' } },
  { type: 'step/end', data: { turn, step } },
]

/** The turn the host must answer, if one is open. */
async function openTurn(p: Page, sessionId: string): Promise<number | null> {
  let open: number | null = null
  for (const e of await p.engine.events(sessionId)) {
    if (e.type === 'turn/start') open = e.data.turn
    if (e.type === 'turn/end') open = null
  }
  return open
}

/** The host answers the open turn and ends it. */
async function finish(p: Page, sessionId: string, messageId: string) {
  const turn = await openTurn(p, sessionId)
  if (turn === null) return
  const step =
    (await p.engine.events(sessionId)).filter((e) => e.type === 'step/start' && e.data.turn === turn).length +
    1
  await p.engine.append(sessionId, [
    ...answer(turn, step, messageId, `answer ${messageId}`),
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ])
}

/** A prompt admitted, promoted and answered by the host. */
async function exchange(p: Page, sessionId: string, id: string) {
  await p.engine.admit(sessionId, { id, text: `prompt ${id}`, delivery: 'queue' })
  await p.engine.promote(sessionId, 'settled')
  await finish(p, sessionId, `${id}-answer`)
}

/** What a view shows, row by row, without the snapshot's object identities. */
const shownRows = (s: TimelineSnapshot) =>
  s.rows.map((row) =>
    row.kind === 'message'
      ? {
          key: row.key,
          id: row.message.id,
          text: JSON.stringify(row.message.parts),
          branch: row.message.branch,
        }
      : row.kind === 'input'
        ? { key: row.key, text: row.input.text, state: row.input.state }
        : { key: row.key },
  )

/** Waits until `view` shows what a view opened now shows (or fails after a while, saying how they differ). */
async function settlesLikeFresh(p: Page, sessionId: string, view: SessionView) {
  const fresh = p.client.open(sessionId, { tail: 200 })
  try {
    const want = await ready(fresh)
    const expected = { rows: shownRows(want), queued: want.queued.map((i) => [i.id, i.text, i.delivery]) }
    const actual = () => {
      const s = view.getSnapshot()
      return { rows: shownRows(s), queued: s.queued.map((i) => [i.id, i.text, i.delivery]) }
    }
    const deadline = Date.now() + 2_000
    while (JSON.stringify(actual()) !== JSON.stringify(expected) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 5))
    expect(actual()).toEqual(expected)
  } finally {
    fresh.dispose()
  }
}

describe('history verbs on a session view', () => {
  test('a resend shows its prompt at once, under its id, and the prompt never leaves the screen', async () => {
    page = await openPage()
    const { id } = await page.client.createSession({ title: 'history' })
    await exchange(page, id, 'u1')
    await exchange(page, id, 'u2')
    const view = page.client.open(id, { tail: 200 })
    await until(view, (s) => s.rows.length === 4)
    const seen = record(view)
    const sent = view.resend('u2', { text: 'second, edited', id: 'u2b' })
    // Synchronously: the new prompt is on screen, as an input on its way.
    expect(view.getSnapshot().rows.at(-1)).toMatchObject({
      key: 'u2b',
      kind: 'input',
      input: { text: 'second, edited', state: 'sending' },
    })
    expect(await sent).toMatchObject({ id: 'u2b', status: 'promoted' })
    const s = await until(view, (s) => s.rows.some((r) => r.key === 'u2b' && r.kind === 'message'))
    expect(keysOf(s)).toEqual(['u1', 'u1-answer', 'u2b'])
    // From the moment it was sent, every snapshot shows the new prompt exactly once.
    for (const snapshot of seen.slice(1)) expect(keysOf(snapshot).filter((k) => k === 'u2b')).toHaveLength(1)
    expectUniqueKeys(seen)
    await finish(page, id, 'a3')
    await settlesLikeFresh(page, id, view)
    view.dispose()
  })

  test('a refused resend takes its prompt back and writes nothing', async () => {
    page = await openPage()
    const { id } = await page.client.createSession({ title: 'history' })
    await exchange(page, id, 'u1')
    const view = page.client.open(id)
    await until(view, (s) => s.rows.length === 2)
    const head = (await page.client.getSession(id))!.headSeq
    // u1-answer is no user row: not a prompt to resend.
    const refused = view.resend('u1-answer', { text: 'x', id: 'nope' })
    expect(view.getSnapshot().rows.some((r) => r.key === 'nope')).toBe(true)
    const error = await refused.catch((e: unknown) => e)
    expect(isSessionlineError(error)).toBe(true)
    expect(keysOf(view.getSnapshot())).toEqual(['u1', 'u1-answer'])
    expect((await page.client.getSession(id))!.headSeq).toBe(head)
    // Bad input is refused before anything is shown.
    await expect(view.resend('u1', { text: '   ' })).rejects.toMatchObject({ code: 'invalid_input' })
    expect(keysOf(view.getSnapshot())).toEqual(['u1', 'u1-answer'])
    view.dispose()
  })

  test('switchBranch, regenerate and rewind: rows keep their keys, branch marks follow the head', async () => {
    page = await openPage()
    const { id } = await page.client.createSession({ title: 'history' })
    await exchange(page, id, 'u1')
    await exchange(page, id, 'u2')
    const view = page.client.open(id, { tail: 200 })
    await until(view, (s) => s.rows.length === 4)
    const seen = record(view)
    await view.regenerate('u2-answer')
    await finish(page, id, 'a2b')
    let s = await until(view, (s) => s.rows.some((r) => r.key === 'a2b'))
    expect(keysOf(s)).toEqual(['u1', 'u1-answer', 'u2', 'a2b'])
    const regenerated = s.rows[3]!
    expect(regenerated.kind === 'message' && regenerated.message.branch).toEqual({ index: 1, count: 2 })

    await view.switchBranch('u2-answer')
    s = await until(view, (s) => s.rows.some((r) => r.key === 'u2-answer'))
    expect(keysOf(s)).toEqual(['u1', 'u1-answer', 'u2', 'u2-answer'])
    const back = s.rows[3]!
    expect(back.kind === 'message' && back.message.branch).toEqual({ index: 0, count: 2 })

    expect(await view.rewind('u2')).toEqual({ text: 'prompt u2' })
    s = await until(view, (s) => !s.rows.some((r) => r.key === 'u2'))
    expect(keysOf(s)).toEqual(['u1', 'u1-answer'])
    expectUniqueKeys(seen)
    await settlesLikeFresh(page, id, view)
    view.dispose()
  })

  test('compact, context and fork answer for the view’s session', async () => {
    page = await openPage()
    const { id } = await page.client.createSession({ title: 'history' })
    await exchange(page, id, 'u1')
    await exchange(page, id, 'u2')
    const view = page.client.open(id, { tail: 200 })
    await until(view, (s) => s.rows.length === 4)
    const summary = await view.compact({ summary: 'so far: two prompts', id: 'sum1' })
    expect(summary.id).toBe('sum1')
    expect((await view.context()).rows.map((r) => r.id)).toEqual(['sum1'])
    const s = await until(view, (s) => s.rows.some((r) => r.key === 'sum1'))
    expect(keysOf(s)).toContain('sum1')
    expect(keysOf(s)).not.toContain('u1')
    const fork = await view.fork({ title: 'another way', id: 'forked' })
    expect(fork).toMatchObject({ id: 'forked', title: 'another way' })
    await expect(view.fork({ title: 'x', id: 'forked' })).rejects.toMatchObject({ code: 'conflict' })
    await expect(view.compact({ summary: '' })).rejects.toMatchObject({ code: 'invalid_input' })
    view.dispose()
  })

  test('the tray shows a reorder and a change of delivery at once, and as the engine keeps them', async () => {
    page = await openPage()
    const { id } = await page.client.createSession({ title: 'inbox' })
    // A running turn, so queued inputs stay queued.
    await page.engine.admit(id, { id: 'run', text: 'running', delivery: 'queue' })
    await page.engine.promote(id, 'settled')
    const view = page.client.open(id)
    await ready(view)
    for (const q of ['q1', 'q2', 'q3']) await view.admit(q, { id: q, delivery: 'queue' })
    const queuedIds = (s: TimelineSnapshot) => s.queued.map((i) => i.id)
    expect(queuedIds(view.getSnapshot())).toEqual(['q1', 'q2', 'q3'])

    const moved = view.reorder('q3', { before: 'q1' })
    expect(queuedIds(view.getSnapshot())).toEqual(['q3', 'q1', 'q2'])
    expect((await moved).rank).toBeDefined()
    expect(queuedIds(view.getSnapshot())).toEqual(['q3', 'q1', 'q2'])
    const last = view.reorder('q3', { before: null })
    expect(queuedIds(view.getSnapshot())).toEqual(['q1', 'q2', 'q3'])
    await last

    const steered = view.setDelivery('q2', 'steer')
    let s = view.getSnapshot()
    expect(queuedIds(s)).toEqual(['q1', 'q3'])
    expect(s.rows.at(-1)).toMatchObject({ key: 'q2', kind: 'input', input: { delivery: 'steer' } })
    await steered
    expect(queuedIds(view.getSnapshot())).toEqual(['q1', 'q3'])

    // A refused move shows the old order again.
    const refused = view.reorder('q1', { before: 'nobody' })
    await expect(refused).rejects.toSatisfy(isSessionlineError)
    expect(queuedIds(view.getSnapshot())).toEqual(['q1', 'q3'])
    s = view.getSnapshot()
    expectUniqueKeys([s])
    await settlesLikeFresh(page, id, view)
    view.dispose()
  })
})

test('after any sequence of verbs the view shows what a fresh view shows, no key twice', async () => {
  type Act = (
    | { type: 'exchange' | 'queue' }
    | {
        type: 'rewind' | 'regenerate' | 'switchBranch' | 'resend' | 'compact' | 'reorder' | 'setDelivery'
        pick: number
        other: number
      }
  ) & { overlap: boolean }
  const act: fc.Arbitrary<Act> = fc.oneof(
    fc.record({ type: fc.constantFrom('exchange' as const, 'queue' as const), overlap: fc.boolean() }),
    fc.record({
      type: fc.constantFrom(
        'rewind' as const,
        'regenerate' as const,
        'switchBranch' as const,
        'resend' as const,
        'compact' as const,
        'reorder' as const,
        'setDelivery' as const,
      ),
      pick: fc.nat(30),
      other: fc.nat(30),
      overlap: fc.boolean(),
    }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(act, { minLength: 1, maxLength: 10 }), async (acts) => {
      const p = await openPage()
      try {
        const { id } = await p.client.createSession({ title: 'random' })
        const view = p.client.open(id, { tail: 200 })
        await ready(view)
        const seen = record(view)
        let n = 0
        /** Acts started without waiting for them (`overlap`): they run alongside the next ones. */
        const running: Promise<void>[] = []
        for (const a of acts) {
          const rows = (await p.engine.page(id, { limit: 1000, includeInactive: true })).messages
          const pending = await p.engine.pending(id)
          const target = rows.length === 0 ? 'missing' : rows[('pick' in a ? a.pick : 0) % rows.length]!.id
          const input =
            pending.length === 0 ? 'missing' : pending[('pick' in a ? a.pick : 0) % pending.length]!.id
          const run = async () => {
            try {
              switch (a.type) {
                case 'exchange':
                  if ((await openTurn(p, id)) === null) await exchange(p, id, `u${n++}`)
                  break
                case 'queue':
                  await view.admit(`queued ${n}`, { id: `q${n++}`, delivery: 'queue' })
                  break
                case 'rewind':
                  await view.rewind(target)
                  break
                case 'switchBranch':
                  await view.switchBranch(target)
                  break
                case 'regenerate':
                  await view.regenerate(target)
                  await finish(p, id, `a${n++}`)
                  break
                case 'resend':
                  await view.resend(target, { id: `r${n++}`, text: `edited ${n}` })
                  await finish(p, id, `a${n++}`)
                  break
                case 'compact':
                  await view.compact({
                    summary: `summary ${n++}`,
                    throughSeq: rows[a.other % Math.max(1, rows.length)]?.seq,
                  })
                  break
                case 'reorder': {
                  const before = a.other % (pending.length + 1)
                  await view.reorder(input, { before: pending[before]?.id ?? null })
                  break
                }
                case 'setDelivery':
                  await view.setDelivery(input, a.other % 2 === 0 ? 'steer' : 'queue')
                  break
              }
            } catch (error) {
              // Refusals (a verb on the wrong kind of row or input) are typed and write nothing.
              if (!isSessionlineError(error)) throw error
            }
          }
          if (a.overlap) running.push(run())
          else await run()
        }
        await Promise.all(running)
        await settlesLikeFresh(p, id, view)
        expectUniqueKeys(seen)
        view.dispose()
      } finally {
        await p.close()
      }
    }),
    { numRuns: 25 },
  )
}, 60_000)
