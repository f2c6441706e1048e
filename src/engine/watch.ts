/**
 * The change feed of one session: listeners in subscription order, durable changes delivered
 * as they commit, and live previews coalesced to one delivery per scheduler tick.
 *
 * A live preview is computed when its tick runs, from the state as it is then, so it can never
 * show something older than a durable change already delivered.
 *
 * A listener that asked for `textAppends` gets a streaming row that only gained text as a
 * `TextAppend` against the version it last received (core/text-append), not whole.
 */
import { textAppendOf } from '../core/text-append'
import type { SessionMessage, TextAppend } from '../schema/messages'
import type { ChangeListener, SessionChange, Unsubscribe } from './types'

export interface FeedListenerOptions {
  textAppends?: boolean
}

export interface SessionFeed {
  readonly size: number
  /** Subscribes; the returned function unsubscribes once (later calls do nothing). */
  add(listener: ChangeListener, options?: FeedListenerOptions): Unsubscribe
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

/**
 * Turns each change into what one `textAppends` listener needs: rows that only gained text since
 * the version it last got become appends. Keeps, per streaming row, the last version delivered.
 */
export function appendEncoder(): (change: SessionChange) => SessionChange {
  const sent = new Map<string, SessionMessage>()
  return (change) => {
    if (change.reset || change.deleted || change.halted) {
      sent.clear()
      return change
    }
    if (change.rows.length === 0) return change
    let rows: SessionMessage[] | undefined
    let appends: TextAppend[] | undefined
    for (const [i, row] of change.rows.entries()) {
      const append = textAppendOf(sent.get(row.id), row)
      if (row.status === 'streaming') sent.set(row.id, row)
      else sent.delete(row.id)
      if (append === undefined) {
        rows?.push(row)
        continue
      }
      rows ??= change.rows.slice(0, i)
      appends ??= []
      appends.push(append)
    }
    return rows === undefined ? change : { ...change, rows, appends }
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
    add(listener, options = {}) {
      // The same function subscribed twice gets two subscriptions, each removable once.
      const encode = options.textAppends ? appendEncoder() : undefined
      const entry: ChangeListener = encode
        ? (change) => listener(encode(change))
        : (change) => listener(change)
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
