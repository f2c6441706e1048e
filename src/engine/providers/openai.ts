/**
 * An OpenAI-compatible chat-completions provider: streams server-sent events over `fetch`, so a
 * playground can talk to api.openai.com or a local server (Ollama, llama.cpp, vLLM, LM Studio).
 *
 * @example
 *   const provider = createOpenAIProvider({ kind: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen3' })
 */

import { createParser } from 'eventsource-parser'
import { z } from 'zod'
import { toBase64 } from '../../core/base64'
import type { FilePart } from '../../schema/attachments'
import type { Json, Usage } from '../../schema/common'
import { parseOrThrow, SessionlineError } from '../../schema/errors'
import type { SessionMessage, ToolPart } from '../../schema/messages'
import { OpenAIProviderConfig } from '../../schema/provider'
import type { ModelProvider, ProviderChunk, ProviderRequest, ToolSpec } from '../provider'
import { abortError } from './abort'
import { type AttachedFiles, attachedFiles } from './attached-files'

export interface OpenAIProviderOptions {
  /** The `fetch` to use (defaults to the global one). */
  fetch?: typeof fetch
}

/** A part of a user message with files: its text, an image (a data URL) or another file. */
export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'file'; file: { filename: string; file_data: string } }

/** A chat-completions message, as the API takes it. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string }
export interface ChatToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export function createOpenAIProvider(
  config: OpenAIProviderConfig,
  options: OpenAIProviderOptions = {},
): ModelProvider {
  const settings = parseOrThrow(OpenAIProviderConfig, config, 'openai provider config')
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis)
  return (request) => streamChat(request, settings, fetchImpl)
}

type Settings = z.infer<typeof OpenAIProviderConfig>

async function* streamChat(request: ProviderRequest, settings: Settings, fetchImpl: typeof fetch) {
  const { signal } = request
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/chat/completions`
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
  }
  if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`

  const files = await attachedFiles(request)
  if (signal.aborted) throw abortError('model request')
  let response: Response
  try {
    response = await fetchImpl(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(chatRequestBody(request, settings, files)),
      signal,
    })
  } catch (error) {
    if (signal.aborted) throw abortError('model request')
    throw providerError(`Could not reach the model server at ${url}: ${messageOf(error)}`, { url }, error)
  }
  if (!response.ok) {
    const body = await response.text().catch(() => '')
    throw providerError(
      `The model server answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${
        body ? `: ${snippet(body)}` : ''
      }`,
      { status: response.status, body: snippet(body, 2000) },
    )
  }

  const assembler = createChatAssembler(request)
  const contentType = response.headers.get('content-type') ?? ''
  if (contentType.includes('application/json')) {
    // A server that ignores `stream: true` answers with one completion object.
    const text = await response.text().catch((error) => {
      if (signal.aborted) throw abortError('model request')
      throw providerError(`The response broke off: ${messageOf(error)}`, undefined, error)
    })
    yield* assembler.acceptCompletion(text)
    yield* assembler.finish()
    return
  }
  if (!response.body) throw providerError('The model server sent an empty response')

  const pending: string[] = []
  const parser = createParser({ onEvent: (event) => pending.push(event.data) })
  const decoder = new TextDecoder()
  const reader = response.body.getReader()
  try {
    while (!assembler.done) {
      let read: ReadableStreamReadResult<Uint8Array>
      try {
        read = await reader.read()
      } catch (error) {
        if (signal.aborted) throw abortError('model request')
        throw providerError(`The response stream broke off: ${messageOf(error)}`, undefined, error)
      }
      if (signal.aborted) throw abortError('model request')
      if (read.done) {
        parser.feed(decoder.decode())
        parser.reset({ consume: true })
      } else {
        parser.feed(decoder.decode(read.value, { stream: true }))
      }
      for (const data of pending.splice(0)) yield* assembler.acceptEvent(data)
      if (read.done) break
    }
    yield* assembler.finish()
  } finally {
    // Stop the body when we leave early (abort, error, [DONE]) so the connection is released.
    reader.cancel().catch(() => {})
  }
}

/** The request body: the transcript as chat messages, the tools as functions, usage requested. */
export function chatRequestBody(
  request: Pick<ProviderRequest, 'context' | 'tools'>,
  settings: Pick<Settings, 'model' | 'system' | 'temperature'>,
  files?: AttachedFiles,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: settings.model,
    messages: toChatMessages(request.context, settings.system, files),
    stream: true,
    stream_options: { include_usage: true },
  }
  if (request.tools.length > 0) body.tools = request.tools.map(toChatTool)
  if (settings.temperature !== undefined) body.temperature = settings.temperature
  return body
}

