/**
 * Live projections and the identity gate.
 *
 * A live projection holds one projection's state for one session and publishes its view to
 * listeners. The view is computed only while someone listens, and pushed only when `Object.is`
 * says it differs from the last pushed view. A change nobody observed forgets the last pushed
 * view, so the first view computed after it is always published: a listener that joins later
 * never misses a change the gate compared against a stale view.
 *
 * @example
 *   const outline = createLiveProjection(turnOutline, cachedState)
 *   const stop = outline.subscribe((entries) => send({ views: { turnOutline: entries } }))
 *   outline.apply(committedEvents) // pushes only when the entries array changed
 */
import type { StoredEvent } from '../schema/events'
import type { Projection } from './projection'
import { turnOutline } from './turn-outline'
import { usage } from './usage'

export interface LiveProjection<S, V> {
  readonly projection: Projection<S, V>
  getState(): S
  /** Fold events; the view is computed (and published if !Object.is to the last published) only while someone listens. */
  apply(events: Iterable<StoredEvent>): void
  /** Replace state (cold open from cache, rebuild). */
  reset(state: S): void
  getView(): V
  subscribe(listener: (view: V) => void): () => void
}

const NOTHING: unique symbol = Symbol('nothing published')

export function createLiveProjection<S, V>(projection: Projection<S, V>, state?: S): LiveProjection<S, V> {
  let current = state ?? projection.init()
  // The view of `current`, computed at most once per state.
  let cached: { state: S; view: V } | undefined
  let published: V | typeof NOTHING = NOTHING
  const listeners = new Set<(view: V) => void>()

  const viewOf = (s: S): V => {
    if (cached?.state !== s) cached = { state: s, view: projection.view(s) }
    return cached.view
  }

  function changeTo(next: S): void {
    if (Object.is(next, current)) return
    current = next
    if (listeners.size === 0) {
      published = NOTHING
      return
    }
    const view = viewOf(next)
    if (published !== NOTHING && Object.is(view, published)) return
    published = view
    let failure: { error: unknown } | undefined
    // A throwing listener must not starve the others; the first error surfaces after all ran.
    for (const listener of [...listeners]) {
      try {
        listener(view)
      } catch (error) {
        failure ??= { error }
      }
    }
    if (failure) throw failure.error
  }

  return {
    projection,
    getState: () => current,
    apply(events) {
      let next = current
      for (const event of events) next = projection.apply(next, event)
      changeTo(next)
    },
    reset: changeTo,
    getView: () => viewOf(current),
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
  }
}

/** The projections every session runs live (transcript rows are materialized by the engine instead). */
export const builtInProjections = { turnOutline, usage } as const
export type BuiltInProjections = typeof builtInProjections
export type BuiltInProjectionName = keyof BuiltInProjections

/** State of a projection, read from its type. */
export type StateOf<P> = P extends Projection<infer S, unknown> ? S : never
/** View of a projection, read from its type. */
export type ViewOf<P> = P extends Projection<unknown, infer V> ? V : never

/** One live projection per entry of `projections`, each starting from `states[name]` or `init()`. */
export function createLiveProjections<P extends Record<string, Projection<unknown, unknown>>>(
  projections: P,
  states: { [K in keyof P]?: StateOf<P[K]> } = {},
): { [K in keyof P]: LiveProjection<StateOf<P[K]>, ViewOf<P[K]>> } {
  const live: Record<string, unknown> = {}
  for (const name of Object.keys(projections)) {
    live[name] = createLiveProjection(projections[name] as Projection<unknown, unknown>, states[name])
  }
  return live as { [K in keyof P]: LiveProjection<StateOf<P[K]>, ViewOf<P[K]>> }
}
