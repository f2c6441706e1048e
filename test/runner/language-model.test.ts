import { describe, expect, test } from 'vitest'
import type { ProviderChunk } from '../../src/engine/provider'
import { isSessionlineError, type SessionlineError } from '../../src/schema/errors'
import { fromLanguageModel, type LanguageModelLike } from '../../worker/index'
import { collect, request, row, textOf } from './fixtures'
import {
  finish,
  mockModel,
  type NeutralPart,
  partStream,
  SPEC_VERSIONS,
  type SpecVersion,
  text,
  toolCall,
} from './language-model-fixtures'

async function failure(promise: Promise<unknown>): Promise<SessionlineError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!isSessionlineError(error)) throw new Error(`expected a SessionlineError, got ${String(error)}`)
  return error
}

const providerOver = (
  version: SpecVersion,
  parts: readonly NeutralPart[],
  end?: 'close' | 'throw' | 'hang',
) => {
  const mock = mockModel(version, () => partStream(version, parts, end))
  return { provider: fromLanguageModel(mock.model), calls: mock.calls }
}

/** Reads chunks until `count` arrived, then aborts and reads on: the rejection it ends with. */
async function abortAfter(stream: AsyncIterable<ProviderChunk>, controller: AbortController, count: number) {
  const seen: ProviderChunk[] = []
  const iterator = stream[Symbol.asyncIterator]()
  while (seen.length < count) {
    const next = await iterator.next()
    if (next.done) throw new Error('the stream ended before the abort')
    seen.push(next.value)
  }
  controller.abort()
  const error = await failure(iterator.next())
  return { seen, error }
}