function toChatTool(tool: ToolSpec) {
  return {
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.parameters ?? { type: 'object', properties: {} },
    },
  }
}

const dataUrl = (part: FilePart, bytes: Uint8Array) => `data:${part.mediaType};base64,${toBase64(bytes)}`

/** A file part as chat content: images as `image_url`, other files as `file`, both as data URLs. */
function fileContent(part: FilePart, files: AttachedFiles | undefined): ChatContentPart {
  const bytes = files?.get(part.attachmentId)
  if (!bytes) return { type: 'text', text: `[attachment ${part.name} (${part.mediaType}) is not available]` }
  return part.mediaType.startsWith('image/')
    ? { type: 'image_url', image_url: { url: dataUrl(part, bytes) } }
    : { type: 'file', file: { filename: part.name, file_data: dataUrl(part, bytes) } }
}

/**
 * Maps the model-visible transcript to chat messages: user and assistant text, each assistant
 * tool call followed by its result as a `tool` message (every call gets an answer, since the API
 * rejects a call left unanswered). Reasoning is not sent back. A user row with files becomes
 * content parts: its text, then each file (`files` holds their bytes, sent as data URLs).
 */
export function toChatMessages(
  context: readonly SessionMessage[],
  system?: string,
  files?: AttachedFiles,
): ChatMessage[] {
  const messages: ChatMessage[] = []
  if (system) messages.push({ role: 'system', content: system })
  for (const row of context) {
    if (row.visibility !== 'visible') continue
    const text = row.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
    switch (row.role) {
      case 'user': {
        const attached = row.parts.filter((part): part is FilePart => part.type === 'file')
        if (attached.length === 0) messages.push({ role: 'user', content: text })
        else
          messages.push({
            role: 'user',
            content: [
              ...(text === '' ? [] : [{ type: 'text' as const, text }]),
              ...attached.map((part) => fileContent(part, files)),
            ],
          })
        break
      }
      case 'system':
        messages.push({ role: 'system', content: text })
        break
      case 'summary':
        messages.push({ role: 'system', content: `Summary of the earlier conversation:\n${text}` })
        break
      case 'assistant': {
        const calls = row.parts.filter((part): part is ToolPart => part.type === 'tool')
        if (text === '' && calls.length === 0) break
        messages.push(
          calls.length === 0
            ? { role: 'assistant', content: text }
            : {
                role: 'assistant',
                content: text === '' ? null : text,
                tool_calls: calls.map((call) => ({
                  id: call.callId,
                  type: 'function',
                  function: { name: call.name, arguments: JSON.stringify(call.input) },
                })),
              },
        )
        for (const call of calls) {
          messages.push({ role: 'tool', tool_call_id: call.callId, content: toolResultText(call) })
        }
        break
      }
    }
  }
  return messages
}

function toolResultText(call: ToolPart): string {
  if (call.output === undefined) return 'The tool call was interrupted before it returned.'
  const text = typeof call.output === 'string' ? call.output : JSON.stringify(call.output)
  return call.isError ? `Error: ${text}` : text
}

// --- the response side -------------------------------------------------------------------

const ToolCallDelta = z.looseObject({
  index: z.number().int().nonnegative().optional(),
  id: z.string().nullish(),
  function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
})
const ChatDelta = z.looseObject({
  content: z.string().nullish(),
  reasoning_content: z.string().nullish(),
  reasoning: z.string().nullish(),
  tool_calls: z.array(ToolCallDelta).nullish(),
})
const ChatUsage = z.looseObject({ prompt_tokens: z.number(), completion_tokens: z.number() })
const ChatError = z.looseObject({ message: z.string().optional() })
/** One streamed chunk; a non-streamed completion carries `message` where a chunk carries `delta`. */
const ChatChunk = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        index: z.number().optional(),
        delta: ChatDelta.nullish(),
        message: ChatDelta.nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: ChatUsage.nullish(),
  error: z.union([ChatError, z.string()]).nullish(),
})
type ChatChunk = z.infer<typeof ChatChunk>

