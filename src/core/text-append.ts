/**
 * Streamed text as appends (docs/decisions/0025): the feed sends a watcher the text a streaming
 * row gained since the version that watcher last received, and the receiver extends the row it
 * holds. Both sides are pure; the feed keeps, per watcher, the last version of each streaming
 * row it delivered, which is exactly what an in-order receiver holds.
 *
 * @example
 *   const append = textAppendOf(lastSent, next) // undefined: send `next` whole
 *   const row = append && applyTextAppend(held, append) // undefined: `held` is another version
 */
import type { MessagePart, SessionMessage, TextAppend } from '../schema/messages'
import { revisedRow } from './transcript'

type Keyed = Record<string, unknown>

/** Whether `a` and `b` agree on every field but `parts` and `updatedAt`. */
function sameBesidesParts(a: SessionMessage, b: SessionMessage): boolean {
  const x = a as unknown as Keyed
  const y = b as unknown as Keyed
  const keys = Object.keys(x)
  if (keys.length !== Object.keys(y).length) return false
  for (const key of keys) {
    if (key === 'parts' || key === 'updatedAt') continue
    if (x[key] !== y[key]) return false
  }
  return true
}

const isText = (
  part: MessagePart | undefined,
): part is Extract<MessagePart, { type: 'text' | 'reasoning' }> =>
  part?.type === 'text' || part?.type === 'reasoning'

/**
 * `next` as an append onto `previous` (the version the receiver holds), or undefined when it is
 * not one: another row, not streaming, a field besides the text changed, an earlier part changed,
 * or the text was not extended at its end.
 */
export function textAppendOf(
  previous: SessionMessage | undefined,
  next: SessionMessage,
): TextAppend | undefined {
  if (previous === undefined || previous === next || previous.id !== next.id) return undefined
  if (next.status !== 'streaming' || !sameBesidesParts(previous, next)) return undefined
  const before = previous.parts
  const after = next.parts
  const last = before.length - 1
  // Every part before the one that grows is the same object: a delta copies only the array.
  for (let i = 0; i < last; i++) if (after[i] !== before[i]) return undefined
  const base = { id: next.id, seq: next.seq, updatedAt: next.updatedAt }
  if (after.length === before.length) {
    const was = before[last]
    const now = after[last]
    if (!isText(was) || !isText(now) || was.type !== now.type) return undefined
    if (now.text.length <= was.text.length || !now.text.startsWith(was.text)) return undefined
    return {
      ...base,
      part: last,
      type: now.type,
      from: was.text.length,
      text: now.text.slice(was.text.length),
    }
  }
  if (after.length === before.length + 1) {
    if (last >= 0 && after[last] !== before[last]) return undefined
    const added = after[before.length]
    if (!isText(added) || added.text.length === 0) return undefined
    return { ...base, part: before.length, type: added.type, from: 0, text: added.text }
  }
  return undefined
}

/**
 * `held` with `append` applied; `held` itself when it already holds that text (a newer version
 * came by another way, e.g. a page read); undefined when `held` is a version the append does not
 * continue (the receiver must read the row again).
 */
export function applyTextAppend(held: SessionMessage, append: TextAppend): SessionMessage | undefined {
  if (held.id !== append.id) return undefined
  const part = held.parts[append.part]
  const end = append.from + append.text.length
  if (part === undefined) {
    if (append.part !== held.parts.length || append.from !== 0) return undefined
    const added: MessagePart = { type: append.type, text: append.text }
    return revisedRow(held, [...held.parts, added], held.status, append.updatedAt)
  }
  if (!isText(part) || part.type !== append.type) return undefined
  const length = part.text.length
  // Already there: the held row is this version or a later one (a page read it meanwhile).
  if (length >= end) return part.text.startsWith(append.text, append.from) ? held : undefined
  if (length < append.from) return undefined
  // The held text ends within the append (or where it starts): it continues from there.
  const have = length - append.from
  if (have > 0 && !part.text.endsWith(append.text.slice(0, have))) return undefined
  const parts = held.parts.slice()
  parts[append.part] = { type: part.type, text: part.text + append.text.slice(have) }
  return revisedRow(held, parts, held.status, Math.max(held.updatedAt, append.updatedAt))
}
