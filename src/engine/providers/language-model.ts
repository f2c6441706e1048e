/**
 * A `ModelProvider` over any AI SDK language model object: the model an app already configured
 * (`@ai-sdk/openai`, Anthropic, a local server, a model that runs in the browser) drives the
 * runner. Specifications v2 (AI SDK 5), v3 (6) and v4 (7) are told apart by
 * `specificationVersion` and read by shape, with zod schemas for the parts this reads: the `ai`
 * package is never imported at run time.
 *
 * @example
 *   import { createOpenAI } from '@ai-sdk/openai'
 *   import { exposeEngine, fromLanguageModel } from 'sessionline/worker'
 *   const openai = createOpenAI({ apiKey })
 *   exposeEngine({ provider: fromLanguageModel(openai('gpt-4.1-mini'), { temperature: 0.2 }) })
 */
import { z } from 'zod'
import { copyJson, type Json, type Usage } from '../../schema/common'
import { parseOrThrow, SessionlineError } from '../../schema/errors'
import type { ModelProvider, ProviderChunk, ProviderRequest } from '../provider'
import { abortError, raceAbort, throwIfAborted } from './abort'
import { attachedFiles } from './attached-files'
import { toFunctionTools, toPrompt } from './language-model-prompt'

/** The language-model specifications this reads. */
export const LANGUAGE_MODEL_SPECIFICATIONS = ['v2', 'v3', 'v4'] as const

/**
 * The part of an AI SDK language model this uses. `LanguageModelV2`, `V3` and `V4` objects all
 * fit; `doStream` takes `never` so any of their call-option types is accepted.
 */
export interface LanguageModelLike {
  readonly specificationVersion: string
  readonly provider?: string
  readonly modelId?: string
  doStream(options: never): PromiseLike<{ stream: ReadableStream<unknown> }>
}

const JsonRecord = z.record(
  z.string(),
  z.custom<Json>((value) => copyJson(value).ok),
)

/** Call options passed through to every request (validated when the provider is made). */
export const LanguageModelOptions = z.strictObject({
  /** System prompt sent before the transcript. */
  system: z.string().optional(),
  temperature: z.number().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  topP: z.number().optional(),
  topK: z.number().optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  stopSequences: z.array(z.string()).optional(),
  seed: z.number().int().optional(),
  /** Provider-specific options, by provider name (`{openai: {reasoningEffort: 'low'}}`). */
  providerOptions: z.record(z.string(), JsonRecord).optional(),
  /** Extra HTTP headers, for providers that make requests. */
  headers: z.record(z.string(), z.string()).optional(),
})
export type LanguageModelOptions = z.input<typeof LanguageModelOptions>

const ModelShape = z.looseObject({
  specificationVersion: z.enum(LANGUAGE_MODEL_SPECIFICATIONS),
  doStream: z.custom<(options: unknown) => unknown>((value) => typeof value === 'function'),
})

/**
 * A provider over `model`. A model of another specification (v1, or not a model at all) or bad
 * `options` is `invalid_input`; a failing request, an `error` part, a malformed part, a tool
 * call whose input is not JSON or a stream that ends without a `finish` is `provider_error`.
 */
export function fromLanguageModel(
  model: LanguageModelLike,
  options: LanguageModelOptions = {},
): ModelProvider {
  const shape = ModelShape.safeParse(model)
  if (!shape.success) {
    const version = (model as { specificationVersion?: unknown } | null)?.specificationVersion
    throw new SessionlineError(
      'invalid_input',
      `fromLanguageModel needs an AI SDK language model of specification ${LANGUAGE_MODEL_SPECIFICATIONS.join(', ')}${
        version === undefined ? '' : ` (this one says ${String(version)})`
      }`,
    )
  }
  const settings = parseOrThrow(LanguageModelOptions, options, 'language model options')
  const doStream = (callOptions: unknown) =>
    (model.doStream as (options: unknown) => unknown).call(model, callOptions)
  return (request) => streamLanguageModel(request, doStream, settings)
}

type Settings = z.infer<typeof LanguageModelOptions>

