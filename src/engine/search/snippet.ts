/**
 * The excerpt a hit shows: the first field of the row (by rank) that holds a matched term, cut
 * around the first match, with the offsets of every matched term inside the excerpt. Pure.
 */
import type { SessionMessage } from '../../schema/messages'
import { fieldsOf, SEARCH_FIELDS } from './documents'
import { indexTokens } from './terms'

/** Characters of context before the first match, and the excerpt's length. */
const BEFORE = 40
const LENGTH = 180
const ELLIPSIS = '…'

export interface Snippet {
  snippet: string
  ranges: [number, number][]
}

/** The excerpt of `row` for the matched (folded) `terms`; the row's start when no field has one. */
export function snippetOf(row: SessionMessage, terms: ReadonlySet<string>): Snippet {
  const fields = fieldsOf(row)
  for (const name of SEARCH_FIELDS) {
    const text = fields[name]
    if (text === '') continue
    const matched = indexTokens(text).filter((token) => terms.has(token.term))
    const first = matched[0]
    if (first === undefined) continue
    return excerpt(text, matched, Math.max(0, first.start - BEFORE))
  }
  const text = SEARCH_FIELDS.map((name) => fields[name]).find((t) => t !== '') ?? ''
  return excerpt(text, [], 0)
}

function excerpt(text: string, matched: readonly { start: number; end: number }[], from: number): Snippet {
  let start = from
  // Start at a word boundary when one is near, so the excerpt does not open mid-word.
  if (start > 0) {
    const space = text.lastIndexOf(' ', start)
    if (space >= 0 && start - space < 15) start = space + 1
  }
  const end = Math.min(text.length, start + LENGTH)
  const lead = start > 0 ? ELLIPSIS : ''
  const body = text.slice(start, end).replace(/\s+/g, (ws) => ' '.repeat(ws.length))
  const ranges: [number, number][] = []
  for (const token of matched) {
    if (token.start < start || token.end > end) continue
    const at = token.start - start + lead.length
    const last = ranges.at(-1)
    // Overlapping CJK pairs highlight as one stretch.
    if (last !== undefined && at <= last[1]) last[1] = Math.max(last[1], token.end - start + lead.length)
    else ranges.push([at, token.end - start + lead.length])
  }
  return { snippet: lead + body + (end < text.length ? ELLIPSIS : ''), ranges }
}
