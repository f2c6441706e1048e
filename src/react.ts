/**
 * React binding for sessionline (`sessionline/react`). The only module that imports React, so
 * the rest of the library stays framework-free and React stays an optional peer.
 *
 * @example
 *   function Timeline({ view }: { view: SessionView }) {
 *     const rows = useSessionView(view, (s) => s.rows)
 *     return rows.map((row) => <Row key={row.key} row={row} />)
 *   }
 */
import { useCallback, useRef, useSyncExternalStore } from 'react'
import type { SessionView, TimelineSnapshot } from './client/types'

const identity = (snapshot: TimelineSnapshot) => snapshot

/**
 * The view's snapshot, or a part of it, re-rendering only when that part changes. A selector
 * should return parts of the snapshot (they keep their identity between changes); one that
 * builds a new object is still safe, since its result is kept until the snapshot changes.
 */
export function useSessionView(view: SessionView): TimelineSnapshot
export function useSessionView<T>(view: SessionView, select: (snapshot: TimelineSnapshot) => T): T
export function useSessionView<T>(
  view: SessionView,
  select: (snapshot: TimelineSnapshot) => T = identity as (snapshot: TimelineSnapshot) => T,
): T {
  const memo = useRef<{ snapshot: TimelineSnapshot; select: unknown; value: T } | undefined>(undefined)
  const get = useCallback(() => {
    const snapshot = view.getSnapshot()
    const last = memo.current
    if (last !== undefined && last.snapshot === snapshot && last.select === select) return last.value
    const value = select(snapshot)
    memo.current = { snapshot, select, value }
    return value
  }, [view, select])
  return useSyncExternalStore(view.subscribe, get, get)
}
