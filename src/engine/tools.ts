/**
 * Demo tools for the scripted provider and the playground: small, deterministic (given the
 * injected clock) and abortable, so tool steps can be shown and tested without a network.
 *
 * @example
 *   const tools = createDemoTools({ now: () => Date.UTC(2026, 0, 1) })
 *   await tools.calculator.run({ expression: '6 * (3 + 4)' }, { signal, sessionId, callId }) // { value: 42 }
 */

import { z } from 'zod'
import type { Json } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import type { Tool, Tools } from './provider'
import { abortableDelay, throwIfAborted } from './providers/abort'

export interface DemoToolsOptions {
  /** Clock the `clock` tool reads (defaults to `Date.now`). */
  now?: () => number
  /** Simulated latency of every tool call, in ms (0: answer at once). */
  latencyMs?: number
}

const ClockInput = z.strictObject({})
const CalculatorInput = z.strictObject({ expression: z.string().min(1).max(200) })
const SearchNotesInput = z.strictObject({ query: z.string().min(1).max(200) })

/** The notes `search_notes` searches: a tiny glossary of this library's ideas. */
const NOTES: readonly { title: string; text: string }[] = [
  { title: 'Inbox', text: 'Admitted input waits in the inbox as a durable receipt until it is promoted.' },
  {
    title: 'Steer',
    text: 'A steer joins the running turn at its next safe boundary, before the next model call.',
  },
  {
    title: 'Queue',
    text: 'A queued input waits for the session to go idle and then opens a turn of its own.',
  },
  {
    title: 'Promote',
    text: 'Promotion moves inputs into the transcript in one transaction, in admission order.',
  },
  { title: 'Turn outline', text: 'One entry per turn: the first prompt and the final response, clipped.' },
  { title: 'Visibility', text: 'Rows are visible, inactive (superseded) or hidden (transport only).' },
  {
    title: 'Recovery',
    text: 'A turn left open by a closed tab is ended as interrupted; streamed text stays.',
  },
]

export function createDemoTools(options: DemoToolsOptions = {}): Tools {
  const now = options.now ?? Date.now
  const latencyMs = options.latencyMs ?? 0

  async function settle(signal: AbortSignal, name: string): Promise<void> {
    throwIfAborted(signal, `${name} tool call`)
    if (latencyMs > 0) await abortableDelay(latencyMs, signal, `${name} tool call`)
  }

  const clock: Tool = {
    description: 'Tells the current date and time (UTC).',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    async run(input, { signal }) {
      parseOrThrow(ClockInput, input, 'clock input')
      await settle(signal, 'clock')
      const epochMs = now()
      return { iso: new Date(epochMs).toISOString(), epochMs }
    },
  }

  const calculator: Tool = {
    description: 'Evaluates an arithmetic expression with + - * / and parentheses.',
    parameters: {
      type: 'object',
      properties: { expression: { type: 'string', description: 'e.g. "6 * (3 + 4)"' } },
      required: ['expression'],
      additionalProperties: false,
    },
    async run(input, { signal }) {
      const { expression } = parseOrThrow(CalculatorInput, input, 'calculator input')
      await settle(signal, 'calculator')
      return { expression, value: evaluateArithmetic(expression) }
    },
  }

  const searchNotes: Tool = {
    description: 'Searches a few short notes about sessions, turns and the inbox.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' } },
      required: ['query'],
      additionalProperties: false,
    },
    async run(input, { signal }) {
      const { query } = parseOrThrow(SearchNotesInput, input, 'search_notes input')
      await settle(signal, 'search_notes')
      return { query, matches: searchNotesFor(query) }
    },
  }

  return { clock, calculator, search_notes: searchNotes }
}

function searchNotesFor(query: string): Json[] {
  const words = query
    .toLowerCase()
    .split(/\W+/)
    .filter((w) => w.length > 2)
  const scored = NOTES.map((note) => {
    const haystack = `${note.title} ${note.text}`.toLowerCase()
    return { note, score: words.filter((w) => haystack.includes(w)).length }
  })
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, 3)
    .map(({ note }) => ({ title: note.title, text: note.text }))
}

/**
 * Evaluates `+ - * /`, unary minus, parentheses and decimal numbers. A small recursive-descent
 * parser rather than `eval`/`Function`, so tool input can never run code.
 */
export function evaluateArithmetic(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|\.\d+|[-+*/()]|\S/g) ?? []
  let at = 0
  const fail = (why: string): never => {
    throw new SessionlineError('invalid_input', `Cannot evaluate "${expression}": ${why}`)
  }
  const peek = () => tokens[at]
  const next = () => tokens[at++]

  function primary(): number {
    const token = next()
    if (token === undefined) return fail('unexpected end')
    if (token === '-') return -primary()
    if (token === '+') return primary()
    if (token === '(') {
      const value = sum()
      if (next() !== ')') fail('missing )')
      return value
    }
    const value = Number(token)
    if (!Number.isFinite(value)) fail(`unexpected "${token}"`)
    return value
  }
  function product(): number {
    let value = primary()
    while (peek() === '*' || peek() === '/') {
      const op = next()
      const right = primary()
      if (op === '/' && right === 0) fail('division by zero')
      value = op === '*' ? value * right : value / right
    }
    return value
  }
  function sum(): number {
    let value = product()
    while (peek() === '+' || peek() === '-') {
      const op = next()
      const right = product()
      value = op === '+' ? value + right : value - right
    }
    return value
  }

  const value = sum()
  if (at < tokens.length) fail(`unexpected "${tokens[at]}"`)
  return value
}
