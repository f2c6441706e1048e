import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One chat-completion request the server answered: its bearer header and its JSON body. */
export interface ChatRequest {
  authorization?: string
  body: { model?: string; messages?: { role: string; content?: unknown; tool_call_id?: string }[] }
}

/** What the server streams for one request: text deltas, or one tool call (then `tool_calls`). */
export type ChatReply =
  | { words: readonly string[] }
  | { toolCall: { id: string; name: string; arguments: string } }

/**
 * A tiny OpenAI-compatible server on 127.0.0.1 that streams chat-completion chunks over SSE:
 * `words` for every request, or what `reply` answers to each request (a tool call, then the
 * answer once the tool's result is in the messages). It allows any origin, as Ollama and
 * LM Studio can be told to.
 */
export async function startChatServer(reply: readonly string[] | ((request: ChatRequest) => ChatReply)) {
  const requests: ChatRequest[] = []
  const cors = {
    'access-control-allow-origin': '*',
    'access-control-allow-headers': 'authorization, content-type',
    'access-control-allow-methods': 'POST, OPTIONS',
  }
  const server = createServer(async (request, response) => {
    if (request.method === 'OPTIONS') {
      response.writeHead(204, cors).end()
      return
    }
    let text = ''
    for await (const chunk of request) text += chunk
    const chat: ChatRequest = { authorization: request.headers.authorization, body: JSON.parse(text) }
    requests.push(chat)
    const answer = typeof reply === 'function' ? reply(chat) : { words: reply }
    response.writeHead(200, { ...cors, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const data = (choices: object[], extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: chat.body.model, choices, ...extra })}\n\n`
    const chunk = (delta: object, finish: string | null = null) =>
      data([{ index: 0, delta, finish_reason: finish }])
    if ('words' in answer) {
      for (const word of answer.words) {
        response.write(chunk({ content: word }))
        await new Promise((done) => setTimeout(done, 20))
      }
      response.write(chunk({}, 'stop'))
    } else {
      const { id, name, arguments: args } = answer.toolCall
      response.write(
        chunk({
          role: 'assistant',
          tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: args } }],
        }),
      )
      response.write(chunk({}, 'tool_calls'))
    }
    response.write(data([], { usage: { prompt_tokens: 12, completion_tokens: 5 } }))
    response.end('data: [DONE]\n\n')
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
}
