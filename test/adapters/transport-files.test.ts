/**
 * The AI SDK transport admits the files of a sent message (`sendMessage({text, files})` turns
 * them into `file` parts with data URLs): their bytes are stored as attachments, and the
 * promoted row reads back as the same message with the stored file's URL.
 */
import { createHash } from 'node:crypto'
import { afterEach, expect, it } from 'vitest'
import type { SessionlineUIMessage } from '../../src/ai-sdk/messages'
import { filesOfMessage, SessionlineChatTransport } from '../../src/ai-sdk/transport'
import { createSessionView } from '../../src/client/session-view'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'

const open: TestEngine[] = []
afterEach(async () => {
  for (const engine of open.splice(0)) await engine.close()
})

const PNG = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 0, 1, 2])
const dataUrl = `data:image/png;base64,${Buffer.from(PNG).toString('base64')}`
const sha = createHash('sha256').update(PNG).digest('hex')

it('a sent message with a file part admits the file; the transcript row carries it', async () => {
  const made = await inProcessEngine({ provider: { kind: 'scripted', seed: 1, toolRate: 0, wordDelayMs: 0 } })
  open.push(made)
  const { id } = await made.engine.createSession()
  const view = createSessionView(made.engine, id)
  await until(view, (s) => s.status === 'ready')
  const transport = new SessionlineChatTransport({ view })
  const message: SessionlineUIMessage = {
    id: 'with-file',
    role: 'user',
    parts: [
      { type: 'text', text: 'what is this?' },
      { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: dataUrl },
    ],
  }
  const stream = await transport.sendMessages({
    chatId: id,
    trigger: 'submit-message',
    messageId: undefined,
    messages: [message],
    abortSignal: undefined,
  })
  await stream.pipeTo(new WritableStream())
  const row = (await made.engine.page(id)).messages.find((m) => m.id === 'with-file')
  expect(row?.parts).toEqual([
    { type: 'text', text: 'what is this?' },
    { type: 'file', attachmentId: sha, name: 'dot.png', mediaType: 'image/png', size: PNG.length },
  ])
  const bytes = new Uint8Array(await ((await made.engine.attachment(sha)) as Blob).arrayBuffer())
  expect(bytes).toEqual(PNG)
  view.dispose()
})

it('files given beside text (a FileList or file parts) are read too; stored ones are not sent again', async () => {
  const file = new File([PNG], 'a.png', { type: 'image/png' })
  const fromList = await filesOfMessage({ text: 'x', files: { length: 1, 0: file } })
  expect(fromList).toEqual([{ name: 'a.png', mediaType: 'image/png', data: file }])
  const fromParts = await filesOfMessage({
    parts: [
      { type: 'file', mediaType: 'image/png', url: dataUrl },
      { type: 'file', mediaType: 'image/png', url: `sessionline-attachment:${sha}` },
    ],
  })
  expect(fromParts.map((f) => [f.name, f.mediaType, f.data.constructor.name])).toEqual([
    ['file-1', 'image/png', 'Blob'],
  ])
})
