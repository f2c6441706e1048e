/**
 * The change feed of one session: listeners in subscription order, durable changes delivered
 * as they commit, and live previews coalesced to one delivery per scheduler tick.
 *
 * A live preview is computed when its tick runs, from the state as it is then, so it can never
 * show something older than a durable change already delivered.
 */
import type { ChangeListener, SessionChange, Unsubscribe } from './types'

export interface SessionFeed {
  readonly size: number
  /** Subscribes; the returned function unsubscribes once (later calls do nothing). */
  add(listener: ChangeListener): Unsubscribe
  /** Delivers a committed change now. */
  push(change: SessionChange): void
  /** Asks for one live preview on the next tick; `compute` runs then (undefined: nothing to show). */
  requestLive(compute: () => SessionChange | undefined): void
  /** Drops every listener (the session is gone or the engine closed). */
  clear(): void
}

/** Fire when the feed gains its first listener and loses its last (views are computed only between). */
export interface FeedHooks {
  onFirst?(): void
  onLast?(): void
}

/** A listener may be a remote proxy whose call returns a promise; its failure must not reach us. */
function deliver(listener: ChangeListener, change: SessionChange): void {
  try {
    const result: unknown = listener(change)
    if (result instanceof Promise) result.catch(() => undefined)
  } catch {
    // One failing listener must not starve the others or fail the write that produced the change.
  }
}

export function createFeed(batch: (task: () => void) => void, hooks: FeedHooks = {}): SessionFeed {
  const listeners = new Set<ChangeListener>()
  let liveSource: (() => SessionChange | undefined) | undefined
  let liveQueued = false

  const pushAll = (change: SessionChange) => {
    for (const listener of [...listeners]) deliver(listener, change)
  }

  return {
    get size() {
      return listeners.size
    },
    add(listener) {
      // The same function subscribed twice gets two subscriptions, each removable once.
      const entry: ChangeListener = (change) => listener(change)
      listeners.add(entry)
      if (listeners.size === 1) hooks.onFirst?.()
      let active = true
      return () => {
        if (!active) return
        active = false
        listeners.delete(entry)
        if (listeners.size === 0) hooks.onLast?.()
      }
    },
    push(change) {
      if (listeners.size > 0) pushAll(change)
    },
    requestLive(compute) {
      liveSource = compute
      if (liveQueued) return
      liveQueued = true
      batch(() => {
        liveQueued = false
        const source = liveSource
        liveSource = undefined
        if (listeners.size === 0 || !source) return
        const change = source()
        if (change) pushAll(change)
      })
    },
    clear() {
      const had = listeners.size > 0
      listeners.clear()
      liveSource = undefined
      if (had) hooks.onLast?.()
    },
  }
}
