/**
 * The waiting half of a group commit (docs/decisions/0014): one queue per scope (a cached session)
 * and lane (a durability), drained batch by batch in arrival order. The first write starts a batch
 * on the next microtask, so writes issued in the same tick join it; writes that arrive while a
 * batch is committing wait and form the next one. What a batch does is the caller's `commit`.
 *
 * @example
 *   const queue = createWriteQueue<Entry, Queued>({ maxBatch: 256, commit: commitBatch })
 *   queue.enqueue(entry, 'relaxed', item) // commitBatch(entry, [item, …]) runs on the next microtask
 */

export interface WriteQueueOptions<S extends object, T> {
  /** Items handed to one `commit`, at most. */
  maxBatch: number
  /**
   * Commits `batch` (in arrival order) and settles every item of it but those it returns, which
   * go back to the front of the queue for the next batch. Must not reject: a batch's failure is
   * its items' to report.
   */
  commit(scope: S, batch: T[]): Promise<T[]>
}

interface Lane<T> {
  items: T[]
  /** A batch of this lane is being committed; new items wait for the next. */
  running: boolean
}

export interface WriteQueue<S extends object, T> {
  /** Queues `item` behind the others of `scope` and `lane`; starts the lane's drain when idle. */
  enqueue(scope: S, lane: string, item: T): void
}

/** The value under `key`, added by `make` when there is none (static makers: nothing allocated per call). */
function getOrAdd<K, V>(
  map: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  make: () => V,
): V {
  const found = map.get(key)
  if (found !== undefined) return found
  const made = make()
  map.set(key, made)
  return made
}

const newLanes = <T>() => new Map<string, Lane<T>>()
const newLane = <T>(): Lane<T> => ({ items: [], running: false })

export function createWriteQueue<S extends object, T>({
  maxBatch,
  commit,
}: WriteQueueOptions<S, T>): WriteQueue<S, T> {
  // Keyed weakly: a scope nobody holds any more takes its (then empty) lanes with it.
  const lanesOf = new WeakMap<S, Map<string, Lane<T>>>()

  const laneOf = (scope: S, name: string): Lane<T> =>
    getOrAdd(getOrAdd(lanesOf, scope, newLanes<T>), name, newLane<T>)

  /** Commits the lane batch by batch, in arrival order, until it is empty. */
  async function drain(scope: S, lane: Lane<T>): Promise<void> {
    // Items queued in the same tick as the first one share its batch.
    await Promise.resolve()
    try {
      while (lane.items.length > 0) {
        const batch = lane.items.splice(0, maxBatch)
        const deferred = await commit(scope, batch)
        lane.items.unshift(...deferred)
      }
    } finally {
      lane.running = false
    }
  }

  return {
    enqueue(scope, name, item) {
      const lane = laneOf(scope, name)
      lane.items.push(item)
      if (lane.running) return
      lane.running = true
      void drain(scope, lane)
    },
  }
}
