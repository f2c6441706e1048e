/**
 * How cached fold state is laid out in the `projections` table. A state is one row, except that
 * a long array in it (the outline of a 10,000-turn session) is cut into chunk rows: a change
 * near its end then rewrites one chunk, not the whole array, and a long session's appends stay
 * as cheap as a short one's.
 *
 * @example
 *   const rows = encodeState('s', 'turnOutline', 1, 42, state, previousState)
 *   const states = decodeStates(await db.projections.where('[sessionId+name]')…toArray())
 */
import type { ProjectionRow } from './db'

/** Elements per chunk row; arrays up to this length stay inline. */
export const CHUNK_SIZE = 256

/** What stands in the head row for a chunked array. */
interface ChunkedArray {
  $chunked: number
  length: number
}

/** Arrays known to be stored chunked, so an unchanged chunk of theirs need not be written again. */
const storedChunked = new WeakSet<readonly unknown[]>()

const chunkName = (name: string, key: string, index: number) => `${name}#${key}#${index}`
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
const isChunked = (value: unknown): value is ChunkedArray =>
  isRecord(value) && typeof value.$chunked === 'number' && typeof value.length === 'number'

function sameChunk(next: readonly unknown[], previous: readonly unknown[], start: number): boolean {
  const end = Math.min(start + CHUNK_SIZE, next.length)
  if (Math.min(start + CHUNK_SIZE, previous.length) !== end) return false
  for (let i = start; i < end; i++) if (!Object.is(next[i], previous[i])) return false
  return true
}

/**
 * The rows that store `state`. With `previous` (the state these rows replace, as last stored),
 * chunks whose elements are all identical to the previous ones are left out: they are stored.
 */
export function encodeState(
  sessionId: string,
  name: string,
  version: number,
  throughSeq: number,
  state: unknown,
  previous?: unknown,
): ProjectionRow[] {
  if (!isRecord(state)) return [{ sessionId, name, version, throughSeq, state }]
  const head: Record<string, unknown> = { ...state }
  const rows: ProjectionRow[] = []
  for (const [key, value] of Object.entries(state)) {
    if (!Array.isArray(value) || value.length <= CHUNK_SIZE) continue
    const before = isRecord(previous) ? previous[key] : undefined
    const reusable = Array.isArray(before) && storedChunked.has(before) ? before : undefined
    const chunks = Math.ceil(value.length / CHUNK_SIZE)
    for (let index = 0; index < chunks; index++) {
      const start = index * CHUNK_SIZE
      if (reusable && sameChunk(value, reusable, start)) continue
      rows.push({
        sessionId,
        name: chunkName(name, key, index),
        version,
        throughSeq,
        state: value.slice(start, start + CHUNK_SIZE),
      })
    }
    head[key] = { $chunked: chunks, length: value.length } satisfies ChunkedArray
    storedChunked.add(value)
  }
  rows.unshift({ sessionId, name, version, throughSeq, state: head })
  return rows
}

/** Head rows by name with their chunked arrays put back together (chunk rows are consumed). */
export function decodeStates(rows: readonly ProjectionRow[]): Map<string, ProjectionRow> {
  const byName = new Map(rows.map((row) => [row.name, row]))
  const out = new Map<string, ProjectionRow>()
  for (const row of rows) {
    if (row.name.includes('#')) continue
    if (!isRecord(row.state)) {
      out.set(row.name, row)
      continue
    }
    let state: Record<string, unknown> | undefined
    for (const [key, value] of Object.entries(row.state)) {
      if (!isChunked(value)) continue
      const parts: unknown[] = []
      for (let index = 0; index < value.$chunked; index++) {
        const chunk = byName.get(chunkName(row.name, key, index))?.state
        if (!Array.isArray(chunk)) throw new Error(`projection ${row.name}: chunk ${key}#${index} is missing`)
        parts.push(...chunk)
      }
      if (parts.length !== value.length)
        throw new Error(`projection ${row.name}: ${key} has ${parts.length} of ${value.length} items`)
      state ??= { ...row.state }
      state[key] = parts
      storedChunked.add(parts)
    }
    out.set(row.name, state ? { ...row, state } : row)
  }
  return out
}
