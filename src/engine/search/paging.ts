/** How builds walk their rows: a page at a time, yielding between pages, a few sessions at once. */

/** Lets other calls run (a macrotask, so IndexedDB callbacks and messages get their turn). */
export const nextTask = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

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
 * already being read. Between pages it tells `progress` and yields to other calls; `use`
 * answering false stops it. Answers how long (by `now`) was spent waiting for pages and using them.
 */
export async function pipelined<P>(
  first: Promise<P>,
  following: (page: P) => Promise<P> | undefined,
  use: (page: P) => boolean,
  progress: (phases: Phases) => void,
  now: () => number,
): Promise<Phases> {
  const phases = { readMs: 0, indexMs: 0 }
  let next: Promise<P> | undefined = first
  while (next !== undefined) {
    const waited = now()
    const page: P = await next
    const got = now()
    phases.readMs += got - waited
    next = following(page)
    const more = use(page)
    phases.indexMs += now() - got
    if (!more) break
    if (next !== undefined) {
      progress(phases)
      await nextTask()
    }
  }
  return phases
}
