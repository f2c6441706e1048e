/**
 * A view under a stream of durable deltas: the feed's changes reach its snapshot at most once
 * per frame (16 ms), the changes of one frame applied together, and nothing is lost: the last
 * snapshot equals what the engine serves, row for row.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import { openPage, type Page, ready, until } from './harness'

let page: Page
beforeEach(async () => {
  page = await openPage()
})
afterEach(async () => {
  await page.close()
})

const answerText = (snap: TimelineSnapshot) => {
  const row = snap.rows.findLast((r) => r.kind === 'message' && r.message.id === 'm')
  return row?.kind === 'message'
    ? row.message.parts.map((p) => ('text' in p ? p.text : '')).join('')
    : undefined
}

describe('a view of a streamed answer', () => {
  test('publishes feed changes at most once per 16 ms, and its last snapshot shows every delta as the engine serves it', async () => {
    const { engine, client } = page
    const { id } = await engine.createSession({ id: 's' })
    await engine.admit(id, { id: 'in', text: 'go on', delivery: 'steer' })
    await engine.promote(id, 'settled')
    await engine.append(id, [
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'm', turn: 1, step: 1 } },
    ])
    const view: SessionView = client.open(id)
    await ready(view)
    const stamps: number[] = []
    const stop = view.subscribe(() => stamps.push(performance.now()))
    let text = ''
    for (let i = 0; i < 60; i++) {
      const delta = `word ${i} `
      text += delta
      await engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'm', text: delta } }])
    }
    const last = await until(view, (s) => answerText(s) === text)
    stop()
    // Timers never fire early; 1 ms of slack for clock rounding between timers and performance.now.
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]! - stamps[i - 1]!).toBeGreaterThanOrEqual(15)
    const served = await client.page(id)
    expect(last.rows.flatMap((r) => (r.kind === 'message' ? [r.message] : []))).toEqual(served.messages)
    view.dispose()
  })
})
