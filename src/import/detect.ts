/**
 * Recognizes a provider's session file from its first readable lines.
 *
 * @example
 *   detectFormat('{"type":"session","version":3,"id":"…"}\n…') // 'pi'
 */
import type { Provider } from '../schema/session'
import { type JsonLine, type JsonObject, parseJsonLines } from './jsonl'
import { isSessionlineHeader } from './sessionline'

const CODEX_TYPES = new Set(['session_meta', 'turn_context', 'response_item', 'event_msg', 'compacted'])
const CLAUDE_TYPES = new Set(['user', 'assistant', 'system', 'summary'])
/** How many readable lines are looked at before giving up. */
const PROBE_LINES = 25

function formatOfLine(value: JsonObject, first: boolean): Provider | undefined {
  const type = value.type
  if (first && type === 'session' && typeof value.id === 'string') return 'pi'
  if (typeof type === 'string' && CODEX_TYPES.has(type) && 'payload' in value) return 'codex'
  if (typeof type === 'string' && CLAUDE_TYPES.has(type)) {
    if ('uuid' in value || 'leafUuid' in value || 'sessionId' in value || 'parentUuid' in value)
      return 'claude'
  }
  return undefined
}

/** The format of already parsed lines (see `detectFormat`). */
export function detectLinesFormat(lines: readonly JsonLine[]): Provider | undefined {
  const probe = lines.slice(0, PROBE_LINES)
  for (const [i, { value }] of probe.entries()) {
    const format = formatOfLine(value, i === 0)
    if (format) return format
  }
  return undefined
}

/** `'pi' | 'claude' | 'codex'` when the text looks like that provider's session file, else `undefined`. */
export function detectFormat(text: string): Provider | undefined {
  // Only the head is parsed: detection must stay cheap on a large file.
  let end = 0
  for (let n = 0; n < PROBE_LINES * 2 && end !== -1; n++) end = text.indexOf('\n', end + 1)
  const head = end === -1 ? text : text.slice(0, end)
  try {
    return detectLinesFormat(parseJsonLines(head).lines)
  } catch {
    return undefined
  }
}

/**
 * `'sessionline'` when `firstLine` is the header of sessionline's own export (any version: a
 * version this release does not read is refused by name, not taken for another tool's file).
 */
export function detectExport(firstLine: string): 'sessionline' | undefined {
  return isSessionlineHeader(firstLine) ? 'sessionline' : undefined
}
