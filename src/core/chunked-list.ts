/**
 * A persistent list in fixed-size chunks: appending to it or replacing its last item copies
 * one chunk (at most `LIST_CHUNK` items) and the array of chunk references, never the whole
 * list. Folds that grow with the session (the turn outline) keep their state in one, so a fold
 * step costs the same at 100,000 turns as at 1,000.
 *
 * Every chunk but the last is full, and a chunk is never mutated once a list holds it: two lists
 * share every chunk that is `===`, which is how the store writes only the chunks that changed.
 * A list is plain data (structured-cloneable), so it is stored and sent as it is.
 *
 * @example
 *   let list = emptyList<number>()
 *   list = appendItem(list, 1)
 *   list = replaceLast(list, 2)
 *   listItems(list) // [2], the same array until the list changes
 */

/** Items per chunk. The store keeps one row per chunk, so this is also its write unit. */
export const LIST_CHUNK = 256

export interface ChunkedList<T> {
  /** Marks the value as a chunked list for the store's encoder. */
  readonly $list: 1
  readonly length: number
  readonly chunks: readonly (readonly T[])[]
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

/** A list of the given chunks, as stored (every chunk but the last must be full). */
export function listOfChunks<T>(chunks: readonly (readonly T[])[]): ChunkedList<T> {
  let length = 0
  chunks.forEach((chunk, index) => {
    if (index < chunks.length - 1 && chunk.length !== LIST_CHUNK)
      throw new Error(`chunk ${index} of ${chunks.length} holds ${chunk.length} items, not ${LIST_CHUNK}`)
    length += chunk.length
  })
  return { $list: 1, length, chunks }
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
 * over it passes an identity gate exactly when the list changed.
 */
export function listItems<T>(list: ChunkedList<T>): readonly T[] {
  let items = flattened.get(list) as readonly T[] | undefined
  if (!items) {
    items = list.chunks.length === 1 ? list.chunks[0]! : list.chunks.flat()
    flattened.set(list, items)
  }
  return items
}
