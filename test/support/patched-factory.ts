/**
 * An `IDBFactory` over `base` (fake-indexeddb's, in tests) whose every opened connection is
 * handed to `patch` before its first use: the one way the test factories (forced closes, read
 * counting, recorded durabilities) reach the real IndexedDB connection Dexie will use.
 */
export function patchedFactory(base: IDBFactory, patch: (db: IDBDatabase) => void): IDBFactory {
  return {
    open(name: string, version?: number) {
      const request = base.open(name, version)
      // Registered before Dexie sets `onsuccess`, so the connection is patched before first use.
      request.addEventListener('success', () => patch(request.result))
      return request
    },
    deleteDatabase: (name: string) => base.deleteDatabase(name),
    cmp: (a: unknown, b: unknown) => base.cmp(a, b),
    databases: () => base.databases(),
  } as IDBFactory
}
