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
})
