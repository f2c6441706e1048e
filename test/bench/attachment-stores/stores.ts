/**
 * The two ways to keep attachment bytes that decision 0031 weighs, each doing what the engine
 * would do around them: a small record (the content's type and size) and a session's reference.
 *
 * - `indexeddb`: the Blob and the record in one IndexedDB transaction, as `admit` stores them.
 * - `opfs`: the bytes in a file of the origin private file system named by their hash, then the
 *   record in IndexedDB in a transaction of its own. Nothing can make the two one transaction:
 *   the file is written (and a crash may leave it without a record) before the record commits.
 *
 * Both use Dexie as the engine opens it: its cache off and `relaxed` durability.
 */
import Dexie, { type Table } from 'dexie'

export interface BytesRow {
  id: string
  data: Blob
  type: string
  size: number
}
export interface FileRow {
  id: string
  type: string
  size: number
}
export interface RefRow {
  sessionId: string
  attachmentId: string
}

/** What a side is given for one content: its hash, its bytes (as admit holds them after hashing) and the caller's Blob. */
export interface Content {
  id: string
  bytes: Uint8Array<ArrayBuffer>
  blob: Blob
}

/** One read: the milliseconds to a Blob, then to its bytes; the bytes, checked untimed. */
export interface ReadTiming {
  blob: number
  bytes: number
  data: ArrayBuffer
}

export interface Store {
  /**
   * Milliseconds for the bytes and the record; for OPFS, `file` the part until the file was
   * closed, and `flush` the part spent in the sync access handle's `flush()`.
   */
  write(content: Content): Promise<{ ms: number; file?: number; flush?: number }>
  read(id: string): Promise<ReadTiming>
  delete(id: string): Promise<number>
  close(): Promise<void>
}

const SESSION = 'bench-session'
const DB_OPTIONS = { cache: 'disabled', chromeTransactionDurability: 'relaxed' } as const

type BytesDb = Dexie & { bytes: Table<BytesRow, string>; refs: Table<RefRow, [string, string]> }
type FilesDb = Dexie & { files: Table<FileRow, string>; refs: Table<RefRow, [string, string]> }

async function freshDexie<T extends Dexie>(name: string, stores: Record<string, string>): Promise<T> {
  const db = new Dexie(name, DB_OPTIONS) as T
  db.version(1).stores(stores)
  await db.delete()
  await db.open()
  return db
}

export async function indexedDbStore(): Promise<Store> {
  const db = await freshDexie<BytesDb>('attachment-stores-idb', {
    bytes: 'id',
    refs: '[sessionId+attachmentId]',
  })
  return {
    async write({ id, blob }) {
      const t0 = performance.now()
      await db.transaction('rw', db.bytes, db.refs, () =>
        Promise.all([
          db.bytes.put({ id, data: blob, type: blob.type, size: blob.size }),
          db.refs.put({ sessionId: SESSION, attachmentId: id }),
        ]),
      )
      return { ms: performance.now() - t0 }
    },
    async read(id) {
      const t0 = performance.now()
      const row = await db.bytes.get(id)
      if (!row) throw new Error(`indexeddb: no bytes for ${id}`)
      const t1 = performance.now()
      const data = await row.data.arrayBuffer()
      const t2 = performance.now()
      return { blob: t1 - t0, bytes: t2 - t0, data }
    },
    async delete(id) {
      const t0 = performance.now()
      await db.transaction('rw', db.bytes, db.refs, () =>
        Promise.all([db.bytes.delete(id), db.refs.delete([SESSION, id])]),
      )
      return performance.now() - t0
    },
    async close() {
      db.close()
    },
  }
}

/** `FileSystemSyncAccessHandle`, which the DOM typings leave to the worker's. */
interface SyncAccessHandle {
  write(buffer: BufferSource, options?: { at?: number }): number
  read(buffer: BufferSource, options?: { at?: number }): number
  flush(): void
  close(): void
}
type SyncCapable = FileSystemFileHandle & { createSyncAccessHandle(): Promise<SyncAccessHandle> }

export type OpfsWriter = 'sync-access-handle' | 'writable'

/** The folder an OPFS side writes in, emptied. */
async function freshOpfsDir(name: string): Promise<FileSystemDirectoryHandle> {
  const root = await navigator.storage.getDirectory()
  await root.removeEntry(name, { recursive: true }).catch(() => undefined)
  return root.getDirectoryHandle(name, { create: true })
}

export async function opfsStore(writer: OpfsWriter): Promise<Store> {
  // An engine would look the folder up once and keep it, as it keeps its database open.
  const folder = `attachment-stores-${writer}`
  const dir = await freshOpfsDir(folder)
  const db = await freshDexie<FilesDb>(`attachment-stores-opfs-${writer}`, {
    files: 'id',
    refs: '[sessionId+attachmentId]',
  })
  return {
    async write({ id, bytes, blob }) {
      const t0 = performance.now()
      const file = await dir.getFileHandle(id, { create: true })
      let flush: number | undefined
      if (writer === 'sync-access-handle') {
        const handle = await (file as SyncCapable).createSyncAccessHandle()
        try {
          handle.write(bytes, { at: 0 })
          const f0 = performance.now()
          handle.flush()
          flush = performance.now() - f0
        } finally {
          handle.close()
        }
      } else {
        const stream = await file.createWritable()
        await stream.write(bytes)
        await stream.close()
      }
      const fileMs = performance.now() - t0
      // Only now may the record say the bytes are there: a second transaction, not the first's.
      await db.transaction('rw', db.files, db.refs, () =>
        Promise.all([
          db.files.put({ id, type: blob.type, size: blob.size }),
          db.refs.put({ sessionId: SESSION, attachmentId: id }),
        ]),
      )
      return { ms: performance.now() - t0, file: fileMs, ...(flush !== undefined && { flush }) }
    },
    async read(id) {
      const t0 = performance.now()
      // The file has no media type: the record gives it, as `attachment(id)` must return one.
      const row = await db.files.get(id)
      if (!row) throw new Error(`opfs: no record for ${id}`)
      const file = await (await dir.getFileHandle(id)).getFile()
      const blob = file.slice(0, file.size, row.type)
      const t1 = performance.now()
      const data = await blob.arrayBuffer()
      const t2 = performance.now()
      return { blob: t1 - t0, bytes: t2 - t0, data }
    },
    async delete(id) {
      const t0 = performance.now()
      // The record first: a crash between the two leaves a file no record names (a sweep's), never a record without bytes.
      await db.transaction('rw', db.files, db.refs, () =>
        Promise.all([db.files.delete(id), db.refs.delete([SESSION, id])]),
      )
      await dir.removeEntry(id)
      return performance.now() - t0
    },
    async close() {
      db.close()
      await navigator.storage
        .getDirectory()
        .then((root) => root.removeEntry(folder, { recursive: true }))
        .catch(() => undefined)
    },
  }
}
