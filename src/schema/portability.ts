/**
 * Requests and answers of exporting sessions and of the storage they take (docs/architecture.md §11).
 *
 * @example
 *   const file = await engine.exportSession(id, { format: 'markdown' })
 *   const { usage, quota, sessions } = await engine.storage()
 */
import { z } from 'zod'

export const ExportFormat = z.enum(['sessionline', 'markdown'])
export type ExportFormat = z.infer<typeof ExportFormat>

export const ExportRequest = z.strictObject({ format: ExportFormat.default('sessionline') })
export type ExportRequest = z.input<typeof ExportRequest>

/** What one session takes in the database, by part, in bytes (estimated: see `storage()`). */
export interface SessionStorage {
  sessionId: string
  /** All of it: the parts below added up. */
  bytes: number
  /** The log, the inbox and the session row. */
  events: number
  /** Transcript rows and cached folds. */
  rows: number
  /** The search index. */
  index: number
  /** Attachment bytes it references (bytes shared with another session count for each). */
  attachments: number
}

/** The origin's storage as the browser reports it, and each session's share. */
export interface StorageReport {
  /** Bytes the origin uses (`navigator.storage.estimate()`); 0 where the browser does not say. */
  usage: number
  /** Bytes the origin may use; 0 where the browser does not say. */
  quota: number
  /** Whether the browser promised not to evict this origin's data (`navigator.storage.persisted()`). */
  persisted: boolean
  /** Largest first. */
  sessions: SessionStorage[]
  /**
   * The database was empty when this engine opened it, though a note kept outside IndexedDB
   * says it held sessions: the browser deleted this site's data since the last visit. False
   * where no note can be kept (no Cache API) or the note went with the data.
   */
  evicted: boolean
}
