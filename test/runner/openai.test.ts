import { afterEach, describe, expect, test } from 'vitest'
import { chatRequestBody, createOpenAIProvider, toChatMessages } from '../../src/engine/providers/openai'
import { isSessionlineError } from '../../src/schema/errors'
import {
  collect,
  request,
  row,
  sse,
  sseHead,
  startServer,
  type TestServer,
  textChunk,
  textOf,
} from './fixtures'

let server: TestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const provider = (baseUrl: string, extra: Record<string, unknown> = {}) =>
  createOpenAIProvider({ kind: 'openai', baseUrl, model: 'test-model', apiKey: 'sk-test', ...extra })

async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!isSessionlineError(error)) throw new Error(`expected a SessionlineError, got ${String(error)}`)
  return error
}

describe('openai-compatible provider over a real local HTTP server', () => {
  test('streams text deltas split across writes and reports usage', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      const body = [
        sse(textChunk('Hel')),
        sse(textChunk('lo, ')),
        sse(textChunk('world', 'stop')),
        sse({ id: 'c1', choices: [], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } }),
        sse('[DONE]'),
      ].join('')
      // Cut the stream at awkward places (mid-line, mid-JSON) to exercise the SSE parser.
      const cuts = [7, 30, 31, 90, body.length]
      let at = 0
      for (const cut of cuts) {
        res.write(body.slice(at, cut))
        at = cut
      }
      res.end()
    })
    const chunks = await collect(
      provider(server.baseUrl, { system: 'Be brief.', temperature: 0.2 })(request()),
    )
    expect(textOf(chunks)).toBe('Hello, world')
    expect(chunks.at(-1)).toEqual({ type: 'finish', finish: 'stop', usage: { input: 11, output: 3 } })

    const [sent] = server.requests
    expect(sent?.url).toBe('/v1/chat/completions')
    expect(sent?.headers.authorization).toBe('Bearer sk-test')
    expect(sent?.body).toEqual({
      model: 'test-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello there' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
    })
  })

  test('assembles streamed tool calls by index and finishes with tool-calls', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      const call = (index: number, fn: Record<string, string>, id?: string) => ({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] },
          },
        ],
      })
      res.write(sse(textChunk('Checking. ')))
      res.write(sse(call(0, { name: 'calculator', arguments: '' }, 'call_a')))
      res.write(sse(call(1, { name: 'clock', arguments: '{' }, 'call_b')))
      res.write(sse(call(0, { arguments: '{"expression":' })))
      res.write(sse(call(1, { arguments: '}' })))
      res.write(sse(call(0, { arguments: '"6 * 7"}' })))
      res.write(sse({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }))
      res.write(sse({ choices: [], usage: { prompt_tokens: 20, completion_tokens: 9 } }))
      res.end(sse('[DONE]'))
    })
    const tools = [
      { name: 'calculator', description: 'math', parameters: { type: 'object' } },
      { name: 'clock' },
    ]
    const chunks = await collect(provider(server.baseUrl)(request({ tools })))
    expect(chunks).toEqual([
      { type: 'text', text: 'Checking. ' },
      { type: 'tool-call', callId: 'call_a', name: 'calculator', input: { expression: '6 * 7' } },
      { type: 'tool-call', callId: 'call_b', name: 'clock', input: {} },
      { type: 'finish', finish: 'tool-calls', usage: { input: 20, output: 9 } },
    ])
    expect((server.requests[0]!.body as { tools: unknown }).tools).toEqual([
      {
        type: 'function',
        function: { name: 'calculator', description: 'math', parameters: { type: 'object' } },
      },
      { type: 'function', function: { name: 'clock', parameters: { type: 'object', properties: {} } } },
    ])
  })

  test('streams reasoning deltas and maps finish_reason length', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      res.write(sse({ choices: [{ index: 0, delta: { reasoning_content: 'hmm ' } }] }))
      res.write(sse({ choices: [{ index: 0, delta: { reasoning: 'ok' } }] }))
      res.write(sse(textChunk('cut off', 'length')))
      res.end(sse('[DONE]'))
    })
    const chunks = await collect(provider(server.baseUrl)(request()))
    expect(textOf(chunks, 'reasoning')).toBe('hmm ok')
    expect(chunks.at(-1)).toEqual({ type: 'finish', finish: 'length' })
  })

  test('a mid-stream abort rejects as aborted and closes the connection', async () => {
    let connectionClosed!: Promise<void>
    server = await startServer((_req, res, raw) => {
      connectionClosed = new Promise((resolve) => res.on('close', () => resolve()))
      void raw
      sseHead(res)
      res.write(sse(textChunk('first words ')))
      // …and then the server stalls forever: only the abort can end this request.
    })
    const controller = new AbortController()
    const iterator = provider(server.baseUrl)(request({ signal: controller.signal }))[Symbol.asyncIterator]()
    expect(await iterator.next()).toEqual({ done: false, value: { type: 'text', text: 'first words ' } })
    const next = iterator.next()
    controller.abort()
    expect((await failure(next)).code).toBe('aborted')
    await connectionClosed
  })

  test('a malformed chunk ends the step with a clear provider_error, not a hang', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      res.write(sse(textChunk('fine so far ')))
      res.write('data: {"choices": [ {"delta": \n\n')
      // The connection stays open: the error must come from the chunk, not from the stream ending.
    })
    const chunks: string[] = []
    const error = await failure(
      (async () => {
        for await (const chunk of provider(server.baseUrl)(request()))
          if (chunk.type === 'text') chunks.push(chunk.text)
      })(),
    )
    expect(chunks).toEqual(['fine so far '])
    expect(error.code).toBe('provider_error')
    expect(error.message).toMatch(/malformed stream chunk/)
  })

  test('a chunk of the wrong shape is a provider_error too', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      res.end(sse({ choices: 'nope' }))
    })
    const error = await failure(collect(provider(server.baseUrl)(request())))
    expect(error.code).toBe('provider_error')
    expect(error.message).toMatch(/malformed stream chunk/)
  })

  test('an error object in the stream becomes a provider_error with its message', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      res.end(sse({ error: { message: 'model overloaded' } }))
    })
    const error = await failure(collect(provider(server.baseUrl)(request())))
    expect(error.message).toMatch(/model overloaded/)
  })

  test('a non-2xx answer is a provider_error carrying the status', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided' } }))
    })
    const error = await failure(collect(provider(server.baseUrl)(request())))
    expect(error.code).toBe('provider_error')
    expect(error.message).toMatch(/401/)
    expect(error.message).toMatch(/Incorrect API key/)
    expect(error.details).toMatchObject({ status: 401 })
  })

  test('a stream that ends before any finish is a provider_error', async () => {
    server = await startServer((_req, res) => {
      sseHead(res)
      res.end(sse(textChunk('half an ans')))
    })
    const error = await failure(collect(provider(server.baseUrl)(request())))
    expect(error.message).toMatch(/ended before the model finished/)
  })

  test('a server that ignores stream:true and answers JSON still works', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          choices: [
            { index: 0, message: { role: 'assistant', content: 'Whole answer.' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 5, completion_tokens: 2 },
        }),
      )
    })
    expect(await collect(provider(server.baseUrl)(request()))).toEqual([
      { type: 'text', text: 'Whole answer.' },
      { type: 'finish', finish: 'stop', usage: { input: 5, output: 2 } },
    ])
  })

  test('an unreachable server is a provider_error', async () => {
    const gone = await startServer(() => {})
    await gone.close()
    const error = await failure(collect(provider(gone.baseUrl)(request())))
    expect(error.code).toBe('provider_error')
    expect(error.message).toMatch(/Could not reach/)
  })
})

