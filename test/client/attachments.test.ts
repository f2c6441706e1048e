/**
 * A view's admit with files (docs/decisions/0031), through real Comlink: the input shows at
 * once with its files (bytes still on the page), then with the engine's file parts, then becomes
 * the transcript row with the same parts, in place.
 */
import { createHash } from 'node:crypto'
import { afterEach, expect, test } from 'vitest'
import type { TimelineRow, TimelineSnapshot } from '../../src/client/types'
import { openPage, type Page, ready, until } from './harness'

let page: Page | undefined
afterEach(async () => {
  await page?.close()
  page = undefined
})

const rowOf = (s: TimelineSnapshot, key: string): TimelineRow | undefined => s.rows.find((r) => r.key === key)

test('an admit with a file shows it before the worker answers, then as a file part of the receipt and the row', async () => {
  page = await openPage()
  const { id } = await page.client.createSession({ title: 'files' })
  const view = page.client.open(id)
  await ready(view)
  const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3])
  const data = new Blob([bytes], { type: 'image/png' })
  const admitted = view.admit('see this', {
    id: 'in-1',
    attachments: [{ name: 'shot.png', mediaType: 'image/png', data }],
  })
  expect(rowOf(view.getSnapshot(), 'in-1')).toEqual({
    key: 'in-1',
    kind: 'input',
    input: {
      id: 'in-1',
      text: 'see this',
      delivery: 'steer',
      state: 'sending',
      attachments: [{ name: 'shot.png', mediaType: 'image/png', size: 7, data }],
    },
  })
  const receipt = await admitted
  const part = {
    type: 'file',
    attachmentId: createHash('sha256').update(bytes).digest('hex'),
    name: 'shot.png',
    mediaType: 'image/png',
    size: 7,
  }
  expect(receipt.attachments).toEqual([part])
  expect(rowOf(view.getSnapshot(), 'in-1')).toMatchObject({
    input: { state: 'pending', attachments: [part] },
  })
  await page.client.promote(id, 'settled')
  const promoted = await until(view, (s) => rowOf(s, 'in-1')?.kind === 'message')
  expect(rowOf(promoted, 'in-1')).toMatchObject({
    kind: 'message',
    message: { parts: [{ type: 'text', text: 'see this' }, part] },
  })
  const back = await page.client.attachment(part.attachmentId)
  expect(new Uint8Array(await (back as Blob).arrayBuffer())).toEqual(bytes)
})

test('a view refuses a file over the engine’s limit with invalid_input and shows nothing', async () => {
  page = await openPage()
  const { id } = await page.client.createSession()
  const view = page.client.open(id)
  await ready(view)
  const call = view.admit('x', {
    attachments: [{ name: 'a', mediaType: 'image/png', data: 'nope' as never }],
  })
  await expect(call).rejects.toMatchObject({ code: 'invalid_input' })
  expect(view.getSnapshot().rows.filter((r) => r.kind === 'input')).toEqual([])
})
