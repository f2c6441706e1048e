import { describe, expect, test } from 'vitest'
import type { Engine, SessionChange } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import { hostedEngineKinds } from '../support/engines'

/** A scheduler the test flushes by hand: one tick = one call of `tick()`. */
function manualScheduler() {
  let queued: Array<() => void> = []
  return {
    schedule: (flush: () => void) => {
      queued.push(flush)
    },
    tick() {
      const run = queued
      queued = []
      for (const flush of run) flush()
    },
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10))
const delta = (text: string): SessionEvent => ({ type: 'assistant/delta', data: { messageId: 'm1', text } })
const textOf = (change: SessionChange | undefined) =>
  change?.messages
    .find((m) => m.id === 'm1')
    ?.parts.map((p) => ('text' in p ? p.text : ''))
    .join('')

async function streaming(engine: Engine) {
  const { id } = await engine.createSession({ id: 's' })
  await engine.admit(id, { text: 'go' })
  await engine.promote(id, 'settled')
  await engine.append(id, [
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
  ])
  return id
}

describe.each(hostedEngineKinds)('live previews %s', (_, makeEngine) => {
  test('streamed text is pushed as one batched preview per tick, not durable', async () => {
    const clock = manualScheduler()
    const { engine, host, close } = await makeEngine({ schedule: clock.schedule })
    try {
      const id = await streaming(engine)
      const changes: SessionChange[] = []
      await engine.watch(id, (c) => changes.push(c))
      host.publishLive(id, [delta('Hel')])
      host.publishLive(id, [delta('lo')])
      await settle()
      expect(changes).toEqual([])
      clock.tick()
      await settle()
      expect(changes).toHaveLength(1)
      expect(changes[0]).toMatchObject({ durable: false, inputs: [], views: {} })
      expect(textOf(changes[0])).toBe('Hello')
      expect(await engine.events(id, { afterSeq: 5 })).toEqual([])
      clock.tick()
      await settle()
      expect(changes).toHaveLength(1)
    } finally {
      await close()
    }
  })

  test('a durable append comes first, then the preview of what is still unflushed', async () => {
    const clock = manualScheduler()
    const { engine, host, close } = await makeEngine({ schedule: clock.schedule })
    try {
      const id = await streaming(engine)
      const changes: SessionChange[] = []
      await engine.watch(id, (c) => changes.push(c))
      host.publishLive(id, [delta('Hello')])
      host.publishLive(id, [delta(' world')])
      await engine.append(id, [delta('Hello')])
      await settle()
      clock.tick()
      await settle()
      expect(changes.map((c) => [c.durable, textOf(c)])).toEqual([
        [true, 'Hello'],
        [false, 'Hello world'],
      ])
      await engine.append(id, [
        delta(' world'),
        { type: 'assistant/end', data: { messageId: 'm1', finish: 'stop' } },
      ])
      host.publishLive(id, [delta('late')]) // the message has ended: nothing to preview
      await settle()
      clock.tick()
      await settle()
      expect(changes.map((c) => [c.durable, textOf(c)])).toEqual([
        [true, 'Hello'],
        [false, 'Hello world'],
        [true, 'Hello world'],
      ])
    } finally {
      await close()
    }
  })

  test('the host reports turn state and tells the runner about new and edited input', async () => {
    const { engine, host, close } = await makeEngine()
    try {
      const { id } = await engine.createSession({ id: 's' })
      const heard: string[] = []
      const stop = host.onInput((sessionId) => heard.push(sessionId))
      expect(await host.turnState(id)).toEqual({ lastTurn: 0, openTurn: null, openStep: null, lastStep: 0 })
      await engine.admit(id, { id: 'a', text: 'one' })
      await engine.admit(id, { id: 'a', text: 'one' }) // a replay is not new input
      await engine.edit(id, 'a', { text: 'two' })
      stop()
      await engine.admit(id, { text: 'unheard' })
      expect(heard).toEqual([id, id])
      await engine.promote(id, 'settled')
      expect(await host.turnState(id)).toEqual({ lastTurn: 1, openTurn: 1, openStep: null, lastStep: 0 })
      expect(host.now()).toBeGreaterThan(0)
    } finally {
      await close()
    }
  })
})
