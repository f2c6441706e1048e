/**
 * How cached fold state is laid out in the `projections` table. A state is one row, except that
 * a chunked list in it (the turn outline, src/core/chunked-list.ts) or a long array is cut into
 * chunk rows: a change near its end then rewrites one chunk, not the whole list, and a long
 * session's appends stay as cheap as a short one's. A list's chunks are compared by identity (a
 * list never mutates a chunk), so finding what to write costs one comparison per chunk.
 *
 * A list may be decoded without its earlier chunks (`tailOnly`): they stay unloaded (see
 * src/core/chunked-list.ts) and are read when someone asks for them (`listChunkName`); an
 * unloaded chunk is never written, since what the store holds for it is what it holds.
 *
 * @example
 *   const rows = encodeState('s', 'turnOutline', 1, 42, state, previousState)
 *   const states = decodeStates(await db.projections.where('[sessionId+name]')…toArray())
 */
import { type ChunkedList, isChunkedList, LIST_CHUNK, listOfChunks } from '../core/chunked-list'
import type { ProjectionRow } from './db'

/** Elements per chunk row; arrays up to this length stay inline. Lists keep their own chunks. */
export const CHUNK_SIZE = LIST_CHUNK

/** What stands in the head row for a chunked array (or, with `list`, a chunked list). */
interface ChunkedArray {
  $chunked: number
  length: number
  list?: true
}

/**
 * Arrays and lists known to be stored chunked, so an unchanged chunk of theirs need not be
 * written again (one stored inline, or by other means, has no chunk rows to keep).
 */
const storedChunked = new WeakSet<object>()

/**
 * Digits of a chunk's index in its row name. Zero-padded, names sort as their indexes do, so a
 * range read in reverse finds a list's last chunks without its head's count (schema version 6
 * renamed the rows earlier releases stored as `turnOutline#entries#12`). 10^8 chunks of 256.
 */
const INDEX_DIGITS = 8

const chunkPrefix = (name: string, key: string) => `${name}#${key}#`
const chunkName = (name: string, key: string, index: number) =>
  chunkPrefix(name, key) + String(index).padStart(INDEX_DIGITS, '0')
/** The row name of chunk `index` of the list (or chunked array) `key` in projection `name`. */
export const listChunkName = chunkName

/** The lowest and highest row names a chunk of `key` in projection `name` can have. */
export function chunkNameRange(name: string, key: string): [string, string] {
  const prefix = chunkPrefix(name, key)
  return [prefix, `${prefix}\uffff`]
}

/**
 * The name a chunk row an earlier release stored under `name` (`turnOutline#entries#12`) has
 * today, or undefined when `name` is no chunk row or is named as today already.
 */
export function renamedChunk(name: string): string | undefined {
  const match = /^(.+)#([^#]+)#(\d+)$/.exec(name)
  if (!match || match[3]!.length === INDEX_DIGITS) return undefined
  return chunkName(match[1]!, match[2]!, Number(match[3]))
}
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
    const before = isRecord(previous) ? previous[key] : undefined
    if (isChunkedList(value)) {
      rows.push(...listChunkRows(sessionId, name, key, version, throughSeq, value, before))
      head[key] = { $chunked: value.chunks.length, length: value.length, list: true } satisfies ChunkedArray
      storedChunked.add(value)
      continue
    }
    if (!Array.isArray(value) || value.length <= CHUNK_SIZE) continue
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

function listChunkRows(
  sessionId: string,
  name: string,
  key: string,
  version: number,
  throughSeq: number,
  list: ChunkedList<unknown>,
  before: unknown,
): ProjectionRow[] {
  const reusable = isChunkedList(before) && storedChunked.has(before) ? before : undefined
  const rows: ProjectionRow[] = []
  list.chunks.forEach((chunk, index) => {
    // An unloaded chunk came from the store, full and unchanged since.
    if (chunk === undefined || reusable?.chunks[index] === chunk) return
    rows.push({ sessionId, name: chunkName(name, key, index), version, throughSeq, state: chunk })
  })
  return rows
}

/** Chunks of a list a `tailOnly` read takes: its last two, so they hold at least LIST_CHUNK items. */
export const TAIL_CHUNKS = 2

/**
 * The chunk rows a head row needs: every chunk of a chunked array, and of a chunked list all
 * (or with `tailOnly`, its last TAIL_CHUNKS: what a fold step touches, and a reader's newest
 * slice of up to LIST_CHUNK items without another read).
 */
export function chunkNamesOf(head: ProjectionRow, tailOnly: boolean): string[] {
  if (!isRecord(head.state)) return []
  const names: string[] = []
  for (const [key, value] of Object.entries(head.state)) {
    if (!isChunked(value)) continue
    const first = value.list && tailOnly ? Math.max(0, value.$chunked - TAIL_CHUNKS) : 0
    for (let index = first; index < value.$chunked; index++) names.push(chunkName(head.name, key, index))
  }
  return names
}

/**
 * Head rows by name with their chunked arrays put back together (chunk rows are consumed). A
 * chunked list whose earlier chunk rows are not among `rows` keeps them unloaded; its last
 * chunk, and every chunk of a chunked array, must be there.
 */
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
      const chunks: (unknown[] | undefined)[] = []
      for (let index = 0; index < value.$chunked; index++) {
        const chunk = byName.get(chunkName(row.name, key, index))?.state
        const mayBeUnloaded = value.list && index < value.$chunked - 1
        if (!Array.isArray(chunk) && !mayBeUnloaded)
          throw new Error(`projection ${row.name}: chunk ${key}#${index} is missing`)
        chunks.push(Array.isArray(chunk) ? chunk : undefined)
      }
      const decoded = value.list ? listOfChunks(chunks) : (chunks as unknown[][]).flat()
      if (decoded.length !== value.length)
        throw new Error(`projection ${row.name}: ${key} has ${decoded.length} of ${value.length} items`)
      state ??= { ...row.state }
      state[key] = decoded
      storedChunked.add(decoded)
    }
    out.set(row.name, state ? { ...row, state } : row)
  }
  return out
}