describe('transcript to chat messages', () => {
  test('maps text, tool calls with their results, and drops invisible rows and reasoning', () => {
    const context = [
      row('user', 'what time is it and what is 2+2?'),
      row('assistant', [
        { type: 'reasoning', text: 'think' },
        { type: 'text', text: 'Checking.' },
        { type: 'tool', callId: 'c1', name: 'clock', input: {}, output: { iso: 'then' }, state: 'done' },
        {
          type: 'tool',
          callId: 'c2',
          name: 'calculator',
          input: { expression: '2+2' },
          output: 'boom',
          isError: true,
          state: 'error',
        },
      ]),
      row('assistant', [{ type: 'tool', callId: 'c3', name: 'clock', input: {}, state: 'interrupted' }]),
      row('user', 'old branch', { visibility: 'inactive' }),
      row('assistant', [], { status: 'interrupted' }),
      row('summary', 'we talked'),
      row('assistant', 'It is then; 2+2 is 4.'),
    ]
    expect(toChatMessages(context, 'sys')).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'what time is it and what is 2+2?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'clock', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'calculator', arguments: '{"expression":"2+2"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"iso":"then"}' },
      { role: 'tool', tool_call_id: 'c2', content: 'Error: boom' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c3', type: 'function', function: { name: 'clock', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c3', content: 'The tool call was interrupted before it returned.' },
      { role: 'system', content: 'Summary of the earlier conversation:\nwe talked' },
      { role: 'assistant', content: 'It is then; 2+2 is 4.' },
    ])
  })

  test('omits tools and temperature when there are none', () => {
    expect(chatRequestBody(request(), { model: 'm' })).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hello there' }],
      stream: true,
      stream_options: { include_usage: true },
    })
  })
})