interface PartialCall {
  id: string
  name: string
  arguments: string
}

/** Turns chat chunks into provider chunks: text at once, tool calls assembled by index, then finish. */
function createChatAssembler(request: Pick<ProviderRequest, 'turn' | 'step'>) {
  const calls = new Map<number, PartialCall>()
  let finishReason: string | undefined
  let usage: Usage | undefined
  let done = false

  function* accept(chunk: ChatChunk): Generator<ProviderChunk> {
    if (chunk.error) {
      const message = typeof chunk.error === 'string' ? chunk.error : (chunk.error.message ?? 'unknown error')
      throw providerError(`The model server reported an error: ${message}`, { error: chunk.error })
    }
    if (chunk.usage) usage = { input: chunk.usage.prompt_tokens, output: chunk.usage.completion_tokens }
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue
      const delta = choice.delta ?? choice.message
      const reasoning = delta?.reasoning_content ?? delta?.reasoning
      if (reasoning) yield { type: 'reasoning', text: reasoning }
      if (delta?.content) yield { type: 'text', text: delta.content }
      delta?.tool_calls?.forEach((call, position) => {
        const index = call.index ?? position
        const partial = calls.get(index) ?? { id: '', name: '', arguments: '' }
        if (call.id && !partial.id) partial.id = call.id
        // The name comes whole in one chunk; some servers repeat it, so never concatenate it.
        if (call.function?.name && !partial.name) partial.name = call.function.name
        if (call.function?.arguments) partial.arguments += call.function.arguments
        calls.set(index, partial)
      })
      if (choice.finish_reason) finishReason = choice.finish_reason
    }
  }

  function parseChunk(data: string, what: string): ChatChunk {
    let json: unknown
    try {
      json = JSON.parse(data)
    } catch {
      throw providerError(`The model server sent a malformed ${what} (not JSON): ${snippet(data)}`, {
        chunk: snippet(data, 2000),
      })
    }
    const parsed = ChatChunk.safeParse(json)
    if (!parsed.success) {
      throw providerError(`The model server sent a malformed ${what}: ${snippet(data)}`, {
        chunk: snippet(data, 2000),
        issues: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
      })
    }
    return parsed.data
  }

  return {
    get done() {
      return done
    },
    *acceptEvent(data: string): Generator<ProviderChunk> {
      if (data.trim() === '[DONE]') {
        done = true
        return
      }
      yield* accept(parseChunk(data, 'stream chunk'))
    },
    *acceptCompletion(text: string): Generator<ProviderChunk> {
      yield* accept(parseChunk(text, 'response'))
      done = true
    },
    *finish(): Generator<ProviderChunk> {
      if (!done && finishReason === undefined) {
        throw providerError('The response stream ended before the model finished')
      }
      const ordered = [...calls.entries()].sort(([a], [b]) => a - b)
      for (const [index, call] of ordered) {
        if (!call.name) throw providerError(`Tool call #${index} arrived without a function name`)
        yield {
          type: 'tool-call',
          callId: call.id || `call_${request.turn}_${request.step}_${index}`,
          name: call.name,
          input: parseArguments(call),
        }
      }
      const finish = ordered.length > 0 ? 'tool-calls' : finishReason === 'length' ? 'length' : 'stop'
      yield usage ? { type: 'finish', finish, usage } : { type: 'finish', finish }
    },
  }
}

function parseArguments(call: PartialCall): Json {
  if (call.arguments.trim() === '') return {}
  try {
    return JSON.parse(call.arguments) as Json
  } catch {
    throw providerError(
      `The arguments of tool call "${call.name}" are not valid JSON: ${snippet(call.arguments)}`,
      {
        arguments: snippet(call.arguments, 2000),
      },
    )
  }
}

function providerError(message: string, details?: unknown, cause?: unknown): SessionlineError {
  return new SessionlineError('provider_error', message, details, cause === undefined ? undefined : { cause })
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function snippet(text: string, max = 200): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${line.slice(0, max)}…`
}
