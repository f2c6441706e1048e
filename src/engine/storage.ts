/**
 * What the database takes (`storage()`) and asking the browser to keep it (`persist()`),
 * docs/architecture.md §11. The origin's usage and quota are the browser's (`navigator.storage`); a
 * session's size is estimated from its rows, one pass over each table, since IndexedDB reports
 * no sizes of its own: the structured size of each row (strings by length, numbers 8 bytes,
 * binary and Blobs by their byte length), close to what the rows take before compression.
 */
import type { SessionStorage, StorageReport } from '../schema/portability'
import type { SessionlineDb } from '../store/db'

/** The structured size of `value` in bytes, estimated (see the module comment). */
export function sizeOf(value: unknown, depth = 0): number {
  if (value === null || value === undefined) return 1
  switch (typeof value) {
    case 'string':
      return value.length
    case 'number':
      return 8
    case 'boolean':
      return 1
    case 'object':
      break
    default:
      return 8
  }
  if (depth > 64) return 0
  if (typeof Blob !== 'undefined' && value instanceof Blob) return value.size
  if (ArrayBuffer.isView(value)) return value.byteLength
  if (value instanceof ArrayBuffer) return value.byteLength
  let size = 0
  if (Array.isArray(value)) {
    for (const item of value) size += sizeOf(item, depth + 1)
    return size
  }
  if (value instanceof Map) {
    for (const [k, v] of value) size += sizeOf(k, depth + 1) + sizeOf(v, depth + 1)
    return size
  }
  for (const [k, v] of Object.entries(value)) size += k.length + sizeOf(v, depth + 1)
  return size
}

type StorageManagerLike = {
  estimate?: () => Promise<{ usage?: number; quota?: number }>
  persisted?: () => Promise<boolean>
  persist?: () => Promise<boolean>
}
const storageManager = (): StorageManagerLike | undefined =>
  (globalThis as { navigator?: { storage?: StorageManagerLike } }).navigator?.storage

/** The origin's figures and each session's size, largest first. */
export async function storageReport(db: SessionlineDb, evicted: boolean): Promise<StorageReport> {
  const manager = storageManager()
  const [estimate, persisted, sessions] = await Promise.all([
    manager?.estimate?.().catch(() => undefined),
    manager?.persisted?.().catch(() => false),
    sessionSizes(db),
  ])
  return {
    usage: estimate?.usage ?? 0,
    quota: estimate?.quota ?? 0,
    persisted: persisted ?? false,
    sessions,
    evicted,
  }
}

/** Asks for persistent storage where this realm may; else answers whether it is persistent. */
export async function persistStorage(): Promise<boolean> {
  const manager = storageManager()
  if (typeof manager?.persist === 'function') return manager.persist()
  return (await manager?.persisted?.()) ?? false
}

/** Every session's size by part, from one pass over each table (a read of its own per table). */
async function sessionSizes(db: SessionlineDb): Promise<SessionStorage[]> {
  const sizes = new Map<string, SessionStorage>()
  const of = (sessionId: string): SessionStorage => {
    let entry = sizes.get(sessionId)
    if (!entry) {
      entry = { sessionId, bytes: 0, events: 0, rows: 0, index: 0, attachments: 0 }
      sizes.set(sessionId, entry)
    }
    return entry
  }
  await db.sessions.each((row) => {
    of(row.id).events += sizeOf(row)
  })
  await db.events.each((row) => {
    of(row.sessionId).events += sizeOf(row)
  })
  await db.inputs.each((row) => {
    of(row.sessionId).events += sizeOf(row)
  })
  await db.messages.each((row) => {
    of(row.sessionId).rows += sizeOf(row)
  })
  await db.projections.each((row) => {
    of(row.sessionId).rows += sizeOf(row)
  })
  await db.search.each((row) => {
    of(row.sessionId).index += sizeOf(row)
  })
  const bytesOf = new Map<string, number>()
  await db.attachments.each((row) => {
    bytesOf.set(row.id, row.size)
  })
  await db.attachmentRefs.each((ref) => {
    of(ref.sessionId).attachments += bytesOf.get(ref.attachmentId) ?? 0
  })
  const out = [...sizes.values()].filter((s) => s.sessionId !== '')
  for (const s of out) s.bytes = s.events + s.rows + s.index + s.attachments
  return out.sort((a, b) => b.bytes - a.bytes || (a.sessionId < b.sessionId ? -1 : 1))
}
