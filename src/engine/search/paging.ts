/** How builds walk their rows: a page at a time, yielding between pages, a few sessions at once. */

/**
 * Lets other calls run: a macrotask, so IndexedDB callbacks and messages get their turn. Through
 * a MessageChannel where there is one: a build yields after every page, and timers nested that
 * deep are clamped to 4 ms each, time in which the worker would sit idle.
 */
export const nextTask: () => Promise<void> = (() => {
  if (typeof MessageChannel === 'undefined')
    return () => new Promise<void>((resolve) => setTimeout(resolve, 0))
  const due: (() => void)[] = []
  let channel: MessageChannel | undefined
  return () =>
    new Promise<void>((resolve) => {
      due.push(resolve)
      if (due.length > 1) return
      if (!channel) {
        channel = new MessageChannel()
        channel.port1.onmessage = () => {
          for (const wake of due.splice(0)) wake()
        }
        // Node: a yield must not be all that keeps the process alive.
        ;(channel.port1 as { unref?: () => void }).unref?.()
      }
      channel.port2.postMessage(0)
    })
})()

/** `run` over `items` with at most `limit` running at once; results in the order of `items`. */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const at = next++
      out[at] = await run(items[at]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

/** Of a build's time, how long went to waiting for rows and to indexing them. */
export interface Phases {
  readMs: number
  indexMs: number
}

/**
 * Reads pages one ahead of using them: while `use` indexes a page, the next (`following`) is
 * already being read, unless `ahead` says not to (the engine is writing: a read in flight is one
 * more transaction a write's must wait for, so the next is read only after this one is used and
 * other calls had their turn). Between pages it tells `progress` and yields to other calls; `use`
 * answering false stops it. Answers how long (by `now`) was spent waiting for pages and using them.
 */
export async function pipelined<P>(
  first: Promise<P>,
  following: (page: P) => Promise<P> | undefined,
  use: (page: P) => boolean,
  progress: (phases: Phases) => void,
  now: () => number,
  ahead: () => boolean = () => true,
): Promise<Phases> {
  const phases = { readMs: 0, indexMs: 0 }
  let next: Promise<P> | undefined = first
  while (next !== undefined) {
    const waited = now()
    const page: P = await next
    phases.readMs += now() - waited
    const early = ahead()
    const readAhead = early ? following(page) : undefined
    // Dexie issues a transaction's requests from a microtask, not from the call: indexing the
    // page at once would hold them back until it is done, and storage would sit idle meanwhile
    // (a trace showed each page's read starting only after the previous page was indexed).
    if (readAhead !== undefined) await nextTask()
    const got = now()
    const more = use(page)
    phases.indexMs += now() - got
    if (!more) break
    if (early) {
      if (readAhead === undefined) break
      progress(phases)
      await nextTask()
      next = readAhead
    } else {
      // Writes waiting go first: the next read's transaction is created after theirs.
      await nextTask()
      next = following(page)
      if (next !== undefined) progress(phases)
    }
  }
  return phases
}
