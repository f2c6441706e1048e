/**
 * Attachment bytes in IndexedDB (docs/decisions/0031): one row per content, keyed by its SHA-256,
 * and one reference row per session that uses it. Each function runs inside the caller's
 * transaction (which must span `attachments` and `attachmentRefs`) and awaits nothing but
 * IndexedDB: hashing happens before the transaction opens.
 */
import type { AttachmentRow, SessionlineDb } from './db'
import { MAX_KEY, MIN_KEY } from './db'

/** Bytes ready to store: hashed, sized, as a Blob. */
export type PreparedAttachment = AttachmentRow

/**
 * Stores `files` for session `sessionId`: bytes not stored yet are added, and the session's
 * reference to each is put (once per session, however many inputs carry the file).
 */
export async function storeAttachments(
  db: SessionlineDb,
  sessionId: string,
  files: readonly PreparedAttachment[],
): Promise<void> {
  if (files.length === 0) return
  const unique = [...new Map(files.map((f) => [f.id, f])).values()]
  const refs = db.attachmentRefs.bulkPut(unique.map((f) => ({ sessionId, attachmentId: f.id })))
  // Bytes already stored are not written again: a 10 MB screenshot pasted twice costs one copy.
  // Put, not add: two admits of the same new bytes committed together both find them missing,
  // and the same content under the same key is the same row.
  const stored = await db.attachments.bulkGet(unique.map((f) => f.id))
  const missing = unique.filter((_, i) => stored[i] === undefined)
  await Promise.all([refs, missing.length > 0 ? db.attachments.bulkPut(missing) : undefined])
}

/**
 * Drops the references of session `sessionId` and the bytes nobody else references. Bytes another
 * session still uses stay.
 */
export async function releaseAttachments(db: SessionlineDb, sessionId: string): Promise<void> {
  const refs = await db.attachmentRefs
    .where('[sessionId+attachmentId]')
    .between([sessionId, MIN_KEY], [sessionId, MAX_KEY])
    .toArray()
  if (refs.length === 0) return
  await db.attachmentRefs.bulkDelete(refs.map((r) => [r.sessionId, r.attachmentId] as [string, string]))
  const ids = refs.map((r) => r.attachmentId)
  const users = await Promise.all(ids.map((id) => db.attachmentRefs.where('attachmentId').equals(id).count()))
  const orphans = ids.filter((_, i) => users[i] === 0)
  if (orphans.length > 0) await db.attachments.bulkDelete(orphans)
}

/**
 * Makes session `sessionId` a user of attachments already stored (a fork names its source's
 * files again): their bytes then outlive the source's deletion.
 */
export async function referAttachments(
  db: SessionlineDb,
  sessionId: string,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return
  await db.attachmentRefs.bulkPut([...new Set(ids)].map((attachmentId) => ({ sessionId, attachmentId })))
}

/** The bytes of attachment `id`, if stored. */
export async function readAttachment(db: SessionlineDb, id: string): Promise<Blob | undefined> {
  return (await db.attachments.get(id))?.data
}

/** The attachment ids session `sessionId` references. */
export async function attachmentIdsOf(db: SessionlineDb, sessionId: string): Promise<string[]> {
  const refs = await db.attachmentRefs
    .where('[sessionId+attachmentId]')
    .between([sessionId, MIN_KEY], [sessionId, MAX_KEY])
    .toArray()
  return refs.map((r) => r.attachmentId)
}
