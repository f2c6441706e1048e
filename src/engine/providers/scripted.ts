/**
 * A deterministic model: the same seed and the same transcript give the same answer, streamed a
 * word at a time. It sometimes calls a tool first (per `toolRate`) and answers from the tool's
 * result in the next step, so demos and tests exercise multi-step turns without a network.
 *
 * @example
 *   const provider = createScriptedProvider({ kind: 'scripted', seed: 7, wordDelayMs: 0 })
 *   for await (const chunk of provider(request)) console.log(chunk)
 */

import type { Json, Usage } from '../../schema/common'
import { parseOrThrow } from '../../schema/errors'
import type { SessionMessage } from '../../schema/messages'
import { ScriptedProviderConfig } from '../../schema/provider'
import type { ModelProvider, ProviderChunk, ProviderRequest, ToolSpec } from '../provider'
import { abortableDelay, throwIfAborted } from './abort'

type ScriptedSettings = Required<Omit<ScriptedProviderConfig, 'kind'>>

export function createScriptedProvider(config: ScriptedProviderConfig = { kind: 'scripted' }): ModelProvider {
  const { seed, wordDelayMs, toolRate } = parseOrThrow(
    ScriptedProviderConfig,
    config,
    'scripted provider config',
  )
  const settings: ScriptedSettings = { seed, wordDelayMs, toolRate }
  return (request) => streamScripted(request, settings)
}

async function* streamScripted(request: ProviderRequest, settings: ScriptedSettings) {
  const { signal } = request
  throwIfAborted(signal, 'model request')
  for (const chunk of planScriptedStep(request, settings)) {
    const streamed = chunk.type === 'text' || chunk.type === 'reasoning'
    if (streamed && settings.wordDelayMs > 0)
      await abortableDelay(settings.wordDelayMs, signal, 'model request')
    else throwIfAborted(signal, 'model request')
    yield chunk
  }
}

/**
 * The whole response of one step, decided up front from the seed and the request (pure, so
 * determinism is a property of this function alone).
 */
