/** Small readers shared by the adapters: loose JSON in, typed values out (never throwing). */

import { collapseWhitespace } from '../core/preview'
import type { Json, Usage } from '../schema/common'
import type { SessionRecord } from '../schema/records'
import type { JsonObject } from './jsonl'

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

export const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

export const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0

/** ISO string or epoch milliseconds to epoch milliseconds; anything else is `undefined`. */
export function toMillis(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined
  if (typeof value !== 'string') return undefined
  const ms = Date.parse(value)
  return Number.isNaN(ms) || ms < 0 ? undefined : ms
}

/** A parsed JSON value is already JSON; this only narrows `unknown` (undefined becomes null). */
export const asJson = (value: unknown): Json => (value === undefined ? null : (value as Json))

/** The text blocks of a content value (a string, or an array of `{type: 'text', text}` blocks). */
export function textOf(content: unknown, textTypes: readonly string[] = ['text']): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const texts: string[] = []
  for (const block of content) {
    if (typeof block === 'string') texts.push(block)
    else if (isObject(block) && textTypes.includes(String(block.type)) && typeof block.text === 'string')
      texts.push(block.text)
  }
  return texts.join('\n')
}

/** The `{type: 'thinking', thinking}` blocks of a content array (Pi and Claude Code write them alike). */
export function thinkingOf(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content
    .filter((b): b is JsonObject => isObject(b) && b.type === 'thinking' && typeof b.thinking === 'string')
    .map((b) => b.thinking as string)
    .join('\n')
}

export function usage(input: number, output: number): Usage | undefined {
  return input === 0 && output === 0 ? undefined : { input, output }
}

const TITLE_CHARS = 100

/** A session title from a prompt: one line, at most 100 characters. */
export function titleFrom(text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  const line = collapseWhitespace(text.slice(0, TITLE_CHARS * 4))
  if (line === '') return undefined
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1)}…` : line
}

/** Cheap deterministic hash (FNV-1a, 52 bits) for ids of files that carry none. */
export function stableHash(text: string): string {
  let h1 = 0x811c9dc5
  let h2 = 0x01000193
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0
  }
  return h1.toString(16).padStart(8, '0') + (h2 & 0xfffff).toString(16).padStart(5, '0')
}

/** Visible messages with content of their own (reasoning-only and usage-only records do not count). */
export const countVisibleMessages = (
  records: readonly { type: string; visibility?: string; contentType?: string }[],
) =>
  records.filter(
    (r) =>
      r.type === 'message' &&
      r.visibility === 'visible' &&
      r.contentType !== 'reasoning' &&
      r.contentType !== 'usage',
  ).length

/** What an adapter knows of a file's session; `cwd` is kept only when non-empty. */
export interface SessionFacts {
  id: string
  provider: SessionRecord['provider']
  title: string
  cwd?: string
  startedAt?: number
  endedAt?: number
  messageCount: number
  formatVersion?: number
}

/** The `session` record of a whole-file import, with absent facts left out rather than undefined. */
export function sessionRecord(facts: SessionFacts): SessionRecord {
  const { id, provider, title, cwd, startedAt, endedAt, messageCount, formatVersion } = facts
  return {
    type: 'session',
    id,
    provider,
    title,
    ...(cwd ? { cwd } : {}),
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(endedAt === undefined ? {} : { endedAt }),
    messageCount,
    countMode: 'total',
    ...(formatVersion === undefined ? {} : { formatVersion }),
  }
}
