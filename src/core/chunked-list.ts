/**
 * A persistent list in fixed-size chunks: appending to it or replacing its last item copies
 * one chunk (at most `LIST_CHUNK` items) and the array of chunk references, never the whole
 * list. Folds that grow with the session (the turn outline) keep their state in one, so a fold
 * step costs the same at 100,000 turns as at 1,000.
 *
 * Every chunk but the last is full, and a chunk is never mutated once a list holds it: two lists
 * share every chunk that is `===`, which is how the store writes only the chunks that changed.
 * (A replay may edit its own copies in place, `createTransientEdits`, until it hands them out.)
 * A list is plain data (structured-cloneable), so it is stored and sent as it is.
 *
 * A list read back from the store may leave chunks unloaded (`undefined`): a cold open reads only
 * the last chunk, which is all a fold step touches. Only full chunks may be unloaded (the last
 * chunk never is), and a full chunk never changes again, so what the store holds for it is what
 * the list would hold. `listRange` reads across loaded chunks; `withChunks` fills unloaded ones.
 *
 * @example
 *   let list = emptyList<number>()
 *   list = appendItem(list, 1)
 *   list = replaceLast(list, 2)
 *   listItems(list) // [2], the same array until the list changes
 */

/** Items per chunk. The store keeps one row per chunk, so this is also its write unit. */
export const LIST_CHUNK = 256

/** A chunk of a list: its items, or `undefined` while it is not loaded (a full chunk, stored). */
export type ListChunk<T> = readonly T[] | undefined

export interface ChunkedList<T> {
  /** Marks the value as a chunked list for the store's encoder. */
  readonly $list: 1
  readonly length: number
  readonly chunks: readonly ListChunk<T>[]
}

export const emptyList = <T>(): ChunkedList<T> => ({ $list: 1, length: 0, chunks: [] })

export function isChunkedList(value: unknown): value is ChunkedList<unknown> {
  if (typeof value !== 'object' || value === null) return false
  const list = value as Partial<ChunkedList<unknown>>
  return list.$list === 1 && typeof list.length === 'number' && Array.isArray(list.chunks)
}

/** A list of `items` (copied into chunks). */
export function listFrom<T>(items: readonly T[]): ChunkedList<T> {
  const chunks: T[][] = []
  for (let start = 0; start < items.length; start += LIST_CHUNK)
    chunks.push(items.slice(start, start + LIST_CHUNK))
  return { $list: 1, length: items.length, chunks }
}

/**
 * A list of the given chunks, as stored: every chunk but the last must be full, and any but the
 * last may be left unloaded (`undefined`, counted as full).
 */
export function listOfChunks<T>(chunks: readonly ListChunk<T>[]): ChunkedList<T> {
  let length = 0
  chunks.forEach((chunk, index) => {
    const last = index === chunks.length - 1
    if (chunk === undefined) {
      if (last) throw new Error(`the last chunk (${index}) of a list must be loaded`)
      length += LIST_CHUNK
      return
    }
    if (!last && chunk.length !== LIST_CHUNK)
      throw new Error(`chunk ${index} of ${chunks.length} holds ${chunk.length} items, not ${LIST_CHUNK}`)
    length += chunk.length
  })
  return { $list: 1, length, chunks }
}

/** Indexes of the unloaded chunks that hold items `start` (inclusive) to `end` (exclusive). */
export function unloadedChunks(list: ChunkedList<unknown>, start: number, end: number): number[] {
  const out: number[] = []
  const from = Math.max(0, start)
  const to = Math.min(end, list.length)
  if (from >= to) return out
  for (let index = Math.floor(from / LIST_CHUNK); index <= Math.floor((to - 1) / LIST_CHUNK); index++)
    if (list.chunks[index] === undefined) out.push(index)
  return out
}

/**
 * The list with unloaded chunks filled in from `loaded` (by chunk index), for reading: the
 * items are the same, so this is the same list in every sense but which chunks it holds.
 */
export function withChunks<T>(
  list: ChunkedList<T>,
  loaded: ReadonlyMap<number, readonly T[]>,
): ChunkedList<T> {
  if (loaded.size === 0) return list
  const chunks = list.chunks.map((chunk, index) => chunk ?? loaded.get(index))
  return listOfChunks(chunks)
}

/**
 * Items `start` (inclusive) to `end` (exclusive), clamped to the list; throws when one of them
 * is in an unloaded chunk (fill it first with `withChunks`).
 */
export function listRange<T>(list: ChunkedList<T>, start: number, end: number): T[] {
  const from = Math.max(0, start)
  const to = Math.min(end, list.length)
  const out: T[] = []
  for (let at = from; at < to; ) {
    const index = Math.floor(at / LIST_CHUNK)
    const chunk = list.chunks[index]
    if (chunk === undefined) throw new Error(`chunk ${index} of the list is not loaded`)
    const offset = at - index * LIST_CHUNK
    const take = Math.min(chunk.length - offset, to - at)
    for (let i = 0; i < take; i++) out.push(chunk[offset + i]!)
    at += take
  }
  return out
}

