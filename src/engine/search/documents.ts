/**
 * What of a transcript row is searchable: the text of prompts and answers, reasoning, and the
 * input and output of tool calls (as JSON text), each its own field so they can be ranked
 * apart. Pure.
 */
import type { SessionMessage } from '../../schema/messages'

export const SEARCH_FIELDS = ['text', 'reasoning', 'toolInput', 'toolOutput'] as const
export type SearchField = (typeof SEARCH_FIELDS)[number]

/** Field weights: what a person wrote or read counts most, tool output least. */
export const FIELD_BOOST: Readonly<Record<SearchField, number>> = {
  text: 2,
  reasoning: 1,
  toolInput: 1,
  toolOutput: 0.4,
}

export interface SearchDocument extends Record<SearchField, string> {
  id: string
  sessionId: string
  seq: number
  turn: number
  role: SessionMessage['role']
  visibility: SessionMessage['visibility']
}

const jsonText = (value: unknown): string =>
  value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)

/** The row's searchable text, by field. */
export function fieldsOf(row: SessionMessage): Record<SearchField, string> {
  const text: string[] = []
  const reasoning: string[] = []
  const toolInput: string[] = []
  const toolOutput: string[] = []
  for (const part of row.parts) {
    if (part.type === 'text') text.push(part.text)
    else if (part.type === 'reasoning') reasoning.push(part.text)
    else if (part.type === 'file') text.push(part.name)
    else {
      toolInput.push(`${part.name} ${jsonText(part.input)}`)
      if (part.output !== undefined) toolOutput.push(jsonText(part.output))
    }
  }
  return {
    text: text.join('\n'),
    reasoning: reasoning.join('\n'),
    toolInput: toolInput.join('\n'),
    toolOutput: toolOutput.join('\n'),
  }
}

/**
 * A row is indexed once it has settled: no longer streaming and with no tool call waiting for
 * its result, so a row is indexed once, not on every delta. Hidden rows are never indexed.
 */
export function isSettled(row: SessionMessage): boolean {
  if (row.status === 'streaming') return false
  return !row.parts.some(
    (part) => part.type === 'tool' && (part.state === 'running' || part.state === 'awaiting-approval'),
  )
}

export function documentOf(row: SessionMessage): SearchDocument {
  return {
    id: row.id,
    sessionId: row.sessionId,
    seq: row.seq,
    turn: row.turn,
    role: row.role,
    visibility: row.visibility,
    ...fieldsOf(row),
  }
}
