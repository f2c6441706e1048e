/**
 * An IDBFactory over fake-indexeddb that can force-close the database in the middle of a write:
 * after the n-th write request of the next readwrite transaction it aborts that transaction and
 * closes the connection the way a browser does when storage goes away (the connection's
 * `close` event fires). Nothing of the engine is mocked; the database really loses the write.
 */
import { indexedDB as fakeIndexedDB } from 'fake-indexeddb'
import { patchedFactory } from './patched-factory'

type WriteMethod = 'add' | 'put' | 'delete'
const WRITES: readonly WriteMethod[] = ['add', 'put', 'delete']

export interface InterruptibleFactory {
  factory: IDBFactory
  /** The next readwrite transaction is cut after its `afterWrites`-th write request. */
  arm(afterWrites: number): void
  /** Whether the armed cut happened (false: the transaction had fewer writes). */
  readonly fired: boolean
  /** Readwrite transactions opened so far (aborted ones included). */
  readonly readwrites: number
}

export function createInterruptibleFactory(base: IDBFactory = fakeIndexedDB): InterruptibleFactory {
  let armed: number | undefined
  let fired = false
  let readwrites = 0
  const patchedStores = new WeakSet<object>()

  function forceClose(db: IDBDatabase, tx: IDBTransaction): void {
    fired = true
    try {
      tx.abort()
    } catch {
      // Already finished: nothing to abort.
    }
    db.close()
    db.onclose?.call(db, new Event('close'))
  }

  function patch(db: IDBDatabase): void {
    const transaction = db.transaction.bind(db)
    db.transaction = ((
      names: string | string[],
      mode?: IDBTransactionMode,
      options?: IDBTransactionOptions,
    ) => {
      const tx = transaction(names, mode, options)
      if (mode === 'readwrite') readwrites++
      if (mode !== 'readwrite' || armed === undefined) return tx
      const cutAfter = armed
      armed = undefined
      let writes = 0
      const objectStore = tx.objectStore.bind(tx)
      tx.objectStore = (name: string) => {
        const store = objectStore(name)
        if (patchedStores.has(store)) return store
        patchedStores.add(store)
        for (const method of WRITES) {
          const write = (store[method] as (...args: unknown[]) => IDBRequest).bind(store)
          ;(store as unknown as Record<WriteMethod, unknown>)[method] = (...args: unknown[]) => {
            const request = write(...args)
            if (++writes === cutAfter) forceClose(db, tx)
            return request
          }
        }
        return store
      }
      return tx
    }) as IDBDatabase['transaction']
  }

  const factory = patchedFactory(base, patch)

  return {
    factory,
    arm(afterWrites) {
      armed = afterWrites
      fired = false
    },
    get fired() {
      return fired
    },
    get readwrites() {
      return readwrites
    },
  }
}
