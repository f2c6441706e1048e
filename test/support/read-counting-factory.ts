/**
 * fake-indexeddb's IDBFactory with its reads counted: every read request an engine issues on an
 * object store (directly or through one of its indexes: get, getAll, getKey, count, cursors) is
 * counted by store, with the records it answered. The database itself is fake-indexeddb's,
 * unchanged; a test reads the counts to say what a path of the engine reads, not how long it takes.
 */
import { indexedDB as fakeIndexedDB } from 'fake-indexeddb'
import { patchedFactory } from './patched-factory'

export interface StoreReads {
  /** Read requests issued on the store (a cursor counts once, however far it goes). */
  requests: number
  /** Records those requests answered (a cursor's every step, a getAll's every row). */
  records: number
}

export interface ReadCountingFactory {
  factory: IDBFactory
  /** Reads by object store name since the last `reset`. */
  readonly reads: Map<string, StoreReads>
  /** Read requests on these stores since the last `reset` (all stores when none are given). */
  requests(...stores: string[]): number
  records(...stores: string[]): number
  reset(): void
}

const READS = ['get', 'getAll', 'getAllKeys', 'getKey', 'count', 'openCursor', 'openKeyCursor'] as const

export function createReadCountingFactory(base: IDBFactory = fakeIndexedDB): ReadCountingFactory {
  const reads = new Map<string, StoreReads>()
  const patched = new WeakSet<object>()
  const tally = (store: string) => {
    const entry = reads.get(store) ?? { requests: 0, records: 0 }
    reads.set(store, entry)
    return entry
  }
  /** Counts the reads of an object store or an index of `store`. */
  const watchReads = (source: IDBObjectStore | IDBIndex, store: string) => {
    if (patched.has(source)) return source
    patched.add(source)
    const target = source as unknown as Record<string, (...args: unknown[]) => IDBRequest>
    for (const name of READS) {
      const original = target[name]
      if (typeof original !== 'function') continue
      target[name] = (...args: unknown[]) => {
        const request = original.apply(source, args)
        const entry = tally(store)
        entry.requests++
        request.addEventListener('success', () => {
          const result = request.result as unknown
          if (name === 'openCursor' || name === 'openKeyCursor') {
            if (result) entry.records++
          } else if (Array.isArray(result)) entry.records += result.length
          else if (name !== 'count' && result !== undefined) entry.records++
        })
        return request
      }
    }
    if ('index' in source) {
      const index = (source as IDBObjectStore).index.bind(source)
      ;(source as IDBObjectStore).index = (name: string) => watchReads(index(name), store) as IDBIndex
    }
    return source
  }
  const watch = (db: IDBDatabase) => {
    const transaction = db.transaction.bind(db)
    db.transaction = ((
      names: string | string[],
      mode?: IDBTransactionMode,
      options?: IDBTransactionOptions,
    ) => {
      const tx = transaction(names, mode, options)
      const objectStore = tx.objectStore.bind(tx)
      tx.objectStore = (name: string) => watchReads(objectStore(name), name) as IDBObjectStore
      return tx
    }) as IDBDatabase['transaction']
  }
  const factory = patchedFactory(base, watch)
  const sum = (stores: string[], key: keyof StoreReads) => {
    let total = 0
    for (const [store, entry] of reads) if (stores.length === 0 || stores.includes(store)) total += entry[key]
    return total
  }
  return {
    factory,
    reads,
    requests: (...stores) => sum(stores, 'requests'),
    records: (...stores) => sum(stores, 'records'),
    reset: () => reads.clear(),
  }
}
