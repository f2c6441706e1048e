/**
 * Object URLs for the file parts a view shows (docs/decisions/0031): made on the page from the
 * bytes `attachment(id)` reads, shared by every row that names the same content, and revoked once
 * no row of the view's window names it any more. A `blob:` URL holds its bytes in the page's
 * memory until revoked, so a long session scrolled through or a branch left behind would
 * otherwise keep every screenshot it ever showed.
 *
 * The cache follows TanStack Query's QueryCache: the window's rows are the observers, taken from
 * the current snapshot synchronously (a row shown is never missing its entry), and an entry with
 * none is collected only after `gcTime`, so a row that leaves and comes straight back (a branch
 * switched away from and back) keeps its URL instead of reading its bytes again.
 */
import type { Engine, Unsubscribe } from '../engine/types'
import type { SessionView, TimelineSnapshot } from './types'

/** What the cache reads bytes through: the client (or an engine in the page). */
export type AttachmentSource = Pick<Engine, 'attachment'>

export interface AttachmentUrlOptions {
  /**
   * Milliseconds an attachment no row names keeps its URL before it is revoked (default 1000).
   * Short by default: the bytes are in memory for as long as the URL lives.
   */
  gcTime?: number
}

/** Object URLs of a view's attachments; see `attachmentUrls`. */
export interface AttachmentUrls {
  /**
   * The object URL of attachment `attachmentId` once its bytes are read, else undefined (still
   * reading, not stored, not in the window, or disposed). Stable between changes: safe as a
   * `useSyncExternalStore` snapshot.
   */
  get(attachmentId: string): string | undefined
  /** Called whenever a URL became ready or was revoked. */
  subscribe(listener: () => void): Unsubscribe
  /** Stops following the view and revokes every URL made. */
  dispose(): void
}

interface Entry {
  /** Whether a row of the current window names it. */
  observed: boolean
  url?: string
  collect?: ReturnType<typeof setTimeout>
}

const DEFAULT_GC_TIME = 1000

/** The attachment ids the window's rows (and the queue tray's inputs) name. */
export function shownAttachmentIds(snapshot: TimelineSnapshot): Set<string> {
  const ids = new Set<string>()
  for (const row of snapshot.rows) {
    if (row.kind === 'message') {
      for (const part of row.message.parts) if (part.type === 'file') ids.add(part.attachmentId)
    } else if (row.kind === 'input') {
      for (const file of row.input.attachments ?? []) if (file.attachmentId) ids.add(file.attachmentId)
    }
  }
  for (const input of snapshot.queued)
    for (const file of input.attachments ?? []) if (file.attachmentId) ids.add(file.attachmentId)
  return ids
}

/**
 * Owns the object URLs of the attachments `view` shows: reads the bytes of each file part that
 * enters its window through `source.attachment(id)`, makes one URL per content, hands it out
 * synchronously with `get` once made, and revokes it `gcTime` after the last row naming it left
 * the window (at once, all of them, on `dispose`). Create one beside the view and dispose it with
 * the view.
 *
 * @example
 *   const view = client.open(sessionId)
 *   const urls = attachmentUrls(view, client)
 *   urls.subscribe(render) // an image's URL arrives after its row
 *   image.src = urls.get(part.attachmentId) ?? ''
 *   // when the session closes:
 *   urls.dispose()
 *   view.dispose()
 */
export function attachmentUrls(
  view: SessionView,
  source: AttachmentSource,
  options: AttachmentUrlOptions = {},
): AttachmentUrls {
  const gcTime = Math.max(0, options.gcTime ?? DEFAULT_GC_TIME)
  const entries = new Map<string, Entry>()
  const listeners = new Set<() => void>()
  let seen: TimelineSnapshot | undefined
  let disposed = false

  const notify = () => {
    for (const listener of [...listeners]) listener()
  }

  function collect(id: string, entry: Entry): void {
    entries.delete(id)
    if (entry.url !== undefined) {
      URL.revokeObjectURL(entry.url)
      notify()
    }
  }

  function read(id: string, entry: Entry): void {
    // Unreadable now (a worker restarting): the entry goes, so the next snapshot naming it reads again.
    const forget = () => {
      if (entries.get(id) === entry) entries.delete(id)
    }
    source.attachment(id).then((blob) => {
      // Collected (or disposed) while reading: the bytes are not wanted any more.
      if (entries.get(id) !== entry || disposed || blob === undefined) return
      try {
        entry.url = URL.createObjectURL(blob)
      } catch {
        return forget()
      }
      notify()
    }, forget)
  }

  /** Brings the entries in line with the current snapshot: observers come and go synchronously. */
  function sync(): void {
    if (disposed) return
    const snapshot = view.getSnapshot()
    if (snapshot === seen) return
    seen = snapshot
    const wanted = shownAttachmentIds(snapshot)
    for (const id of wanted) {
      const entry = entries.get(id)
      if (entry === undefined) {
        const fresh: Entry = { observed: true }
        entries.set(id, fresh)
        read(id, fresh)
      } else if (!entry.observed) {
        entry.observed = true
        clearTimeout(entry.collect)
        entry.collect = undefined
      }
    }
    for (const [id, entry] of entries) {
      if (wanted.has(id) || !entry.observed) continue
      entry.observed = false
      entry.collect = setTimeout(() => collect(id, entry), gcTime)
    }
  }

  const stop = view.subscribe(sync)
  sync()

  return {
    get(attachmentId) {
      sync()
      return entries.get(attachmentId)?.url
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
    dispose() {
      if (disposed) return
      disposed = true
      stop()
      for (const entry of entries.values()) {
        clearTimeout(entry.collect)
        if (entry.url !== undefined) URL.revokeObjectURL(entry.url)
      }
      entries.clear()
      notify()
      listeners.clear()
    },
  }
}