export const lastItem = <T>(list: ChunkedList<T>): T | undefined => list.chunks.at(-1)?.at(-1)

export function appendItem<T>(list: ChunkedList<T>, item: T): ChunkedList<T> {
  const last = list.chunks.at(-1)
  if (last === undefined || last.length === LIST_CHUNK)
    return { $list: 1, length: list.length + 1, chunks: [...list.chunks, [item]] }
  const chunks = list.chunks.slice()
  chunks[chunks.length - 1] = [...last, item]
  return { $list: 1, length: list.length + 1, chunks }
}

/** The list with its last item replaced (the list itself when it is empty). */
export function replaceLast<T>(list: ChunkedList<T>, item: T): ChunkedList<T> {
  const last = list.chunks.at(-1)
  if (last === undefined) return list
  const chunks = list.chunks.slice()
  const copy = last.slice()
  copy[copy.length - 1] = item
  chunks[chunks.length - 1] = copy
  return { $list: 1, length: list.length, chunks }
}

const flattened = new WeakMap<ChunkedList<unknown>, readonly unknown[]>()

/**
 * The items as one array, built once per list: the same list gives the same array, so a view
 * over it passes an identity gate exactly when the list changed. Every chunk must be loaded.
 */
export function listItems<T>(list: ChunkedList<T>): readonly T[] {
  let items = flattened.get(list) as readonly T[] | undefined
  if (!items) {
    const unloaded = list.chunks.indexOf(undefined)
    if (unloaded >= 0) throw new Error(`chunk ${unloaded} of the list is not loaded`)
    const chunks = list.chunks as readonly (readonly T[])[]
    items = chunks.length === 1 ? chunks[0]! : chunks.flat()
    flattened.set(list, items)
  }
  return items
}

/** How a fold changes a list: `persistentEdits`, or a replay's `createTransientEdits`. */
export interface ListEdits {
  appendItem<T>(list: ChunkedList<T>, item: T): ChunkedList<T>
  replaceLast<T>(list: ChunkedList<T>, item: T): ChunkedList<T>
}

/** The persistent edits: every result is a new list that shares all but its last chunk. */
export const persistentEdits: ListEdits = { appendItem, replaceLast }

/**
 * Transient edits for one replay: the first change to a list copies its chunk array and last
 * chunk, as `appendItem` / `replaceLast` do, and later changes to lists these edits returned
 * patch those copies in place. So a replay of a long log copies the chunk array once per batch,
 * not on every change (which costs more the longer the list).
 *
 * The lists these edits return share their arrays, so only the newest one is valid, and only until
 * the next edit: a replay must read nothing but its latest state, and call `seal` before it hands
 * a list out. After `seal` no array it made is patched again (the next change copies afresh), so
 * what was handed out stays as it was, and what the edits were given is never touched at all.
 */
export function createTransientEdits(): ListEdits & { seal(): void } {
  let own = new WeakSet<object>()
  function ownChunks<T>(list: ChunkedList<T>): ListChunk<T>[] {
    if (own.has(list.chunks)) return list.chunks as ListChunk<T>[]
    const chunks = list.chunks.slice()
    own.add(chunks)
    return chunks
  }
  /** Marks `items` (a new chunk) as these edits' own, to patch in place until `seal`. */
  function fresh<T>(items: T[]): T[] {
    own.add(items)
    return items
  }
  return {
    appendItem<T>(list: ChunkedList<T>, item: T): ChunkedList<T> {
      const chunks = ownChunks(list)
      const at = chunks.length - 1
      const last = chunks[at]
      if (last === undefined || last.length === LIST_CHUNK) chunks.push(fresh([item]))
      else if (own.has(last) && last.length < LIST_CHUNK - 1) (last as T[]).push(item)
      // Copying the chunk that becomes full leaves no spare capacity from the pushes behind.
      else chunks[at] = fresh([...last, item])
      return { $list: 1, length: list.length + 1, chunks }
    },
    replaceLast<T>(list: ChunkedList<T>, item: T): ChunkedList<T> {
      if (list.chunks.length === 0) return list
      const chunks = ownChunks(list)
      const at = chunks.length - 1
      const last = chunks[at]!
      if (own.has(last)) (last as T[])[last.length - 1] = item
      else {
        const copy = fresh(last.slice())
        copy[copy.length - 1] = item
        chunks[at] = copy
      }
      return { $list: 1, length: list.length, chunks }
    },
    seal() {
      own = new WeakSet()
    },
  }
}