async function* streamLanguageModel(
  request: ProviderRequest,
  doStream: (options: unknown) => unknown,
  settings: Settings,
): AsyncGenerator<ProviderChunk> {
  const { signal } = request
  throwIfAborted(signal, 'model request')
  const { system, ...passed } = settings
  const callOptions = {
    ...passed,
    prompt: toPrompt(request.context, system, await attachedFiles(request)),
    ...(request.tools.length > 0 ? { tools: toFunctionTools(request.tools) } : {}),
    abortSignal: signal,
  }
  let started: unknown
  try {
    // A provider that throws synchronously rejects here like one whose promise fails.
    started = await raceAbort(
      Promise.resolve().then(() => doStream(callOptions)),
      signal,
    )
  } catch (error) {
    if (signal.aborted) throw abortError('model request')
    throw providerError(`The model request failed: ${messageOf(error)}`, undefined, error)
  }
  const stream = StreamResult.safeParse(started)
  if (!stream.success) throw providerError('The model answered without a readable stream')

  const reader = stream.data.stream.getReader()
  // Cancelling the reader settles a read that waits at once (as done), so a stream that ignores
  // the signal is left behind without racing every read against it.
  const onAbort = () => {
    reader.cancel(abortError('model request')).catch(() => {})
  }
  signal.addEventListener('abort', onAbort, { once: true })
  const assembler = createPartAssembler()
  let finished = false
  try {
    while (!signal.aborted) {
      let next: ReadableStreamReadResult<unknown>
      try {
        next = await reader.read()
      } catch (error) {
        if (signal.aborted) throw abortError('model request')
        throw providerError(`The model stream failed: ${messageOf(error)}`, undefined, error)
      }
      if (next.done) break
      const chunk = assembler.accept(next.value)
      if (chunk !== undefined) yield chunk
    }
    finished = !signal.aborted
  } finally {
    signal.removeEventListener('abort', onAbort)
    if (!finished) reader.cancel(signal.aborted ? abortError('model request') : undefined).catch(() => {})
    else reader.releaseLock()
  }
  // The provider may end its stream normally (`stop`) after our abort: the abort is what happened.
  if (signal.aborted) throw abortError('model request')
  yield assembler.finish()
}

const StreamResult = z.looseObject({
  stream: z.custom<ReadableStream<unknown>>(
    (value) => typeof (value as { getReader?: unknown } | null)?.getReader === 'function',
  ),
})

// --- the parts this reads (v2, v3 and v4 share these shapes, but for usage and finish) ----

const Delta = z.looseObject({ delta: z.string() })
const ToolInputStart = z.looseObject({ id: z.string(), toolName: z.string() })
const ToolInputDelta = z.looseObject({ id: z.string(), delta: z.string() })
const ToolCallPart = z.looseObject({
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  input: z.string().optional(),
  providerExecuted: z.boolean().optional(),
})
const ToolResultPart = z.looseObject({
  toolCallId: z.string().min(1),
  result: z.unknown(),
  isError: z.boolean().optional(),
  preliminary: z.boolean().optional(),
})
const Count = z.number().int().nonnegative().nullish()
/** v2: flat counts. */
const FlatUsage = z.looseObject({
  inputTokens: Count,
  outputTokens: Count,
  reasoningTokens: Count,
  cachedInputTokens: Count,
})
/** v3 and v4: counts by kind. */
const NestedUsage = z.looseObject({
  inputTokens: z.looseObject({ total: Count, cacheRead: Count }),
  outputTokens: z.looseObject({ total: Count, reasoning: Count }),
})
const FinishPart = z.looseObject({
  finishReason: z.union([z.string(), z.looseObject({ unified: z.string() })]).optional(),
  usage: z.union([NestedUsage, FlatUsage]).nullish(),
})
const ErrorPart = z.looseObject({ error: z.unknown() })
const PartType = z.looseObject({ type: z.string() })

/**
 * Turns stream parts into provider chunks. Text and reasoning pass at once; tool-input deltas
 * are gathered by id (a call whose final part carries no input uses them); tool calls are
 * parsed; a provider-executed result passes on; `finish` is held for the end of the stream.
 */