describe.each(SPEC_VERSIONS)('fromLanguageModel over the real MockLanguageModel%s', (version) => {
  test('interleaved text and reasoning pass in order; usage is normalised with cached and reasoning tokens', async () => {
    const { provider } = providerOver(version, [
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'Think' },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hel' },
      { type: 'reasoning-delta', id: 'r1', delta: 'ing' },
      { type: 'text-delta', id: 't1', delta: 'lo' },
      { type: 'text-delta', id: 't1', delta: '' },
      { type: 'reasoning-end', id: 'r1' },
      { type: 'text-end', id: 't1' },
      finish('stop', { input: 12, output: 7, cached: 4, reasoning: 3 }),
    ])
    expect(await collect(provider(request()))).toEqual([
      { type: 'reasoning', text: 'Think' },
      { type: 'text', text: 'Hel' },
      { type: 'reasoning', text: 'ing' },
      { type: 'text', text: 'lo' },
      { type: 'finish', finish: 'stop', usage: { input: 12, output: 7, cachedInput: 4, reasoning: 3 } },
    ])
  })

  test('tool-input deltas then the tool call give one call with the parsed input', async () => {
    const { provider } = providerOver(version, [
      ...text('t1', 'Checking.'),
      ...toolCall('call_1', 'calculator', '{"expression":"6 * 7"}'),
      ...toolCall('call_2', 'clock', ''),
      finish('tool-calls', { input: 5, output: 9 }),
    ])
    expect(await collect(provider(request()))).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool-call', callId: 'call_1', name: 'calculator', input: { expression: '6 * 7' } },
      // A tool without parameters may be called with no input at all.
      { type: 'tool-call', callId: 'call_2', name: 'clock', input: {} },
      { type: 'finish', finish: 'tool-calls', usage: { input: 5, output: 9 } },
    ])
  })

  test('a provider-executed call and its result pass on, marked as the provider’s', async () => {
    const { provider } = providerOver(version, [
      {
        type: 'tool-call',
        toolCallId: 'ws_1',
        toolName: 'web_search',
        input: '{"q":"dexie"}',
        providerExecuted: true,
      },
      { type: 'tool-result', toolCallId: 'ws_1', toolName: 'web_search', result: { hits: 2 } },
      ...text('t1', 'Found two.'),
      finish('stop'),
    ])
    expect(await collect(provider(request()))).toEqual([
      {
        type: 'tool-call',
        callId: 'ws_1',
        name: 'web_search',
        input: { q: 'dexie' },
        providerExecuted: true,
      },
      { type: 'tool-result', callId: 'ws_1', output: { hits: 2 }, isError: false },
      { type: 'text', text: 'Found two.' },
      { type: 'finish', finish: 'stop' },
    ])
  })

  test('a tool call whose input is not JSON is a provider_error after the text before it', async () => {
    const { provider } = providerOver(version, [
      ...text('t1', 'Let me see'),
      ...toolCall('call_1', 'calculator', '{"expression": 6 *'),
      finish('tool-calls'),
    ])
    const seen: ProviderChunk[] = []
    const error = await failure(
      (async () => {
        for await (const chunk of provider(request())) seen.push(chunk)
      })(),
    )
    expect(error.code).toBe('provider_error')
    expect(error.message).toContain('"calculator" is not valid JSON')
    expect(error.details).toMatchObject({ callId: 'call_1', name: 'calculator' })
    expect(textOf(seen)).toBe('Let me see')
  })

  test('a finish with undefined usage finishes without usage; length and content-filter map', async () => {
    expect(
      await collect(providerOver(version, [...text('t', 'a'), finish('stop')]).provider(request())),
    ).toEqual([
      { type: 'text', text: 'a' },
      { type: 'finish', finish: 'stop' },
    ])
    const length = await collect(providerOver(version, [finish('length', { output: 3 })]).provider(request()))
    expect(length).toEqual([{ type: 'finish', finish: 'length', usage: { input: 0, output: 3 } }])
    const filtered = await collect(providerOver(version, [finish('content-filter')]).provider(request()))
    expect(filtered).toEqual([{ type: 'finish', finish: 'stop' }])
  })

  test('a stream with no finish at all is a provider_error, the text before it streamed', async () => {
    const seen: ProviderChunk[] = []
    const error = await failure(
      (async () => {
        for await (const chunk of providerOver(version, text('t', 'half an ans')).provider(request()))
          seen.push(chunk)
      })(),
    )
    expect(error.code).toBe('provider_error')
    expect(error.message).toContain('without a finish')
    expect(textOf(seen)).toBe('half an ans')
  })

  test('an error part is a provider_error carrying its message; a finish `error` is one too', async () => {
    const parts = [...text('t', 'so'), { type: 'error', error: new Error('rate limited') } as const, finish()]
    const error = await failure(collect(providerOver(version, parts).provider(request())))
    expect(error.code).toBe('provider_error')
    expect(error.message).toContain('rate limited')
    const reported = await failure(collect(providerOver(version, [finish('error')]).provider(request())))
    expect(reported.code).toBe('provider_error')
  })

  test('a stream that throws mid-way is a provider_error', async () => {
    const error = await failure(
      collect(providerOver(version, text('t', 'a', 'b'), 'throw').provider(request())),
    )
    expect(error.code).toBe('provider_error')
    expect(error.message).toContain('connection reset by peer')
  })

  test('a malformed part of a known type is a provider_error naming the type', async () => {
    const bad = { type: 'text-delta', id: 't' } as unknown as NeutralPart
    const error = await failure(collect(providerOver(version, [bad, finish()]).provider(request())))
    expect(error.code).toBe('provider_error')
    expect(error.message).toContain('"text-delta"')
  })

  test('abort mid-text stops at once though the stream ignores the signal', async () => {
    const { provider } = providerOver(version, text('t', 'one ', 'two '), 'hang')
    const controller = new AbortController()
    const { seen, error } = await abortAfter(provider(request({ signal: controller.signal })), controller, 2)
    expect(textOf(seen)).toBe('one two ')
    expect(error.code).toBe('aborted')
  })

  test('abort mid-tool-input yields no call', async () => {
    const input = '{"expression":"1 + 2"}'
    const parts = [...text('t', 'Calc'), ...toolCall('c1', 'calculator', input).slice(0, 3)]
    const { provider } = providerOver(version, parts, 'hang')
    const controller = new AbortController()
    const { seen, error } = await abortAfter(provider(request({ signal: controller.signal })), controller, 1)
    expect(seen).toEqual([{ type: 'text', text: 'Calc' }])
    expect(error.code).toBe('aborted')
  })

  test('a stream that ends normally (`stop`) after our abort is recorded as the abort', async () => {
    const controller = new AbortController()
    const mock = mockModel(version, () => {
      // The provider notices nothing: it finishes `stop` after the abort.
      controller.abort()
      return partStream(version, [...text('t', 'done'), finish('stop')])
    })
    const error = await failure(
      collect(fromLanguageModel(mock.model)(request({ signal: controller.signal }))),
    )
    expect(error.code).toBe('aborted')
  })

  test('call options, the prompt and the tools pass through', async () => {
    const mock = mockModel(version, () => partStream(version, [finish()]))
    const provider = fromLanguageModel(mock.model, {
      system: 'Be brief.',
      temperature: 0.3,
      maxOutputTokens: 256,
      providerOptions: { openai: { reasoningEffort: 'low' } },
    })
    const context = [
      row('user', 'what is 6 * 7?'),
      row('assistant', [
        { type: 'reasoning', text: 'easy' },
        { type: 'text', text: 'Checking.' },
        {
          type: 'tool',
          callId: 'c1',
          name: 'calculator',
          input: { expression: '6 * 7' },
          output: 42,
          state: 'done',
        },
        { type: 'tool', callId: 'c2', name: 'clock', input: {}, state: 'interrupted' },
      ]),
      row('assistant', 'hidden row', { visibility: 'inactive' }),
    ]
    const tools = [{ name: 'calculator', description: 'Adds up', parameters: { type: 'object' } }]
    const signal = new AbortController().signal
    await collect(provider(request({ context, tools, signal })))
    const [call] = mock.calls() as Record<string, unknown>[]
    expect(call).toMatchObject({
      temperature: 0.3,
      maxOutputTokens: 256,
      providerOptions: { openai: { reasoningEffort: 'low' } },
      abortSignal: signal,
      tools: [
        { type: 'function', name: 'calculator', description: 'Adds up', inputSchema: { type: 'object' } },
      ],
    })
    expect(call!.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'what is 6 * 7?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'calculator', input: { expression: '6 * 7' } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'clock', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'calculator',
            output: { type: 'json', value: 42 },
          },
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'clock',
            output: { type: 'error-text', value: 'The tool call was interrupted before it returned.' },
          },
        ],
      },
    ])
  })
})

