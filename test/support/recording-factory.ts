/**
 * fake-indexeddb's IDBFactory, watched: every connection it opens is kept (so a test can close
 * one the way a browser does when site data is cleared) and the durability each readwrite
 * transaction asked for is recorded. The database itself is fake-indexeddb's, unchanged.
 */
import { indexedDB as fakeIndexedDB } from 'fake-indexeddb'
import { patchedFactory } from './patched-factory'

export interface RecordingFactory {
  factory: IDBFactory
  /** Connections opened so far, oldest first. */
  readonly connections: IDBDatabase[]
  /** The `durability` of each readwrite transaction, in the order they were created. */
  readonly durabilities: string[]
}

export function createRecordingFactory(base: IDBFactory = fakeIndexedDB): RecordingFactory {
  const connections: IDBDatabase[] = []
  const durabilities: string[] = []
  const watch = (db: IDBDatabase) => {
    connections.push(db)
    const transaction = db.transaction.bind(db)
    db.transaction = ((
      names: string | string[],
      mode?: IDBTransactionMode,
      options?: IDBTransactionOptions,
    ) => {
      const tx = transaction(names, mode, options)
      if (mode === 'readwrite') durabilities.push(tx.durability)
      return tx
    }) as IDBDatabase['transaction']
  }
  const factory = patchedFactory(base, watch)
  return { factory, connections, durabilities }
}