function createPartAssembler() {
  const inputs = new Map<string, { name: string; text: string }>()
  let finish: Extract<ProviderChunk, { type: 'finish' }> | undefined

  /** The chunk `value` gives, if any (most parts give one or none, so no generator per part). */
  function accept(value: unknown): ProviderChunk | undefined {
    // The hot path, one check per streamed delta; anything else is read with the schemas below.
    const fast = value as { type?: unknown; delta?: unknown } | null
    if (typeof fast?.delta === 'string' && (fast.type === 'text-delta' || fast.type === 'reasoning-delta'))
      return fast.delta === ''
        ? undefined
        : { type: fast.type === 'text-delta' ? 'text' : 'reasoning', text: fast.delta }
    const part = read(PartType, value)
    switch (part.type) {
      case 'text-delta':
      case 'reasoning-delta':
        read(Delta, value) // not a string delta (the hot path took those): names the issue
        return undefined
      case 'tool-input-start': {
        const { id, toolName } = read(ToolInputStart, value)
        inputs.set(id, { name: toolName, text: '' })
        return undefined
      }
      case 'tool-input-delta': {
        const { id, delta } = read(ToolInputDelta, value)
        const gathered = inputs.get(id) ?? { name: '', text: '' }
        gathered.text += delta
        inputs.set(id, gathered)
        return undefined
      }
      case 'tool-call': {
        const call = read(ToolCallPart, value)
        const gathered = inputs.get(call.toolCallId)
        inputs.delete(call.toolCallId)
        const text = call.input ?? gathered?.text ?? ''
        return {
          type: 'tool-call',
          callId: call.toolCallId,
          name: call.toolName,
          input: parseToolInput(call.toolName, call.toolCallId, text),
          ...(call.providerExecuted ? { providerExecuted: true as const } : {}),
        }
      }
      case 'tool-result': {
        const result = read(ToolResultPart, value)
        // A preliminary result is progress; the final one follows with the same id.
        if (result.preliminary) return undefined
        const copied = copyJson(result.result ?? null)
        return copied.ok
          ? {
              type: 'tool-result',
              callId: result.toolCallId,
              output: copied.value,
              isError: result.isError ?? false,
            }
          : {
              type: 'tool-result',
              callId: result.toolCallId,
              output: { error: `The provider's result is not JSON: ${copied.message}` },
              isError: true,
            }
      }
      case 'finish': {
        const { finishReason, usage } = read(FinishPart, value)
        const reason = typeof finishReason === 'string' ? finishReason : finishReason?.unified
        if (reason === 'error') throw providerError('The model finished with an error')
        if (reason === 'interrupted')
          throw providerError('The model stream was interrupted before it finished')
        const normalised = usage ? normaliseUsage(usage) : undefined
        const kind = reason === 'length' ? 'length' : reason === 'tool-calls' ? 'tool-calls' : 'stop'
        finish = normalised
          ? { type: 'finish', finish: kind, usage: normalised }
          : { type: 'finish', finish: kind }
        return undefined
      }
      case 'error': {
        const { error } = read(ErrorPart, value)
        throw providerError(`The model reported an error: ${messageOf(error)}`, undefined, error)
      }
      default:
        // stream-start, response-metadata, *-start and *-end, sources, files, raw chunks,
        // approval requests of provider-executed tools: nothing the transcript keeps.
        return undefined
    }
  }

  return {
    accept,
    finish(): Extract<ProviderChunk, { type: 'finish' }> {
      if (!finish) throw providerError('The model stream ended without a finish part')
      return finish
    },
  }
}

/** `input` and `output` always (0 when the provider did not say); cached and reasoning when told. */
export function normaliseUsage(
  usage: z.infer<typeof FlatUsage> | z.infer<typeof NestedUsage>,
): Usage | undefined {
  const nested = typeof usage.inputTokens === 'object' && usage.inputTokens !== null
  const counts = nested
    ? (() => {
        const { inputTokens, outputTokens } = usage as z.infer<typeof NestedUsage>
        return {
          input: inputTokens.total,
          output: outputTokens.total,
          cachedInput: inputTokens.cacheRead,
          reasoning: outputTokens.reasoning,
        }
      })()
    : (() => {
        const flat = usage as z.infer<typeof FlatUsage>
        return {
          input: flat.inputTokens,
          output: flat.outputTokens,
          cachedInput: flat.cachedInputTokens,
          reasoning: flat.reasoningTokens,
        }
      })()
  if (counts.input == null && counts.output == null) return undefined
  const result: Usage = { input: counts.input ?? 0, output: counts.output ?? 0 }
  if (counts.cachedInput != null) result.cachedInput = counts.cachedInput
  if (counts.reasoning != null) result.reasoning = counts.reasoning
  return result
}

function parseToolInput(name: string, callId: string, text: string): Json {
  // A tool without parameters may be called with no input at all.
  if (text.trim() === '') return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw providerError(`The input of tool call "${name}" is not valid JSON: ${snippet(text)}`, {
      callId,
      name,
      input: snippet(text, 2000),
    })
  }
  return parsed as Json
}

function read<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const type = (value as { type?: unknown } | null)?.type
  throw providerError(`The model sent a malformed ${typeof type === 'string' ? `"${type}" ` : ''}part`, {
    issues: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
  })
}

function providerError(message: string, details?: unknown, cause?: unknown): SessionlineError {
  return new SessionlineError('provider_error', message, details, cause === undefined ? undefined : { cause })
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

function snippet(text: string, max = 200): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${line.slice(0, max)}…`
}
