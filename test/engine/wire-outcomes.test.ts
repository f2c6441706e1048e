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

/**
 * Comlink messages as a hostile caller would post them (the proxy sugar cannot send all of
 * them without leaving its own rejections unhandled); resolves with the reply to `message`.
 */
function rawCall(
  port: MessagePort,
  message: Record<string, unknown>,
): Promise<{ type?: string; name?: string; value?: unknown }> {
  const id = `raw-${Math.random()}`
  return new Promise((resolve) => {
    const onReply = (event: MessageEvent) => {
      if (event.data?.id !== id) return
      port.removeEventListener('message', onReply)
      resolve(event.data)
    }
    port.addEventListener('message', onReply)
    port.start()
    port.postMessage({ id, ...message })
  })
}

/** The code of a thrown SessionlineError in a Comlink reply, or what else the reply is. */
const replyCode = (reply: { type?: string; name?: string; value?: unknown }) =>
  reply.type === 'HANDLER' && reply.name === 'throw'
    ? (reply.value as { code?: string }).code
    : `answered ${reply.type}`

const RAW = { type: 'RAW' }
const HOSTILE: [string, Record<string, unknown>][] = [
  [
    'SET constructor.prototype.polluted',
    { type: 'SET', path: ['constructor', 'prototype', 'polluted'], value: { ...RAW, value: 'yes' } },
  ],
  [
    'SET __proto__.polluted',
    { type: 'SET', path: ['__proto__', 'polluted'], value: { ...RAW, value: 'yes' } },
  ],
  [
    'SET through a method',
    { type: 'SET', path: ['admit', '__proto__', '__proto__', 'polluted'], value: { ...RAW, value: 'yes' } },
  ],
  ['SET a method', { type: 'SET', path: ['admit'], value: { ...RAW, value: 'replaced' } }],
  ['GET a method', { type: 'GET', path: ['admit'] }],
  ['GET the prototype', { type: 'GET', path: ['__proto__'] }],
  [
    'APPLY a prototype method',
    { type: 'APPLY', path: ['hasOwnProperty'], argumentList: [{ ...RAW, value: 'admit' }] },
  ],
  ['APPLY through a method', { type: 'APPLY', path: ['admit', 'call'], argumentList: [] }],
  ['CONSTRUCT', { type: 'CONSTRUCT', path: ['createSession'], argumentList: [] }],
  ['ENDPOINT', { type: 'ENDPOINT', path: [] }],
]

test('a raw Comlink caller can only call methods: reads, writes and constructs through __proto__ or constructor are refused and pollute nothing', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  const { port1, port2 } = new MessageChannel()
  exposeEngine(local, port1)
  cleanups.push(() => {
    port1.close()
    port2.close()
  })
  for (const [what, message] of HOSTILE)
    expect(replyCode(await rawCall(port2, message)), what).toBe('invalid_input')
  // Method calls still work, and nothing in this realm (the worker's, here) was written.
  const answer = await rawCall(port2, {
    type: 'APPLY',
    path: ['getSession'],
    argumentList: [{ ...RAW, value: id }],
  })
  expect(answer).toMatchObject({ type: 'RAW', value: { id } })
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  expect(Object.keys(Object.prototype)).toEqual([])
  expect(Object.keys(Function.prototype)).toEqual([])
  expect(await local.getSession(id)).toMatchObject({ id })
})

test('the unsubscribe a watch hands back can be called and released, not walked', async () => {
  const local = await localEngine()
  const { id } = await local.createSession()
  const { port1, port2 } = new MessageChannel()
  exposeEngine(local, port1)
  registerErrorTransfer()
  const remote = Comlink.wrap<Engine>(port2)
  cleanups.push(() => {
    remote[Comlink.releaseProxy]()
    port1.close()
    port2.close()
  })
  const stop = await remote.watch(
    id,
    Comlink.proxy(() => undefined),
  )
  // The unsubscribe is a Comlink proxy on a port of its own: walking it is refused there too.
  const walked = (stop as unknown as { constructor: { name: () => unknown } }).constructor.name()
  expect(codeOf(await Promise.resolve(walked).catch((e: unknown) => e))).toBe('invalid_input')
  await stop()
  ;(stop as unknown as Record<symbol, () => void>)[Comlink.releaseProxy]?.()
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
})
