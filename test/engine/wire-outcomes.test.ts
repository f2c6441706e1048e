/**
 * A call across the worker boundary that fails on the page is knowable: a timed-out call may
 * still commit in the worker, and a retry with the same id tells the outcome; an argument the
 * structured clone refuses is bad input, not a raw DataCloneError; a watch answered after its
 * deadline does not stay subscribed in the worker.
 */
import * as Comlink from 'comlink'
import { afterEach, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import { registerErrorTransfer } from '../../src/wire/errors'
import { wrapEngine } from '../../src/wire/remote-engine'
import { exposeEngine } from '../../worker/index'
import { inProcessEngine } from '../support/engines'
import { createSignal } from '../support/feed'

/** A promise the test resolves by hand: the worker side waits on it, so no timing decides anything. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** `local` served on one port of a MessageChannel, wrapped on the other with a short deadline. */
function served(local: Engine, timeoutMs: number) {
  const { port1, port2 } = new MessageChannel()
  exposeEngine(local, port1)
  const remote = wrapEngine(port2, { timeoutMs })
  cleanups.push(() => {
    remote.release()
    port1.close()
    port2.close()
  })
  return remote
}

async function localEngine() {
  const made = await inProcessEngine()
  cleanups.push(() => made.close())
  return made.engine
}

const codeOf = (error: unknown) =>
  isSessionlineError(error) ? error.code : `not a SessionlineError: ${error}`

test('an admit that timed out on the page still commits, and the retry with its id returns the stored receipt', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  const held = gate()
  const committed = createSignal()
  let commits = 0
  const slow: Engine = {
    ...local,
    admit: async (...args) => {
      await held.opened
      const receipt = await local.admit(...args)
      commits++
      committed.notify()
      return receipt
    },
  }
  const hasty = served(slow, 20)
  const first = await hasty.admit(id, { id: 'in-1', text: 'hello' }).catch((e: unknown) => e)
  expect(codeOf(first)).toBe('timeout')
  held.open()
  await committed.until(() => commits === 1, 'the timed-out admit to commit in the worker')
  // The retry has no deadline of its own: a loaded machine must not fail it.
  const retried = await served(slow, 0).admit(id, { id: 'in-1', text: 'hello' })
  expect(retried).toMatchObject({ id: 'in-1', seq: 1, status: 'pending', text: 'hello' })
  // One receipt: the retry found the first admit's, it did not admit again.
  expect(await local.pending(id)).toEqual([retried])
  expect((await local.getSession(id))?.nextInputSeq).toBe(2)
})

test('a retry of a timed-out admit with another text is a conflict, so a changed input is never taken as the same', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  await local.admit(id, { id: 'in-1', text: 'hello' })
  const remote = served(local, 0)
  expect(codeOf(await remote.admit(id, { id: 'in-1', text: 'bye' }).catch((e: unknown) => e))).toBe(
    'conflict',
  )
})

test('arguments the structured clone refuses reject invalid_input on the page and nothing reaches the engine', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  const remote = served(local, 0)
  const refused: [string, () => Promise<unknown>][] = [
    ['a function inside a request', () => remote.admit(id, { text: 'hi', extra: () => 1 } as never)],
    ['a Symbol as the session id', () => remote.admit(Symbol('s') as never, { text: 'hi' })],
    [
      'a Symbol inside an event',
      () => remote.append(id, [{ type: 'turn/start', data: { turn: Symbol() } }] as never),
    ],
    [
      'a function as tool input',
      () => remote.append(id, [{ type: 'tool/call', data: { input: () => 1 } }] as never),
    ],
    [
      'an object holding a method',
      () =>
        remote.createSession({
          title: 't',
          toString() {
            return 'x'
          },
        } as never),
    ],
  ]
  for (const [what, call] of refused) {
    const error = await call().catch((e: unknown) => e)
    expect(codeOf(error), what).toBe('invalid_input')
    expect((error as Error).message, what).toMatch(/cannot be sent to the worker/)
  }
  expect(await local.pending(id)).toEqual([])
  expect(await local.listSessions()).toHaveLength(1)
  expect((await local.getSession(id))?.headSeq).toBe(1)
})

test('a watch answered after its deadline is unsubscribed in the worker at once', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  const held = gate()
  const changed = createSignal()
  let subscribed = 0
  const slow: Engine = {
    ...local,
    watch: async (sessionId, listener) => {
      await held.opened
      const stop = await local.watch(sessionId, listener)
      subscribed++
      changed.notify()
      return () => {
        stop()
        subscribed--
        changed.notify()
      }
    },
  }
  const remote = served(slow, 20)
  let heard = 0
  const error = await remote.watch(id, () => heard++).catch((e: unknown) => e)
  expect(codeOf(error)).toBe('timeout')
  held.open()
  await changed.until(() => subscribed === 1, 'the late subscription')
  await changed.until(() => subscribed === 0, 'the late subscription to be ended')
  await local.admit(id, { text: 'after' })
  expect(heard).toBe(0)
})

test('a watch with no listener function is refused by the page and, from a raw Comlink caller, by the worker', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  const remote = served(local, 0)
  expect(codeOf(await remote.watch(id, 'nope' as never).catch((e: unknown) => e))).toBe('invalid_input')
  const { port1, port2 } = new MessageChannel()
  exposeEngine(local, port1)
  registerErrorTransfer()
  const raw = Comlink.wrap<Engine>(port2)
  cleanups.push(() => {
    raw[Comlink.releaseProxy]()
    port1.close()
    port2.close()
  })
  expect(codeOf(await raw.watch(id, 'nope' as never).catch((e: unknown) => e))).toBe('invalid_input')
})
