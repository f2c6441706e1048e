import type { StoredEvent } from '../schema/events'

/**
 * A projection is a pure fold over a session's event log. State must be structured-clone
 * safe (it is cached in IndexedDB so a cold open needs no replay); bump `version` whenever
 * `apply` or the state's shape changes, and the cache is rebuilt from the log once.
 *
 * @example
 *   const outline = replay(turnOutline, events)
 *   turnOutline.view(outline) // TurnOutlineEntry[]
 */
export interface Projection<S, V> {
  readonly name: string
  readonly version: number
  init(): S
  /** Returns `state` itself when the event does not concern this projection. */
  apply(state: S, event: StoredEvent): S
  /** Same state in, same view out (by identity), so the change feed can gate on `Object.is`. */
  view(state: S): V
}

/** Folds a whole log from `init()`; the reference every incremental path is tested against. */
export function replay<S, V>(projection: Projection<S, V>, events: Iterable<StoredEvent>, from?: S): S {
  let state = from ?? projection.init()
  for (const event of events) state = projection.apply(state, event)
  return state
}
