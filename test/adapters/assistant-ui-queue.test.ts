// The assistant-ui queue adapter and message conversion over a real engine (in process, the
// scripted provider): what each queue call does to the session's inbox.
import type { AppendMessage } from '@assistant-ui/react'
import { afterEach, describe, expect, it } from 'vitest'
import { rowToThreadMessageLike } from '../../src/assistant-ui/messages'
import { sessionlineQueueAdapter } from '../../src/assistant-ui/runtime'
import { chatRows, isTurnRunning } from '../../src/client/activity'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'

let engine: TestEngine | undefined
let view: SessionView | undefined
afterEach(async () => {
  view?.dispose()
  await engine?.close()
})

async function open(wordDelayMs: number): Promise<SessionView> {
  engine = await inProcessEngine({ provider: { kind: 'scripted', seed: 4, toolRate: 0, wordDelayMs } })
  const { id } = await engine.engine.createSession()
  view = createSessionView(engine.engine, id)
  await until(view, (s) => s.status === 'ready')
  return view
}

/** The message the composer hands the queue (only its content is read). */
const composed = (text: string) =>
  ({
    role: 'user',
    content: [{ type: 'text', text }],
    parentId: null,
    sourceId: null,
    runConfig: undefined,
  }) as unknown as AppendMessage

const failOnError = (error: unknown) => {
  throw error
}
const adapterNow = (v: SessionView) => sessionlineQueueAdapter(v, v.getSnapshot(), failOnError)
const queuedTexts = (s: TimelineSnapshot) => s.queued.map((input) => input.text)