describe('fromLanguageModel: bad models and failing requests', () => {
  test('a model that throws synchronously in doStream is a provider_error, not a crash', async () => {
    const model = {
      specificationVersion: 'v4',
      provider: 'broken',
      modelId: 'm',
      doStream(): never {
        throw new Error('no API key')
      },
    } satisfies LanguageModelLike
    const error = await failure(collect(fromLanguageModel(model)(request())))
    expect(error.code).toBe('provider_error')
    expect(error.message).toContain('no API key')
  })

  test('a model that answers without a stream is a provider_error', async () => {
    const model = { specificationVersion: 'v3', doStream: async () => ({ stream: 'nope' }) }
    const error = await failure(collect(fromLanguageModel(model as unknown as LanguageModelLike)(request())))
    expect(error.code).toBe('provider_error')
  })

  test('a v1 model, or something else, is invalid_input when the provider is made', () => {
    const v1 = { specificationVersion: 'v1', doStream: async () => ({}) }
    expect(() => fromLanguageModel(v1 as unknown as LanguageModelLike)).toThrow(/this one says v1/)
    expect(() => fromLanguageModel({} as LanguageModelLike)).toThrow(
      expect.objectContaining({ code: 'invalid_input' }),
    )
    const { model } = mockModel('v4', () => partStream('v4', []))
    expect(() => fromLanguageModel(model, { temperature: 'hot' as unknown as number })).toThrow(
      expect.objectContaining({ code: 'invalid_input' }),
    )
  })
})
