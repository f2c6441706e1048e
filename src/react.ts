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
import type { AttachmentUrls } from './client/attachment-urls'
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

const noUrls = () => () => undefined

/**
 * The object URL of attachment `attachmentId` from `urls` (see `attachmentUrls`), re-rendering
 * when it is made or revoked; undefined while its bytes are read (or when `urls` is undefined).
 * The cache, not the component, owns the URL: do not revoke it.
 *
 * @example
 *   function Image({ urls, part }: { urls: AttachmentUrls; part: FilePart }) {
 *     const src = useAttachmentUrl(urls, part.attachmentId)
 *     return src ? <img src={src} alt={part.name} /> : <span>{part.name}</span>
 *   }
 */
export function useAttachmentUrl(urls: AttachmentUrls | undefined, attachmentId: string): string | undefined {
  const get = useCallback(() => urls?.get(attachmentId), [urls, attachmentId])
  return useSyncExternalStore(urls?.subscribe ?? noUrls, get, get)
}
