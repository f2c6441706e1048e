/**
 * assistant-ui attachments reach the engine: a composed message's attachments (the `File` an
 * attachment adapter kept, or its image or file content) are admitted with the text, and the row
 * shows them as assistant-ui image and file parts.
 */
import { createHash } from 'node:crypto'
import type { AppendMessage } from '@assistant-ui/react'
import { afterEach, expect, it } from 'vitest'
import { filesOfAppend, rowToThreadMessageLike } from '../../src/assistant-ui/messages'
import { sessionlineQueueAdapter } from '../../src/assistant-ui/runtime'
import { chatRows } from '../../src/client/activity'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView } from '../../src/client/types'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'

let engine: TestEngine | undefined
let view: SessionView | undefined
afterEach(async () => {
  view?.dispose()
  await engine?.close()
})

const PNG = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 9, 9])
const base64 = Buffer.from(PNG).toString('base64')
const sha = createHash('sha256').update(PNG).digest('hex')

const composed = (attachments: unknown[]) =>
  ({
    role: 'user',
    content: [{ type: 'text', text: 'see attached' }],
    attachments,
    parentId: null,
    sourceId: null,
    runConfig: undefined,
  }) as unknown as AppendMessage

it('a steer with an image attachment admits its bytes; the row shows an image part', async () => {
  engine = await inProcessEngine()
  const { id } = await engine.engine.createSession()
  view = createSessionView(engine.engine, id)
  await until(view, (s) => s.status === 'ready')
  const message = composed([
    {
      id: 'a1',
      type: 'image',
      name: 'dot.png',
      contentType: 'image/png',
      status: { type: 'complete' },
      content: [{ type: 'image', image: `data:image/png;base64,${base64}` }],
    },
  ])
  sessionlineQueueAdapter(view, view.getSnapshot(), (e) => {
    throw e
  }).steer(message)
  const shown = await until(view, (s) =>
    s.rows.some((r) => r.kind === 'input' && r.input.attachments?.[0]?.attachmentId === sha),
  )
  const row = chatRows(shown.rows).find((r) => r.kind === 'input')!
  expect(rowToThreadMessageLike(row).content).toEqual([
    { type: 'text', text: 'see attached' },
    { type: 'image', id: sha, image: `sessionline-attachment:${sha}`, filename: 'dot.png' },
  ])
  const stored = new Uint8Array(await ((await engine.engine.attachment(sha)) as Blob).arrayBuffer())
  expect(stored).toEqual(PNG)
})

it('an attachment kept as a File is sent as that File; base64 file content is decoded', async () => {
  const file = new File([PNG], 'dot.png', { type: 'image/png' })
  const files = await filesOfAppend(
    composed([
      { id: 'f', type: 'image', name: 'dot.png', status: { type: 'complete' }, file, content: [] },
      {
        id: 'g',
        type: 'document',
        name: 'notes.pdf',
        status: { type: 'complete' },
        content: [{ type: 'file', data: base64, mimeType: 'application/pdf' }],
      },
    ]),
  )
  expect(files[0]).toEqual({ name: 'dot.png', mediaType: 'image/png', data: file })
  expect(files[1]?.name).toBe('notes.pdf')
  expect(files[1]?.mediaType).toBe('application/pdf')
  expect(new Uint8Array(await (files[1]!.data as Blob).arrayBuffer())).toEqual(PNG)
})
