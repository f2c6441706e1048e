import { describe, expect, test } from 'vitest'
import {
  builtInProjections,
  createLiveProjection,
  createLiveProjections,
} from '../../src/core/live-projection'
import type { Projection } from '../../src/core/projection'
import { turnOutline } from '../../src/core/turn-outline'
import { usage } from '../../src/core/usage'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import { stamp } from '../support/arb-log'

/** A counter fold whose view is a fresh object per state; it counts how often `view` runs. */
function countingProjection() {
  const calls = { view: 0 }
  const projection: Projection<{ n: number }, { n: number }> = {
    name: 'counter',
    version: 1,
    init: () => ({ n: 0 }),
    apply: (state, event) => (event.type === 'step/end' ? { n: state.n + 1 } : state),
    view: (state) => {
      calls.view += 1
      return { n: state.n }
    },
  }
  return { projection, calls }
}

/** A fold whose state changes on every event while its view is always the same object. */
function constantProjection() {
  const shared = Object.freeze({ constant: true })
  const projection: Projection<number, object> = {
    name: 'constant',
    version: 1,
    init: () => 0,
    apply: (state) => state + 1,
    view: () => shared,
  }
  return { projection, shared }
}

let nextSeq = 1
/** Stamps events with seqs that keep counting across calls. */
function ev(...events: SessionEvent[]): StoredEvent[] {
  const stamped = stamp(events, 's', nextSeq)
  nextSeq += events.length
  return stamped
}
const stepEnd = (usageCounts?: { input: number; output: number }): SessionEvent => ({
  type: 'step/end',
  data: usageCounts ? { turn: 1, step: 1, usage: usageCounts } : { turn: 1, step: 1 },
})
const noise: SessionEvent = { type: 'session/created', data: { title: 'x' } }

describe('identity gate', () => {
  test('computes no view while nobody listens', () => {
    const { projection, calls } = countingProjection()
    const live = createLiveProjection(projection)
    live.apply(ev(stepEnd(), stepEnd(), noise))
    live.reset({ n: 10 })
    expect(calls.view).toBe(0)
    expect(live.getState()).toEqual({ n: 10 })
  })

  test('getView computes once per state, on demand', () => {
    const { projection, calls } = countingProjection()
    const live = createLiveProjection(projection, { n: 3 })
    const first = live.getView()
    expect(live.getView()).toBe(first)
    expect(calls.view).toBe(1)
    live.apply(ev(stepEnd()))
    expect(live.getView()).toEqual({ n: 4 })
    expect(calls.view).toBe(2)
  })

  test('publishes each changed view once and computes nothing for events that change no state', () => {
    const { projection, calls } = countingProjection()
    const live = createLiveProjection(projection)
    const seen: { n: number }[] = []
    live.subscribe((view) => seen.push(view))
    live.apply(ev(noise, noise))
    expect(calls.view).toBe(0)
    live.apply(ev(stepEnd(), stepEnd()))
    live.apply(ev(stepEnd()))
    expect(seen).toEqual([{ n: 2 }, { n: 3 }])
    expect(calls.view).toBe(2)
  })

  test('suppresses a view identical to the last published one', () => {
    const { projection } = constantProjection()
    const live = createLiveProjection(projection)
    let pushes = 0
    live.subscribe(() => {
      pushes += 1
    })
    live.apply(ev(noise))
    live.apply(ev(noise))
    live.reset(99)
    expect(live.getState()).toBe(99)
    expect(pushes).toBe(1)
  })

  test('publishes the first view after an unobserved change, even when it looks the same', () => {
    const { projection, shared } = constantProjection()
    const live = createLiveProjection(projection)
    const pushes: object[] = []
    const stop = live.subscribe((view) => pushes.push(view))
    live.apply(ev(noise))
    stop()
    live.apply(ev(noise)) // nobody listens: the gate forgets what it published
    live.subscribe((view) => pushes.push(view))
    live.apply(ev(noise))
    live.apply(ev(noise))
    expect(pushes).toEqual([shared, shared])
  })

  test('a late listener gets the view of changes made before it subscribed', () => {
    const { projection } = countingProjection()
    const live = createLiveProjection(projection)
    live.apply(ev(stepEnd(), stepEnd()))
    const seen: { n: number }[] = []
    live.subscribe((view) => seen.push(view))
    live.apply(ev(stepEnd()))
    expect(seen).toEqual([{ n: 3 }])
  })

  test('unsubscribing stops pushes, and one throwing listener does not starve the others', () => {
    const { projection } = countingProjection()
    const live = createLiveProjection(projection)
    const seen: number[] = []
    live.subscribe(() => {
      throw new Error('listener failed')
    })
    const stop = live.subscribe((view) => seen.push(view.n))
    expect(() => live.apply(ev(stepEnd()))).toThrow('listener failed')
    expect(seen).toEqual([1])
    expect(live.getState()).toEqual({ n: 1 })
    stop()
    expect(() => live.apply(ev(stepEnd()))).toThrow('listener failed')
    expect(seen).toEqual([1])
  })
})

describe('built-in live projections', () => {
  test('are the outline and usage folds', () => {
    expect(builtInProjections).toEqual({ turnOutline, usage })
  })

  test('one live projection per built-in, starting from cached states when given', () => {
    const live = createLiveProjections(builtInProjections, { usage: { input: 5, output: 6, calls: 1 } })
    expect(live.turnOutline.getView()).toEqual([])
    expect(live.usage.getView()).toEqual({ input: 5, output: 6, calls: 1 })
    live.usage.apply(ev(stepEnd({ input: 1, output: 2 })))
    expect(live.usage.getView()).toEqual({ input: 6, output: 8, calls: 2 })
  })
})
