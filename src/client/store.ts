/**
 * A value with listeners, gated on identity: `set` notifies only when the value is a different
 * object, so a snapshot read twice between changes is the same object (`useSyncExternalStore`
 * relies on that).
 *
 * @example
 *   const store = createStore(0)
 *   const stop = store.subscribe(() => console.log(store.get()))
 *   store.set(1) // logs 1
 *   store.set(1) // silent: same value
 */
export interface Store<T> {
  get(): T
  set(next: T): void
  subscribe(listener: () => void): () => void
}

export function createStore<T>(initial: T): Store<T> {
  let value = initial
  const listeners = new Set<() => void>()
  return {
    get: () => value,
    set(next) {
      if (Object.is(next, value)) return // identity gate
      value = next
      // A listener that unsubscribes another one mid-notify must not skip or double-call it.
      for (const notify of [...listeners]) if (listeners.has(notify)) notify()
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
  }
}
