/**
 * A view in one tab while another tab writes the same session: two engines on one fake-indexeddb
 * database, the view over a real Comlink channel (issue "Two tabs, one session").
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test } from 'vitest'
import { connect } from '../../src/client/connect'
import { createSessionView, type ViewEngine } from '../../src/client/session-view'
import type { SessionlineClient } from '../../src/client/types'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import type { MessagePage } from '../../src/schema/requests'
import { immediateSchedule } from '../support/engines'
import { createSignal } from '../support/feed'
import { openPage, type Page, turnEvents, until } from './harness'
import { createFleet, type Fleet, witness } from './mortal-workers'

/** Another tab: an engine of its own on `dbName` that tells the others of its commits. */
const otherTab = (dbName: string): Engine =>
  createEngine({ indexedDB, IDBKeyRange, schedule: immediateSchedule, dbName, broadcast: true })

const trayOf = (view: { getSnapshot(): { queued: readonly { id: string }[] } }) =>
  view.getSnapshot().queued.map((input) => input.id)

describe('a view while another tab writes', () => {
  let page: Page | undefined
  let other: Engine | undefined
  let fleet: Fleet | undefined
  let client: SessionlineClient | undefined
  afterEach(async () => {
    await page?.close()
    await other?.close()
    await client?.close()
    await fleet?.close()
    page = other = fleet = client = undefined
  })

  test('after a worker restart, the tray drops an input another tab cancelled meanwhile', async () => {
    fleet = createFleet()
    client = connect(fleet.factory, { heartbeatMs: 10, heartbeatTimeoutMs: 150, startTimeoutMs: 300 })
    const { id } = await client.createSession({ id: 's' })
    const view = client.open(id)
    await until(view, (s) => s.status === 'ready')
    await view.admit('later', { id: 'q1', delivery: 'queue' })
    expect(trayOf(view)).toEqual(['q1'])
    fleet.stillborn = true // no worker serves the view while the other tab cancels
    fleet.kill()
    await until(view, (s) => s.status === 'reconnecting')
    const tab = witness(fleet)
    await tab.cancel(id, 'q1')
    await tab.close()
    fleet.stillborn = false
    const back = await until(view, (s) => s.status === 'ready')
    // Before the fix: ['q1'] for good; the re-read added what pending() listed and removed nothing.
    expect(back.queued.map((input) => input.id)).toEqual([])
  })

  test('a reset change that carries a cancel leaves the input out of the tray', async () => {
    page = await openPage({ broadcast: true })
    other = otherTab(page.dbName)
    const { id } = await page.client.createSession({ id: 's' })
    const view = page.client.open(id)
    await until(view, (s) => s.status === 'ready')
    await other.admit(id, { id: 'q1', text: 'later', delivery: 'queue' })
    await until(view, (s) => s.queued.length === 1)
    // One transaction in the other tab: more than CATCH_UP_EVENTS (2,000) events and the cancel,
    // so the view's engine catches up with a reset change.
    const events: SessionEvent[] = []
    for (let turn = 1; turn <= 251; turn++) events.push(...turnEvents(turn))
    await Promise.all([other.append(id, events), other.cancel(id, 'q1')])
    const shown = await until(view, (s) => s.status === 'ready' && s.headSeq === 1 + events.length)
    await page.client.append(id, []) // a round trip after the reload's reads
    // Before the fix: ['q1'], the reload ran before the change's receipts were applied.
    expect(trayOf(view)).toEqual([])
    expect(shown.rows.at(-1)?.key).toBe('a-251')
  })

  test("a row read again lands after the row's final version and leaves it final", async () => {
    page = await openPage()
    const { client, engine } = page
    const { id } = await client.createSession({ id: 's' })
    await engine.append(id, [
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'a', turn: 1, step: 1 } },
      { type: 'assistant/delta', data: { messageId: 'a', text: 'one ' } },
    ])
    // Over the real channel, but one push of appends is lost (the view then holds a version the
    // next append does not continue) and the answer of the row's re-read is held back.
    let dropped = 0
    const held: Array<() => void> = []
    const asked = createSignal()
    const slow: ViewEngine = {
      ...client,
      watch: (sessionId, listener, options) =>
        client.watch(
          sessionId,
          (change) => {
            if (change.appends?.length && dropped++ === 0) return
            listener(change)
          },
          options,
        ),
      page: async (sessionId, request) => {
        const answer = await client.page(sessionId, request)
        if (request?.limit !== 1) return answer
        return new Promise<MessagePage>((resolve) => {
          held.push(() => resolve(answer))
          asked.notify()
        })
      },
    }
    const view = createSessionView(slow, id)
    await until(view, (s) => s.status === 'ready')
    const answer = () => {
      const row = view.getSnapshot().rows.find((r) => r.kind === 'message' && r.message.id === 'a')
      return row?.kind === 'message' ? row.message : undefined
    }
    // The first push after the view's read carries the row whole, the next ones appends.
    for (const text of ['two ', 'three ', 'four ']) {
      await engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'a', text } }])
    }
    await asked.until(() => held.length > 0, 'the re-read of the row')
    await engine.append(id, [
      { type: 'assistant/delta', data: { messageId: 'a', text: 'five' } },
      { type: 'assistant/end', data: { messageId: 'a', finish: 'stop' } },
      { type: 'step/end', data: { turn: 1, step: 1 } },
      { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
    ])
    await until(view, () => answer()?.status === 'complete')
    for (const release of held.splice(0)) release()
    await client.append(id, []) // a round trip: the held answer has been handled
    // Before the fix: status 'streaming', text 'one two three four ' (the re-read replaced the final row).
    expect(answer()).toMatchObject({
      status: 'complete',
      parts: [{ type: 'text', text: 'one two three four five' }],
    })
    view.dispose()
  })
})
