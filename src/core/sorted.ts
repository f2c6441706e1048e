/**
 * The one binary search of the library: in an array sorted ascending by a number key, the first
 * index whose key is at least `value` (`items.length` when none is). Rows by seq, turns by
 * number, positions: every caller passes the key it sorts by.
 *
 * @example
 *   firstAtLeast(rows, (row) => row.seq, 42) // index of the first row with seq >= 42
 */
export function firstAtLeast<T>(items: readonly T[], keyOf: (item: T) => number, value: number): number {
  let lo = 0
  let hi = items.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keyOf(items[mid]!) < value) lo = mid + 1
    else hi = mid
  }
  return lo
}
