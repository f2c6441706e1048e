/**
 * The real AI SDK test models (`MockLanguageModelV2` from ai@5, `V3` and `V4` from ai@7) fed
 * with part sequences written once, in the shape all three specifications share; only `finish`
 * differs (v2: a reason string and flat usage; v3 and v4: `{unified, raw}` and usage by kind).
 */
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV3, MockLanguageModelV4 } from 'ai/test'
import { MockLanguageModelV2 } from 'ai-v5/test'

export type SpecVersion = 'v2' | 'v3' | 'v4'
export const SPEC_VERSIONS: readonly SpecVersion[] = ['v2', 'v3', 'v4']

/** A part before it is shaped for one specification (`finish` is written version-neutral). */
export type NeutralPart =
  | { type: 'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end'; id: string }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; delta: string }
  | { type: 'tool-input-start'; id: string; toolName: string; providerExecuted?: boolean }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-input-end'; id: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: string; providerExecuted?: boolean }
  | { type: 'tool-result'; toolCallId: string; toolName: string; result: unknown; isError?: boolean }
  | { type: 'error'; error: unknown }
  | {
      type: 'finish'
      reason: 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other'
      usage?: { input?: number; output?: number; cached?: number; reasoning?: number }
    }

/** `part` as specification `version` writes it. */
export function shapePart(version: SpecVersion, part: NeutralPart): Record<string, unknown> {
  if (part.type !== 'finish') return { ...part }
  const { reason, usage } = part
  if (version === 'v2') {
    return {
      type: 'finish',
      finishReason: reason,
      usage:
        usage === undefined
          ? undefined
          : {
              inputTokens: usage.input,
              outputTokens: usage.output,
              totalTokens: (usage.input ?? 0) + (usage.output ?? 0),
              cachedInputTokens: usage.cached,
              reasoningTokens: usage.reasoning,
            },
    }
  }
  return {
    type: 'finish',
    finishReason: { unified: reason, raw: reason },
    usage:
      usage === undefined
        ? undefined
        : {
            inputTokens: {
              total: usage.input,
              noCache: undefined,
              cacheRead: usage.cached,
              cacheWrite: undefined,
            },
            outputTokens: { total: usage.output, text: undefined, reasoning: usage.reasoning },
          },
  }
}

/** A stream over `parts` (as fast as possible), optionally ending in an error or never ending. */
export function partStream(
  version: SpecVersion,
  parts: readonly NeutralPart[],
  end: 'close' | 'throw' | 'hang' = 'close',
): ReadableStream<never> {
  if (end === 'close') {
    return simulateReadableStream({
      chunks: parts.map((part) => shapePart(version, part)),
      initialDelayInMs: null,
      chunkDelayInMs: null,
    }) as ReadableStream<never>
  }
  let at = 0
  return new ReadableStream<never>({
    pull(controller) {
      if (at < parts.length) {
        controller.enqueue(shapePart(version, parts[at++]!) as never)
        return
      }
      if (end === 'throw') {
        controller.error(new Error('connection reset by peer'))
        return
      }
      // A stream that ignores the abort signal: never another part, never an end.
      return new Promise<void>(() => {})
    },
  })
}

/** The real mock of `version`, answering every call with `streams()` in turn. */
export function mockModel(
  version: SpecVersion,
  stream: (call: number) => ReadableStream<never>,
): { model: MockLanguageModelV2 | MockLanguageModelV3 | MockLanguageModelV4; calls: () => unknown[] } {
  let call = 0
  const doStream = async () => ({ stream: stream(call++) })
  switch (version) {
    case 'v2': {
      const model = new MockLanguageModelV2({ doStream })
      return { model, calls: () => model.doStreamCalls }
    }
    case 'v3': {
      const model = new MockLanguageModelV3({ doStream })
      return { model, calls: () => model.doStreamCalls }
    }
    case 'v4': {
      const model = new MockLanguageModelV4({ doStream })
      return { model, calls: () => model.doStreamCalls }
    }
  }
}

export const text = (id: string, ...deltas: string[]): NeutralPart[] => [
  { type: 'text-start', id },
  ...deltas.map((delta): NeutralPart => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
]
export const reasoning = (id: string, ...deltas: string[]): NeutralPart[] => [
  { type: 'reasoning-start', id },
  ...deltas.map((delta): NeutralPart => ({ type: 'reasoning-delta', id, delta })),
  { type: 'reasoning-end', id },
]
/** A tool call streamed as input deltas, then the call itself. */
export const toolCall = (callId: string, toolName: string, input: string, pieces = 3): NeutralPart[] => {
  const size = Math.max(1, Math.ceil(input.length / pieces))
  const deltas: NeutralPart[] = []
  for (let at = 0; at < input.length; at += size)
    deltas.push({ type: 'tool-input-delta', id: callId, delta: input.slice(at, at + size) })
  return [
    { type: 'tool-input-start', id: callId, toolName },
    ...deltas,
    { type: 'tool-input-end', id: callId },
    { type: 'tool-call', toolCallId: callId, toolName, input },
  ]
}
export const finish = (
  reason: Extract<NeutralPart, { type: 'finish' }>['reason'] = 'stop',
  usage?: Extract<NeutralPart, { type: 'finish' }>['usage'],
): NeutralPart => (usage === undefined ? { type: 'finish', reason } : { type: 'finish', reason, usage })
