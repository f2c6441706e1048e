/**
 * Files reach an OpenAI-compatible model (docs/decisions/0031): a user row's images go as
 * `image_url` content and other files as `file` content, both as data URLs of the stored bytes,
 * over a real local HTTP server, from a provider request and from the engine's own runner.
 */
import { createHash } from 'node:crypto'
import { afterEach, expect, test } from 'vitest'
import { createOpenAIProvider, toChatMessages } from '../../src/engine/providers/openai'
import type { FilePart } from '../../src/schema/attachments'
import { collect, request, row, sse, sseHead, startServer, type TestServer, textChunk } from './fixtures'
import { startEngine, untilTurnsEnded } from './harness'

let server: TestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const bytesOf = (text: string) => new TextEncoder().encode(text)
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
const file = (bytes: Uint8Array, name: string, mediaType: string): FilePart => ({
  type: 'file',
  attachmentId: sha(bytes),
  name,
  mediaType,
  size: bytes.length,
})

const answerOk = () =>
  startServer((_req, res) => {
    sseHead(res)
    res.write(sse(textChunk('seen', 'stop')))
    res.end(sse('[DONE]'))
  })

test('a user row with an image, a PDF and a file whose bytes are gone becomes content parts', async () => {
  server = await answerOk()
  const image = bytesOf('\u0089PNG fake')
  const pdf = bytesOf('%PDF-1.7 fake')
  const gone = bytesOf('never stored')
  const stored = new Map([
    [sha(image), new Blob([image], { type: 'image/png' })],
    [sha(pdf), new Blob([pdf], { type: 'application/pdf' })],
  ])
  const context = [
    row('user', [
      { type: 'text', text: 'compare these' },
      file(image, 'shot.png', 'image/png'),
      file(pdf, 'paper.pdf', 'application/pdf'),
      file(gone, 'lost.txt', 'text/plain'),
    ]),
  ]
  const provider = createOpenAIProvider({ kind: 'openai', baseUrl: server.baseUrl, model: 'm' })
  await collect(provider(request({ context, attachment: async (id) => stored.get(id) })))
  const sent = server.requests[0]?.body as { messages: unknown[] }
  expect(sent.messages).toEqual([
    {
      role: 'user',
      content: [
        { type: 'text', text: 'compare these' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${base64(image)}` } },
        {
          type: 'file',
          file: { filename: 'paper.pdf', file_data: `data:application/pdf;base64,${base64(pdf)}` },
        },
        { type: 'text', text: '[attachment lost.txt (text/plain) is not available]' },
      ],
    },
  ])
  // A row without files keeps plain string content, as before.
  expect(toChatMessages([row('user', 'plain')])).toEqual([{ role: 'user', content: 'plain' }])
})

test('the runner hands the provider the bytes of an admitted attachment', async () => {
  server = await answerOk()
  const { engine, sessionId, close } = await startEngine({
    provider: { kind: 'openai', baseUrl: server.baseUrl, model: 'm' },
  })
  try {
    const image = bytesOf('pixels')
    await engine.admit(sessionId, {
      text: '',
      attachments: [{ name: 'a.png', mediaType: 'image/png', data: new Blob([image]) }],
    })
    await untilTurnsEnded(engine, sessionId, 1)
    const sent = server.requests[0]?.body as { messages: unknown[] }
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${base64(image)}` } }],
      },
    ])
  } finally {
    await close()
  }
})