describe('sessionlineQueueAdapter', () => {
  it('enqueue while a turn runs admits queued inputs, listed as items in admission order; edit changes one, remove cancels one', async () => {
    const v = await open(10)
    await v.admit('first')
    await until(v, (s) => s.rows.some((row) => row.kind === 'message' && row.message.role === 'assistant'))
    adapterNow(v).enqueue(composed('second'))
    adapterNow(v).enqueue(composed('third'))
    const both = await until(
      v,
      (s) => s.queued.length === 2 && s.queued.every((input) => input.state === 'pending'),
    )
    expect(queuedTexts(both)).toEqual(['second', 'third'])
    const items = sessionlineQueueAdapter(v, both).items
    expect(items.map((item) => [item.id, item.prompt])).toEqual(
      both.queued.map((input) => [input.id, input.text]),
    )
    expect(items[0]!.parts).toEqual([{ type: 'text', text: 'second' }])
    // Items are converted once per queued array.
    expect(sessionlineQueueAdapter(v, both).items).toBe(items)

    const [second, third] = both.queued
    adapterNow(v).edit(second!.id, composed('second, edited'))
    adapterNow(v).remove(third!.id)
    const changed = await until(v, (s) => s.queued.length === 1 && s.queued[0]!.text === 'second, edited')
    expect(changed.queued[0]!.id).toBe(second!.id)
    const done = await until(v, (s) => !isTurnRunning(s.rows) && s.queued.length === 0)
    const prompts = done.rows.flatMap((row) =>
      row.kind === 'message' && row.message.role === 'user' ? [row] : [],
    )
    expect(prompts.map((row) => row.key)).toEqual([done.rows[0]!.key, second!.id])
    expect(prompts.map((row) => (row.kind === 'message' ? row.message.parts[0] : undefined))).toEqual([
      { type: 'text', text: 'first' },
      { type: 'text', text: 'second, edited' },
    ])
  })

  it('steer admits a steer: it is a row of the view at once, never in the queue, and joins the running turn', async () => {
    const v = await open(10)
    await v.admit('first')
    const running = await until(v, (s) =>
      s.rows.some((row) => row.kind === 'message' && row.message.role === 'assistant'),
    )
    adapterNow(v).steer(composed('a correction'))
    const shown = v.getSnapshot()
    expect(shown.rows.at(-1)).toMatchObject({
      kind: 'input',
      input: { text: 'a correction', delivery: 'steer' },
    })
    expect(shown.queued).toEqual([])
    const done = await until(v, (s) => !isTurnRunning(s.rows))
    const turns = done.rows.map((row) => (row.kind === 'message' ? [row.message.role, row.message.turn] : []))
    const turn = running.rows[0]!.kind === 'message' ? running.rows[0]!.message.turn : 0
    expect(turns).toEqual([
      ['user', turn],
      ['assistant', turn],
      ['user', turn],
      ['assistant', turn],
    ])
  })

  it('enqueue with nothing running and nothing waiting opens the turn at once, shown in the rows, not the tray', async () => {
    const v = await open(0)
    adapterNow(v).enqueue(composed('hello'))
    const now = v.getSnapshot()
    expect(now.rows.at(-1)).toMatchObject({ kind: 'input', input: { text: 'hello' } })
    expect(now.queued).toEqual([])
    const done = await until(v, (s) => s.rows.length === 2 && !isTurnRunning(s.rows))
    expect(done.rows.map((row) => row.kind)).toEqual(['message', 'message'])
  })

  it('moves within the queue reorder the inbox; moving a queued item to the steer lane makes it a steer under the same id', async () => {
    const v = await open(15)
    await v.admit('first')
    await until(v, (s) => s.rows.some((row) => row.kind === 'message' && row.message.role === 'assistant'))
    adapterNow(v).enqueue(composed('later'))
    adapterNow(v).enqueue(composed('urgent'))
    const queued = await until(
      v,
      (s) => s.queued.length === 2 && s.queued.every((input) => input.state === 'pending'),
    )
    const [later, urgent] = queued.queued
    adapterNow(v).move(urgent!.id, { lane: 'queue', insertBefore: later!.id })
    // The tray shows the new order at once, and the adapter lists it.
    expect(v.getSnapshot().queued.map((input) => input.id)).toEqual([urgent!.id, later!.id])
    expect(adapterNow(v).items.map((item) => item.id)).toEqual([urgent!.id, later!.id])
    adapterNow(v).move(urgent!.id, { lane: 'queue', insertAfter: later!.id })
    expect(v.getSnapshot().queued.map((input) => input.id)).toEqual([later!.id, urgent!.id])
    adapterNow(v).move(urgent!.id, { lane: 'queue', insertAfter: null })
    expect(v.getSnapshot().queued.map((input) => input.id)).toEqual([urgent!.id, later!.id])
    adapterNow(v).move(urgent!.id, { lane: 'steer' })
    const moved = await until(v, (s) => s.queued.length === 1)
    expect(moved.queued[0]!.id).toBe(later!.id)
    const done = await until(v, (s) => !isTurnRunning(s.rows) && s.queued.length === 0)
    const userTexts = done.rows.flatMap((row) =>
      row.kind === 'message' && row.message.role === 'user' && row.message.parts[0]?.type === 'text'
        ? [row.message.parts[0].text]
        : [],
    )
    expect(userTexts).toEqual(['first', 'urgent', 'later'])
    // The steer is the same input: its row has the id it was queued under.
    expect(done.rows.some((row) => row.key === urgent!.id)).toBe(true)
  })
})

describe('rowToThreadMessageLike', () => {
  it('converts each row object once, keeps the row id, and maps an interrupted answer to incomplete/cancelled', async () => {
    const v = await open(15)
    await v.admit('a long answer please')
    await until(v, (s) => {
      const row = s.rows.at(-1)
      return row?.kind === 'message' && row.message.role === 'assistant' && row.message.parts.length > 0
    })
    const streaming = chatRows(v.getSnapshot().rows).at(-1)!
    const converted = rowToThreadMessageLike(streaming)
    expect(rowToThreadMessageLike(streaming)).toBe(converted)
    expect(converted).toMatchObject({ id: streaming.key, role: 'assistant', status: { type: 'running' } })
    await v.interrupt()
    const stopped = await until(v, (s) => {
      const row = s.rows.at(-1)
      return row?.kind === 'message' && row.message.status === 'interrupted'
    })
    const stoppedRows = chatRows(stopped.rows)
    const last = rowToThreadMessageLike(stoppedRows.at(-1)!)
    expect(last).not.toBe(converted)
    expect(last).toMatchObject({ id: streaming.key, status: { type: 'incomplete', reason: 'cancelled' } })
    expect(rowToThreadMessageLike(stoppedRows[0]!)).toMatchObject({
      id: stoppedRows[0]!.key,
      role: 'user',
      content: [{ type: 'text', text: 'a long answer please' }],
    })
  })
})
