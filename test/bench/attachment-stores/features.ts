/**
 * What the browser offers where sessionline's engine runs (a dedicated worker): OPFS and its two
 * writers, tried for real on a small file, and IndexedDB Blobs, tried the same way. A method
 * that exists can still refuse (a private window, an embedded WebView): each probe keeps the error.
 */

/** `'ok'`, or the error the probe met (`'absent'` when the method is not there at all). */
export type Probe = 'ok' | 'absent' | string

export interface Features {
  userAgent: string
  crossOriginIsolated: boolean
  /** The smallest step `performance.now()` was seen to take, in ms. */
  timerStepMs: number
  /** Whether `navigator.storage` (the Storage API) is there at all. */
  storageManager: boolean
  getDirectory: Probe
  syncAccessHandle: Probe
  createWritable: Probe
  indexedDbBlob: Probe
}

const message = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error)

async function probe(run: () => Promise<void>): Promise<Probe> {
  try {
    await run()
    return 'ok'
  } catch (error) {
    return message(error)
  }
}

function timerStep(): number {
  let step = Number.POSITIVE_INFINITY
  let last = performance.now()
  for (let i = 0; i < 200_000 && step > 0.001; i++) {
    const now = performance.now()
    if (now > last) step = Math.min(step, now - last)
    last = now
  }
  return Math.round(step * 10_000) / 10_000
}

const SAMPLE = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])

function sameBytes(a: ArrayBuffer, b: Uint8Array): void {
  const x = new Uint8Array(a)
  if (x.length !== b.length || x.some((v, i) => v !== b[i])) throw new Error('read back other bytes')
}

export async function detectFeatures(): Promise<Features> {
  const storage = navigator.storage as StorageManager | undefined
  const hasDirectory = typeof storage?.getDirectory === 'function'
  const proto = typeof FileSystemFileHandle === 'undefined' ? undefined : FileSystemFileHandle.prototype
  const inProto = (name: string) => Boolean(proto && name in proto)

  const getDirectory = hasDirectory ? await probe(async () => void (await storage!.getDirectory())) : 'absent'
  const fileNamed = async (name: string) =>
    (await storage!.getDirectory()).getFileHandle(name, { create: true })
  const remove = async (name: string) => (await storage!.getDirectory()).removeEntry(name)

  const syncAccessHandle =
    getDirectory !== 'ok' || !inProto('createSyncAccessHandle')
      ? 'absent'
      : await probe(async () => {
          const file = (await fileNamed('probe-sync')) as FileSystemFileHandle & {
            createSyncAccessHandle(): Promise<{ write(b: BufferSource): number; close(): void }>
          }
          const handle = await file.createSyncAccessHandle()
          handle.write(SAMPLE)
          handle.close()
          sameBytes(await (await file.getFile()).arrayBuffer(), SAMPLE)
          await remove('probe-sync')
        })
  const createWritable =
    getDirectory !== 'ok' || !inProto('createWritable')
      ? 'absent'
      : await probe(async () => {
          const file = await fileNamed('probe-writable')
          const stream = await file.createWritable()
          await stream.write(SAMPLE)
          await stream.close()
          sameBytes(await (await file.getFile()).arrayBuffer(), SAMPLE)
          await remove('probe-writable')
        })
  const indexedDbBlob = await probe(probeIndexedDbBlob)

  return {
    userAgent: navigator.userAgent,
    crossOriginIsolated: self.crossOriginIsolated,
    timerStepMs: timerStep(),
    storageManager: storage !== undefined,
    getDirectory,
    syncAccessHandle,
    createWritable,
    indexedDbBlob,
  }
}

/** A Blob put into IndexedDB comes back a Blob with the same bytes and type. */
function probeIndexedDbBlob(): Promise<void> {
  const request = (r: IDBRequest) =>
    new Promise<unknown>((resolve, reject) => {
      r.onsuccess = () => resolve(r.result)
      r.onerror = () => reject(r.error)
    })
  return new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open('attachment-stores-probe', 1)
    open.onupgradeneeded = () => open.result.createObjectStore('blobs')
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  }).then(async (db) => {
    try {
      await request(
        db
          .transaction('blobs', 'readwrite')
          .objectStore('blobs')
          .put(new Blob([SAMPLE], { type: 'image/png' }), 'x'),
      )
      const back = await request(db.transaction('blobs').objectStore('blobs').get('x'))
      if (!(back instanceof Blob)) throw new Error(`came back as ${Object.prototype.toString.call(back)}`)
      if (back.type !== 'image/png') throw new Error(`came back typed ${back.type}`)
      sameBytes(await back.arrayBuffer(), SAMPLE)
    } finally {
      db.close()
      indexedDB.deleteDatabase('attachment-stores-probe')
    }
  })
}
