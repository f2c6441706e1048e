import { describe, expect, test } from 'vitest'
import type { SessionChange } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import { type HostedEngineFactory, type HostedTestEngine, hostedEngineKinds } from '../support/engines'
import { changeFeed } from '../support/feed'

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

const delta = (text: string): SessionEvent => ({ type: 'assistant/delta', data: { messageId: 'm1', text } })
const textOf = (change: SessionChange | undefined) =>
  change?.rows
    .find((m) => m.id === 'm1')
    ?.parts.map((p) => ('text' in p ? p.text : ''))
    .join('')

/** What each push was: durable or a preview, and the streamed message's text in it. */
const shape = (changes: readonly SessionChange[]) => changes.map((c) => [c.durable, textOf(c)])

interface Streaming {
  id: string
  feed: ReturnType<typeof changeFeed>
}

/**
 * An engine on a hand-driven scheduler with message `m1` streaming in session `s`, and a
 * recorded watcher on it. Absence of a push is shown by awaiting a later one (same feed, in order).
 */
async function withStream(
  makeEngine: HostedEngineFactory,
  body: (t: HostedTestEngine & { clock: ReturnType<typeof manualScheduler> } & Streaming) => Promise<void>,
) {
  const clock = manualScheduler()
  const made = await makeEngine({ schedule: clock.schedule })
  try {
    const { engine } = made
    const { id } = await engine.createSession({ id: 's' })
    await engine.admit(id, { text: 'go' })
    await engine.promote(id, 'settled')
    await engine.append(id, [
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
    ])
    const feed = changeFeed()
    await engine.watch(id, feed.listener)
    await body({ ...made, clock, id, feed })
  } finally {
    await made.close()
  }
}

describe.each(hostedEngineKinds)('live previews %s', (_, makeEngine) => {
  test('streamed text is pushed as one batched preview per tick, not durable', () =>
    withStream(makeEngine, async ({ engine, host, clock, id, feed }) => {
      host.publishLive(id, [delta('Hel')])
      host.publishLive(id, [delta('lo')])
      clock.tick()
      await feed.until((c) => c.length >= 1)
      // one preview holding both deltas: nothing went out before the tick
      expect(feed.changes[0]).toMatchObject({ durable: false, inputs: [], views: {} })
      expect(textOf(feed.changes[0])).toBe('Hello')
      expect(await engine.events(id, { afterSeq: 5 })).toEqual([])
      clock.tick() // nothing new since the last preview
      await engine.admit(id, { text: 'witness' })
      await feed.until((c) => c.length >= 2)
      expect(shape(feed.changes)).toEqual([
        [false, 'Hello'],
        [true, undefined],
      ])
    }))

  test('a preview keeps text and reasoning in the order they streamed', () =>
    withStream(makeEngine, async ({ engine, host, clock, id, feed }) => {
      const reasoning = (text: string): SessionEvent => ({
        type: 'assistant/delta',
        data: { messageId: 'm1', reasoning: text },
      })
      const partsOf = (change: SessionChange | undefined) =>
        change?.rows.find((m) => m.id === 'm1')?.parts.map((p) => [p.type, 'text' in p ? p.text : ''])
      host.publishLive(id, [delta('Hel')])
      host.publishLive(id, [reasoning('hmm')])
      host.publishLive(id, [delta('lo')])
      clock.tick()
      await feed.until((c) => c.length >= 1)
      const streamed = [
        ['text', 'Hel'],
        ['reasoning', 'hmm'],
        ['text', 'lo'],
      ]
      expect(partsOf(feed.changes[0])).toEqual(streamed)
      // The first piece made durable: the rest still previews after it, in order.
      await engine.append(id, [delta('Hel')])
      host.publishLive(id, [delta('!')])
      clock.tick()
      await feed.until((c) => c.length >= 3)
      expect(partsOf(feed.changes[2])).toEqual([...streamed.slice(0, 2), ['text', 'lo!']])
      await engine.append(id, [reasoning('hmm'), delta('lo!')])
      await feed.until((c) => c.length >= 4)
      expect(partsOf(feed.changes[3])).toEqual([...streamed.slice(0, 2), ['text', 'lo!']])
    }))

  test('a durable append comes first, then the preview of what is still unflushed', () =>
    withStream(makeEngine, async ({ engine, host, clock, id, feed }) => {
      host.publishLive(id, [delta('Hello')])
      host.publishLive(id, [delta(' world')])
      await engine.append(id, [delta('Hello')])
      clock.tick()
      await feed.until((c) => c.length >= 2)
      expect(shape(feed.changes)).toEqual([
        [true, 'Hello'],
        [false, 'Hello world'],
      ])
      await engine.append(id, [
        delta(' world'),
        { type: 'assistant/end', data: { messageId: 'm1', finish: 'stop' } },
      ])
      host.publishLive(id, [delta('late')]) // the message has ended: nothing to preview
      clock.tick()
      await engine.admit(id, { text: 'witness' })
      await feed.until((c) => c.length >= 4)
      expect(shape(feed.changes)).toEqual([
        [true, 'Hello'],
        [false, 'Hello world'],
        [true, 'Hello world'],
        [true, undefined],
      ])
    }))

  test('the host reports turn state and tells the runner about new input only (a replay or an edit is not new)', async () => {
    const { engine, host, close } = await makeEngine()
    try {
      const { id } = await engine.createSession({ id: 's' })
      const heard: string[] = []
      const stop = host.onInput((sessionId) => heard.push(sessionId))
      expect(await host.turnState(id)).toEqual({ lastTurn: 0, openTurn: null, openStep: null, lastStep: 0 })
      await engine.admit(id, { id: 'a', text: 'one' })
      await engine.admit(id, { id: 'a', text: 'one' }) // a replay is not new input
      await engine.edit(id, 'a', { text: 'two' }) // an edit never restarts a stopped session
      await engine.admit(id, { id: 'b', text: 'three' })
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
