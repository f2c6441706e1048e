/**
 * Publishing a session's state through the identity gate: the built-in views are live
 * projections whose subscriptions collect only views that changed, a committed state goes to
 * the watchers as one `SessionChange`, and live previews of streamed text are computed on the
 * feed's next tick. The views of each entry are the publisher's own (`published`), not fields
 * others write on the entry.
 */
import { createLiveProjections } from '../../core/live-projection'
import { usage } from '../../core/usage'
import { SessionlineError } from '../../schema/errors'
import type { StoredEvent } from '../../schema/events'
import type { InputReceipt } from '../../schema/inputs'
import type { SessionMessage } from '../../schema/messages'
import { sessionInfo } from '../../store/db'
import type { ChangeViews, SessionChange } from '../types'
import type { Entries, Entry, LiveViews, Snapshot } from './entries'
import { outlineChange } from './outline'

/** What one commit changed, as the publisher hands it on. */
export interface Change {
  events: readonly StoredEvent[]
  rows: readonly SessionMessage[]
  inputs: readonly InputReceipt[]
  reset?: boolean
}

export type Publisher = ReturnType<typeof createPublisher>

/** An entry's gated views, while it has them. */
interface PublishedViews {
  views?: LiveViews
  /** Ends the subscription of the usage view (set while the session has watchers). */
  stopViews?: () => void
  /** Views that passed the gate during the current `advance`. */
  collecting?: Partial<ChangeViews>
}

export function createPublisher(entries: Entries, now: () => number) {
  const published = new WeakMap<Entry, PublishedViews>()
  const viewStateOf = (entry: Entry): PublishedViews => {
    let state = published.get(entry)
    if (state === undefined) {
      state = {}
      published.set(entry, state)
    }
    return state
  }

  /**
   * Subscribes the identity gate of the usage view while the session has watchers. The outline
   * is not gated as a whole: each change carries the suffix that changed (`outlineChange`).
   */
  function watchViews(entry: Entry): void {
    if (!entry.snap) return
    const state = viewStateOf(entry)
    state.stopViews = viewsOf(entry).usage.subscribe((view) => {
      if (state.collecting) state.collecting.usage = view
    })
  }

  /** Ends the gate's subscription (the last watcher left, or the session went). */
  function unwatchViews(entry: Entry): void {
    const state = published.get(entry)
    state?.stopViews?.()
    if (state) state.stopViews = undefined
  }

  const watchingViews = (entry: Entry): boolean => published.get(entry)?.stopViews !== undefined

  function viewsOf(entry: Entry): LiveViews {
    const snap = entry.snap
    if (!snap) throw new SessionlineError('internal', `session ${entry.id} is not loaded`)
    const state = viewStateOf(entry)
    state.views ??= createLiveProjections({ usage }, { usage: snap.folds.usage })
    return state.views
  }

  /** Moves the cache from `base` to `next` and tells the watchers what changed. */
  function advance(entry: Entry, next: Snapshot, change: Change): void {
    const base = entry.snap
    entry.publish(next)
    entry.live.settle(change.events)
    const views: Partial<ChangeViews> = {}
    const state = published.get(entry)
    if (state?.views) {
      state.collecting = views
      try {
        state.views.usage.reset(next.folds.usage)
      } finally {
        state.collecting = undefined
      }
    }
    // A reset makes every reader read again; the outline is not merged across it.
    if (state?.stopViews && !change.reset) {
      const outline = outlineChange(base?.folds.turnOutline, next.folds.turnOutline, next.row.headSeq)
      if (outline) views.outline = outline
    }
    if (next.pending !== base?.pending) views.pending = next.pending
    const pushed: SessionChange = {
      sessionId: entry.id,
      durable: true,
      headSeq: next.row.headSeq,
      rows: change.rows,
      inputs: change.inputs,
      views,
      session: sessionInfo(next.row),
    }
    if (change.reset) pushed.reset = true
    entry.feed.push(pushed)
    if (entry.live.size > 0) requestPreview(entry)
  }

  function requestPreview(entry: Entry): void {
    entry.feed.requestLive(() => {
      const snap = entry.snap
      if (!snap) return undefined
      const rows = entry.live.preview(snap.folds.transcript, entry.id, snap.row.headSeq, now())
      if (rows.length === 0) return undefined
      return {
        sessionId: entry.id,
        durable: false,
        headSeq: snap.row.headSeq,
        rows,
        inputs: [],
        views: {},
      }
    })
  }

  function removeEntry(entry: Entry): void {
    entry.markDeleted()
    unwatchViews(entry)
    entry.feed.push({
      sessionId: entry.id,
      durable: true,
      headSeq: 0,
      rows: [],
      inputs: [],
      views: {},
      deleted: true,
    })
    entry.feed.clear()
    entries.forget(entry)
  }

  return { watchViews, unwatchViews, watchingViews, viewsOf, advance, requestPreview, removeEntry }
}
