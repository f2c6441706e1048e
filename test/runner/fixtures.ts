import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ProviderChunk, ProviderRequest } from '../../src/engine/provider'
import type { MessagePart, SessionMessage } from '../../src/schema/messages'

let nextSeq = 1

/** A visible transcript row for provider contexts. */
export function row(
  role: SessionMessage['role'],
  parts: MessagePart[] | string,
  extra: Partial<SessionMessage> = {},
): SessionMessage {
  const seq = nextSeq++
  return {
    id: `m${seq}`,
    sessionId: 's',
    seq,
    role,
    turn: 1,
    parts: typeof parts === 'string' ? [{ type: 'text', text: parts }] : parts,
    status: 'complete',
    visibility: 'visible',
    createdAt: 0,
    updatedAt: 0,
    ...extra,
  }
}

export function request(partial: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    sessionId: 's',
    turn: 1,
    step: 1,
    context: [row('user', 'hello there')],
    tools: [],
    signal: new AbortController().signal,
    ...partial,
  }
}

export async function collect(stream: AsyncIterable<ProviderChunk>): Promise<ProviderChunk[]> {
  const chunks: ProviderChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

export const textOf = (chunks: readonly ProviderChunk[], type: 'text' | 'reasoning' = 'text') =>
  chunks.map((c) => (c.type === type ? c.text : '')).join('')

export interface RecordedRequest {
  method: string | undefined
  url: string | undefined
  headers: IncomingMessage['headers']
  body: unknown
}

export interface TestServer {
  baseUrl: string
  requests: RecordedRequest[]
  close(): Promise<void>
}

/**
 * A real HTTP server on 127.0.0.1 (port 0). `handle` gets the parsed JSON body; it may keep the
 * response open (the server destroys open sockets on close).
 */
export async function startServer(
  handle: (req: RecordedRequest, res: ServerResponse, raw: IncomingMessage) => void | Promise<void>,
): Promise<TestServer> {
  const requests: RecordedRequest[] = []
  const server = createServer((raw, res) => {
    let text = ''
    raw.setEncoding('utf8')
    raw.on('data', (piece: string) => {
      text += piece
    })
    raw.on('end', () => {
      const recorded: RecordedRequest = {
        method: raw.method,
        url: raw.url,
        headers: raw.headers,
        body: text ? JSON.parse(text) : undefined,
      }
      requests.push(recorded)
      void handle(recorded, res, raw)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  res.flushHeaders()
}

export const sse = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`

export const textChunk = (content: string, finish: string | null = null) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta: { content }, finish_reason: finish }],
})
