/**
 * Orders a file's records into one transcript order in which the records the provider would
 * send to the model (`context`) appear exactly in context order, and every other record sits
 * where the file put it relative to them.
 *
 * Each record has a position (`pos`, usually its place in the file). A context record takes
 * the slot of its index in `context`; any other record goes after the context records whose
 * position precedes its own (ties keep file order). When the context is in file order (the
 * usual case) this is plain file order.
 */
import { firstAtLeast } from '../core/sorted'

export interface Positioned {
  key: string
  pos: number
}

const countBelow = (sorted: readonly number[], value: number): number => firstAtLeast(sorted, (n) => n, value)

/** Returns the keys of `items` in transcript order. `context` lists keys of `items`. */
export function transcriptOrder(items: readonly Positioned[], context: readonly string[]): string[] {
  const contextIndex = new Map<string, number>()
  context.forEach((key, i) => {
    contextIndex.set(key, i)
  })
  const posOf = new Map(items.map((item) => [item.key, item.pos]))
  const contextPositions = context
    .map((key) => posOf.get(key) ?? Number.POSITIVE_INFINITY)
    .sort((a, b) => a - b)
  const keyed = items.map((item) => {
    const i = contextIndex.get(item.key)
    const slot = i === undefined ? 2 * countBelow(contextPositions, item.pos) : 2 * i + 1
    return { key: item.key, slot, pos: item.pos }
  })
  keyed.sort((a, b) => a.slot - b.slot || a.pos - b.pos)
  return keyed.map((k) => k.key)
}
