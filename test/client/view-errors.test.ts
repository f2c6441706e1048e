/**
 * A view's soft errors (a read that failed while the view stays usable) reach the snapshot at
 * once, with the failure itself: not with some later, unrelated change.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { createSessionView, type ViewEngine } from '../../src/client/session-view'
import { SessionlineError } from '../../src/schema/errors'
import { DEFAULT_OUTLINE_SLICE } from '../../src/schema/requests'
import { inProcessEngine, type TestEngine } from '../support/engines'
import { seedTurns, until } from './harness'

let served: TestEngine | undefined
afterEach(async () => {
  await served?.close()
  served = undefined
})

/** Lets every pending promise callback and timer of this turn run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

describe('soft errors of a view', () => {
  test('an outline read that fails after the first load shows its error in the next snapshot, with nothing else changing', async () => {
    served = await inProcessEngine()
    const { engine } = served
    const { id } = await engine.createSession({ id: 's' })
    // More turns than the outline's first slice: rows loaded from seq 1 lie below it, so the
    // view reads the outline's older entries right after the first load.
    await seedTurns(engine, id, DEFAULT_OUTLINE_SLICE + 20)
    let failedOutline: Promise<unknown> | undefined
    const failing: ViewEngine = {
      ...engine,
      outline: (sessionId, request) => {
        if (request?.start === undefined) return engine.outline(sessionId, request)
        failedOutline = Promise.reject(new SessionlineError('timeout', 'the outline read timed out'))
        return failedOutline as ReturnType<ViewEngine['outline']>
      },
    }
    const view = createSessionView(failing, id)
    void view.loadThrough(1) // in the opening task: the first read brings every row from seq 1
    await until(view, (s) => s.status === 'ready')
    while (failedOutline === undefined) await settle()
    await failedOutline.catch(() => undefined)
    await settle()
    const s = view.getSnapshot()
    expect(s.status).toBe('ready')
    expect(s.error).toMatchObject({ code: 'timeout', message: 'the outline read timed out' })
    view.dispose()
  })

  test('a row read again that fails shows its error in the next snapshot, with nothing else changing', async () => {
    served = await inProcessEngine()
    const { engine } = served
    await engine.createSession({ id: 's' })
    await engine.append('s', [
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'a', turn: 1, step: 1 } },
      { type: 'assistant/delta', data: { messageId: 'a', text: 'one ' } },
    ])
    // The view's engine loses the first push carrying appends (the feed's first change of the
    // row is whole, so that is the second delta's), and its read of the row again fails.
    let dropped = false
    let failedRead: Promise<unknown> | undefined
    const failing: ViewEngine = {
      ...engine,
      watch: (sessionId, listener, options) =>
        engine.watch(
          sessionId,
          (change) => {
            if (change.appends?.length && !dropped) {
              dropped = true
              return
            }
            listener(change)
          },
          options,
        ),
      page: (sessionId, request) => {
        if (request?.limit !== 1) return engine.page(sessionId, request)
        failedRead = Promise.reject(new SessionlineError('timeout', 'the row read timed out'))
        return failedRead as ReturnType<ViewEngine['page']>
      },
    }
    const view = createSessionView(failing, 's')
    await until(view, (s) => s.status === 'ready')
    await engine.append('s', [{ type: 'assistant/delta', data: { messageId: 'a', text: 'two ' } }])
    await engine.append('s', [{ type: 'assistant/delta', data: { messageId: 'a', text: 'three ' } }])
    await engine.append('s', [{ type: 'assistant/delta', data: { messageId: 'a', text: 'four ' } }])
    while (failedRead === undefined) await settle()
    await failedRead.catch(() => undefined)
    await settle()
    expect(view.getSnapshot().error).toMatchObject({ code: 'timeout', message: 'the row read timed out' })
    view.dispose()
  })
})
