import * as Comlink from 'comlink'
import { expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError, SessionlineError } from '../../src/schema/errors'
import { registerErrorTransfer } from '../../src/wire/errors'
import { workerGone, wrapEngine } from '../../src/wire/remote-engine'
import { exposeEngine } from '../../worker/index'
import { comlinkEngine, inProcessEngine } from '../support/engines'
import { changeFeed, createSignal } from '../support/feed'

test('a thrown SessionlineError keeps its code and details across Comlink; other errors stay errors', async () => {
  registerErrorTransfer()
  registerErrorTransfer() // idempotent
  const { port1, port2 } = new MessageChannel()
  Comlink.expose(
    {
      fail: () => {
        throw new SessionlineError('conflict', 'taken', { id: 'x', nested: [1, 2] })
      },
      crash: () => {
        throw new TypeError('plain failure')
      },
    },
    port1,
  )
  const remote = Comlink.wrap<{ fail(): void; crash(): void }>(port2)
  const error = await remote.fail().catch((e: unknown) => e)
  expect(isSessionlineError(error)).toBe(true)
  expect(error).toMatchObject({ code: 'conflict', message: 'taken', details: { id: 'x', nested: [1, 2] } })
  const plain = await remote.crash().catch((e: unknown) => e)
  expect(plain).toBeInstanceOf(Error)
  expect((plain as Error).message).toBe('plain failure')
  expect(isSessionlineError(plain)).toBe(false)
  remote[Comlink.releaseProxy]()
  port1.close()
  port2.close()
})

test('unsubscribing through Comlink stops the pushes and can be called twice', async () => {
  const { engine, close } = await comlinkEngine()
  try {
    const { id } = await engine.createSession()
    const seen = changeFeed()
    const stopA = await engine.watch(id, seen.listener)
    const other = changeFeed()
    const stopB = await engine.watch(id, other.listener)
    await engine.admit(id, { text: 'one' })
    await seen.until((c) => c.length === 1)
    await other.until((c) => c.length === 1)
    stopA()
    stopA()
    // Final at once on this side, though the remote unsubscribe lands on the worker later.
    await engine.admit(id, { text: 'two' })
    await other.until((c) => c.length === 2)
    expect(seen.changes).toHaveLength(1)
    // stopB is left subscribed: closing the engine releases its listener once, without errors.
    void stopB
  } finally {
    await close()
  }
})

test('a call to an endpoint that never answers times out; fail() rejects what is in flight', async () => {
  const { port1, port2 } = new MessageChannel()
  port1.start() // nothing is exposed on the other side
  const engine = wrapEngine(port2, { timeoutMs: 50, handshakeTimeoutMs: 50 })
  expect(await engine.handshake().catch((e: { code: string }) => e.code)).toBe('timeout')
  const slow = wrapEngine(port2, { timeoutMs: 0 })
  const pending = slow.listSessions().catch((e: { code: string }) => e.code)
  slow.fail(workerGone('the worker crashed'))
  expect(await pending).toBe('worker_gone')
  expect(await slow.getSession('x').catch((e: { code: string }) => e.code)).toBe('worker_gone')
  engine.release()
  slow.release()
  port1.close()
  port2.close()
})

test('a callback argument crosses as a proxy for the length of its call', async () => {
  const { engine: local, close } = await inProcessEngine()
  const stub: Engine = {
    ...local,
    importFiles: async (_files, onProgress) => {
      onProgress?.({ done: 1 } as never)
      onProgress?.({ done: 2 } as never)
      return []
    },
  }
  const { port1, port2 } = new MessageChannel()
  exposeEngine(stub, port1)
  const remote = wrapEngine(port2)
  try {
    const seen: unknown[] = []
    const arrived = createSignal()
    const onProgress = (progress: unknown) => {
      seen.push(progress)
      arrived.notify()
    }
    expect(await remote.importFiles([], onProgress)).toEqual([])
    // the callback's calls travel on the proxy's own port: they may land after the answer
    await arrived.until(() => seen.length >= 2, 'two progress calls')
    expect(seen).toEqual([{ done: 1 }, { done: 2 }])
  } finally {
    remote.release()
    port1.close()
    port2.close()
    await close()
  }
})
