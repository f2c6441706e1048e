/**
 * The playground's side of session sync (docs/decisions/0036): the sync server's URL kept with
 * the other settings, and which session the worker syncs. Only the open session syncs: every
 * synced session holds a long-poll open, and a browser gives one origin a handful of
 * connections, so syncing every session ever opened would starve the page. A session left
 * keeps its log, cursor and outbox; opening it again pushes and pulls what it missed.
 */
import { z } from 'zod'
import type { SessionlineClient } from '../src/index'
import type { SyncStatus } from '../src/schema/sync'

const STORAGE_KEY = 'sessionline-demo:sync-url'

/** A sync server's base URL as Settings takes it: http or https, no trailing slash. */
export const SyncServerUrl = z
  .url({ protocol: /^https?$/, error: 'the sync server URL must be an http or https URL' })
  .max(2048)
  .transform((url) => url.replace(/\/+$/, ''))

/** The saved sync server URL, or '' (sync off; also when the saved value is damaged). */
export function savedSyncUrl(): string {
  const parsed = SyncServerUrl.safeParse(localStorage.getItem(STORAGE_KEY) ?? '')
  return parsed.success ? parsed.data : ''
}

/** The URL as typed, checked ('' stays '': sync off). Throws a readable error on a bad URL. */
export function parseSyncUrl(text: string): string {
  const trimmed = text.trim()
  if (trimmed === '') return ''
  const parsed = SyncServerUrl.safeParse(trimmed)
  if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? 'not a URL')
  return parsed.data
}

/** Checks and saves the URL ('' turns sync off); returns what was saved. Throws on a bad URL. */
export function saveSyncUrl(text: string): string {
  const url = parseSyncUrl(text)
  if (url === '') localStorage.removeItem(STORAGE_KEY)
  else localStorage.setItem(STORAGE_KEY, url)
  return url
}

/** Which session to sync with which server. */
export interface SyncTarget {
  sessionId: string
  url: string
}

/**
 * Keeps the worker syncing exactly the wanted session: calls are made one after another, so a
 * quick switch A → B → C never leaves B's loop running (an `unsync` that overtook its `sync`
 * would find nothing to stop).
 */
export class SyncFollower {
  private wanted: SyncTarget | undefined
  private synced: SyncTarget | undefined
  private queue: Promise<void> = Promise.resolve()

  constructor(
    private readonly client: Pick<SessionlineClient, 'sync' | 'unsync'>,
    private readonly failed: (target: SyncTarget, error: unknown) => void,
  ) {}

  /** The session the worker syncs (or is starting to), if any. */
  get current(): SyncTarget | undefined {
    return this.synced
  }

  /** Syncs `target` (stopping the previous one), or nothing; settles once the worker did. */
  follow(target: SyncTarget | undefined): Promise<void> {
    this.wanted = target
    return this.enqueue(() => this.reconcile())
  }

  /**
   * Starts the current session's sync again, at once: after the network comes back, its loop
   * may be waiting out a backoff of several seconds.
   */
  restart(): Promise<void> {
    return this.enqueue(async () => {
      const target = this.synced
      if (!target || target !== this.wanted) return
      this.synced = undefined
      await this.client.unsync(target.sessionId).catch(() => undefined)
      await this.reconcile()
    })
  }

  /** The worker that synced was replaced (a fresh one syncs nothing yet): sync the wanted session there. */
  lost(): Promise<void> {
    return this.enqueue(async () => {
      this.synced = undefined
      await this.reconcile()
    })
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step, step)
    return this.queue
  }

  private async reconcile(): Promise<void> {
    const want = this.wanted
    const have = this.synced
    if (have && have.sessionId !== want?.sessionId) {
      this.synced = undefined
      await this.client.unsync(have.sessionId).catch(() => undefined)
    }
    if (!want || (have?.sessionId === want.sessionId && have.url === want.url)) return
    this.synced = want
    try {
      await this.client.sync(want.sessionId, { url: want.url })
    } catch (error) {
      if (this.synced === want) this.synced = undefined
      this.failed(want, error)
    }
  }
}

const LABELS: Record<SyncStatus['state'], string> = {
  live: 'Synced',
  pulling: 'Pulling',
  pushing: 'Pushing',
  offline: 'Offline',
  fenced: 'Fenced',
  error: 'Sync error',
}

/** The badge's text: the state, and what is still to send. */
export function describeSync(status: SyncStatus): string {
  return status.pending > 0 ? `${LABELS[status.state]} · ${status.pending} pending` : LABELS[status.state]
}

/** The badge's hover text: the state by its name, and the error in full. */
export function syncDetail(status: SyncStatus, url: string): string {
  const lines = [`Sync with ${url}: ${status.state}`, `${status.pending} local events not yet confirmed`]
  if (status.skipped) lines.push(`${status.skipped} stream messages skipped`)
  if (status.error) lines.push(`${status.error.code}: ${status.error.message}`)
  return lines.join('\n')
}