export function planScriptedStep(
  request: Pick<ProviderRequest, 'turn' | 'step' | 'context' | 'tools'>,
  settings: ScriptedSettings,
): ProviderChunk[] {
  const { context, tools } = request
  const lastUserAt = context.findLastIndex((row) => row.role === 'user')
  const prompt = lastUserAt >= 0 ? textOf(context[lastUserAt]!) : ''
  const random = mulberry32(
    hashString(`${settings.seed}|${request.turn}|${request.step}|${context.length}|${prompt}`),
  )
  const toolResults = context
    .slice(lastUserAt + 1)
    .flatMap((row) => (row.role === 'assistant' ? row.parts : []))
    .filter((part) => part.type === 'tool')

  const chunks: ProviderChunk[] = []
  const outputWords = (text: string, type: 'text' | 'reasoning') => {
    for (const word of text.match(/\S+\s*/g) ?? []) chunks.push({ type, text: word })
  }

  if (random() < 0.3)
    outputWords(`Thinking about "${clip(prompt, 40)}". ${pick(random, ASIDES)}`, 'reasoning')

  if (toolResults.length === 0 && tools.length > 0 && random() < settings.toolRate) {
    const chosen = chooseTools(random, tools)
    outputWords(`Let me check with ${chosen.map((t) => `\`${t.name}\``).join(' and ')} first.`, 'text')
    chosen.forEach((tool, i) => {
      chunks.push({
        type: 'tool-call',
        callId: `call_${request.turn}_${request.step}_${i + 1}`,
        name: tool.name,
        input: toolInput(tool.name, prompt, random),
      })
    })
    chunks.push({ type: 'finish', finish: 'tool-calls', usage: usageOf(context, chunks) })
    return chunks
  }

  const opening =
    toolResults.length > 0
      ? toolResults.map((part) => describeToolResult(part.name, part.output, part.isError)).join(' ')
      : `You said: "${clip(prompt, 60)}".`
  outputWords(composeAnswer(random, opening), 'text')
  chunks.push({ type: 'finish', finish: 'stop', usage: usageOf(context, chunks) })
  return chunks
}

function composeAnswer(random: () => number, opening: string): string {
  const paragraphs = [`${opening} ${pick(random, SENTENCES)}`]
  const extra = Math.floor(random() * 3)
  for (let i = 0; i < extra; i++) {
    if (random() < 0.35) {
      const items = 2 + Math.floor(random() * 2)
      paragraphs.push(Array.from({ length: items }, () => `- ${pick(random, POINTS)}`).join('\n'))
    } else {
      paragraphs.push(`${pick(random, SENTENCES)} ${pick(random, SENTENCES)}`)
    }
  }
  return paragraphs.join('\n\n')
}

function chooseTools(random: () => number, tools: readonly ToolSpec[]): ToolSpec[] {
  const first = tools[Math.floor(random() * tools.length)]!
  if (tools.length < 2 || random() >= 0.25) return [first]
  const others = tools.filter((t) => t !== first)
  return [first, others[Math.floor(random() * others.length)]!]
}

function toolInput(name: string, prompt: string, random: () => number): Json {
  switch (name) {
    case 'calculator': {
      const written = prompt.match(/[\d.(][\d\s.()]*[-+*/][\d\s.()+\-*/]*[\d)]/)?.[0]
      if (written) return { expression: written.trim() }
      return { expression: `${2 + Math.floor(random() * 98)} * ${2 + Math.floor(random() * 98)}` }
    }
    case 'search_notes': {
      const words = prompt.split(/\W+/).filter((w) => w.length > 2)
      const longest = words.reduce((best, w) => (w.length > best.length ? w : best), '')
      return { query: longest || 'inbox' }
    }
    default:
      return {}
  }
}

function describeToolResult(name: string, output: Json | undefined, isError: boolean | undefined): string {
  if (isError || output === undefined) return `The \`${name}\` tool failed, so I will answer without it.`
  if (name === 'calculator' && isRecord(output) && typeof output.value === 'number') {
    return `The calculator says ${String(output.expression)} = ${output.value}.`
  }
  if (name === 'clock' && isRecord(output) && typeof output.iso === 'string') {
    return `The clock reads ${output.iso}.`
  }
  if (name === 'search_notes' && isRecord(output) && Array.isArray(output.matches)) {
    const titles = output.matches.flatMap((m) =>
      isRecord(m) && typeof m.title === 'string' ? [m.title] : [],
    )
    return titles.length > 0 ? `I found notes on ${titles.join(', ')}.` : 'The notes had nothing on that.'
  }
  return `The \`${name}\` tool answered.`
}

function usageOf(context: readonly SessionMessage[], chunks: readonly ProviderChunk[]): Usage {
  const contextChars = context.reduce((n, row) => n + textOf(row).length, 0)
  const output = chunks.filter((c) => c.type !== 'finish').length
  return { input: Math.max(1, Math.ceil(contextChars / 4)), output }
}

function textOf(row: SessionMessage): string {
  return row.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
}

function clip(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}

function isRecord(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!
}

/** FNV-1a: a stable 32-bit hash of the step's identity, to seed the generator. */
function hashString(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/** A tiny seeded PRNG; `Math.random` would break "same seed, same answers". */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const SENTENCES = [
  'The short answer is that it depends on what happens at the next boundary.',
  'Every input gets a durable receipt before the model ever sees it.',
  'I would start small, measure, and only then make it clever.',
  'Ordering comes from sequence numbers, never from clocks.',
  'A queued message waits politely until the current turn is over.',
  'Steering mid-turn works best with short, specific corrections.',
  'Nothing here needs a server; the browser keeps the whole log.',
  'That is a reasonable plan, with one caveat about timing.',
  'If the tab closes mid-sentence, the text streamed so far survives.',
  'The outline keeps one line per turn, so long sessions stay navigable.',
  'Let us keep the moving parts few and the names honest.',
  'Tool results land in the transcript before the next model call.',
] as const

const POINTS = [
  'admit first, promote later',
  'one transaction per write',
  'pending input is never dropped',
  'the identity gate keeps renders cheap',
  'streamed text is flushed in small batches',
  'imported sessions read like native ones',
] as const

const ASIDES = [
  'The user probably wants a concise answer.',
  'A tool might help here, or might not.',
  'Keep it short and concrete.',
  'Mention the inbox only if it matters.',
] as const
