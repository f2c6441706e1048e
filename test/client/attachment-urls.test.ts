/**
 * `attachmentUrls` on a real view over a real engine (Comlink on a MessageChannel,
 * fake-indexeddb): object URLs are made as file parts enter the window, shared by rows naming the
 * same bytes, revoked when their rows leave (a rewind takes them off the path) and made anew
 * when they come back, and all revoked on dispose. `URL.createObjectURL` and `revokeObjectURL`
 * are Node's own, watched, so the URLs are real `blob:` URLs whose bytes can be read back.
 */
import { afterEach, beforeEach, expect, test, vi } from 'vitest'
import { type AttachmentUrls, attachmentUrls } from '../../src/client/attachment-urls'
import type { SessionView } from '../../src/client/types'
import { sha256Hex } from '../../src/engine/attachments'
import { openPage, type Page, until } from './harness'

let page: Page | undefined
let made: string[]
let revoked: string[]
beforeEach(() => {
  made = []
  revoked = []
  const create = URL.createObjectURL.bind(URL)
  const revoke = URL.revokeObjectURL.bind(URL)
  vi.spyOn(URL, 'createObjectURL').mockImplementation((blob) => {
    const url = create(blob)
    made.push(url)
    return url
  })
  vi.spyOn(URL, 'revokeObjectURL').mockImplementation((url) => {
    revoked.push(url)
    revoke(url)
  })
})
afterEach(async () => {
  await page?.close()
  page = undefined
  vi.restoreAllMocks()
})

const png = (...bytes: number[]) =>
  new Blob([new Uint8Array([137, 80, 78, 71, ...bytes])], { type: 'image/png' })

/** A prompt with `image` admitted, promoted and answered by the host. */
async function exchange(p: Page, sessionId: string, id: string, image: Blob, turn: number) {
  await p.engine.admit(sessionId, {
    id,
    text: `prompt ${id}`,
    delivery: 'queue',
    attachments: [{ name: `${id}.png`, mediaType: 'image/png', data: image }],
  })
  await p.engine.promote(sessionId, 'settled')
  await p.engine.append(sessionId, [
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId: `${id}-answer`, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId: `${id}-answer`, text: 'seen' } },
    { type: 'assistant/end', data: { messageId: `${id}-answer`, finish: 'stop' } },
    { type: 'step/end', data: { turn, step: 1 } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ])
}

/** Resolves once `ok` holds for the cache (checked now and at each of its changes). */
function whenUrls(urls: AttachmentUrls, ok: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!ok()) return
      stop()
      resolve()
    }
    const stop = urls.subscribe(check)
    check()
  })
}

const idOf = async (blob: Blob) => sha256Hex(await blob.arrayBuffer())
const keys = (view: SessionView) => view.getSnapshot().rows.map((r) => r.key)

async function twoTurns(first: Blob, second: Blob) {
  page = await openPage()
  const { id } = await page.client.createSession({ title: 'files' })
  await exchange(page, id, 'u1', first, 1)
  await exchange(page, id, 'u2', second, 2)
  const view = page.client.open(id, { tail: 200 })
  await until(view, (s) => s.rows.length === 4)
  return view
}

test('a URL per attachment in the window, made once its bytes are read, whose bytes are the attachment', async () => {
  const a = png(1)
  const b = png(2, 2)
  const view = await twoTurns(a, b)
  const [idA, idB] = [await idOf(a), await idOf(b)]
  const urls = attachmentUrls(view, page!.client)
  expect(urls.get(idA)).toBeUndefined() // still reading
  await whenUrls(urls, () => urls.get(idA) !== undefined && urls.get(idB) !== undefined)
  expect(made).toEqual(expect.arrayContaining([urls.get(idA), urls.get(idB)]))
  expect(made).toHaveLength(2)
  const back = await fetch(urls.get(idB)!).then((r) => r.arrayBuffer())
  expect(new Uint8Array(back)).toEqual(new Uint8Array([137, 80, 78, 71, 2, 2]))
  // Not in the window: no URL is made for it.
  expect(urls.get('0'.repeat(64))).toBeUndefined()
  urls.dispose()
  view.dispose()
})

test('two rows naming the same bytes share one URL', async () => {
  const view = await twoTurns(png(7), png(7))
  const urls = attachmentUrls(view, page!.client)
  const id = await idOf(png(7))
  await whenUrls(urls, () => urls.get(id) !== undefined)
  const fileParts = view
    .getSnapshot()
    .rows.flatMap((r) => (r.kind === 'message' ? r.message.parts.filter((p) => p.type === 'file') : []))
  expect(fileParts.map((p) => p.attachmentId)).toEqual([id, id])
  expect(made).toEqual([urls.get(id)])
  urls.dispose()
  view.dispose()
})

test('a row leaving the window revokes its URL; coming back makes a new one; the rest stay', async () => {
  const a = png(1)
  const b = png(2)
  const view = await twoTurns(a, b)
  const urls = attachmentUrls(view, page!.client, { gcTime: 0 })
  const [idA, idB] = [await idOf(a), await idOf(b)]
  await whenUrls(urls, () => urls.get(idA) !== undefined && urls.get(idB) !== undefined)
  const [urlA, urlB] = [urls.get(idA)!, urls.get(idB)!]

  await view.rewind('u2')
  await until(view, (s) => !s.rows.some((r) => r.key === 'u2'))
  await whenUrls(urls, () => urls.get(idB) === undefined)
  expect(revoked).toEqual([urlB])
  expect(urls.get(idA)).toBe(urlA)

  await view.switchBranch('u2-answer')
  await until(view, (s) => s.rows.some((r) => r.key === 'u2'))
  await whenUrls(urls, () => urls.get(idB) !== undefined)
  expect(urls.get(idB)).not.toBe(urlB)
  expect(made).toHaveLength(3)
  expect(revoked).toEqual([urlB])

  urls.dispose()
  expect(revoked.sort()).toEqual([...made].sort())
  view.dispose()
})

test('a row back within gcTime keeps its URL: nothing revoked, nothing read again', async () => {
  const b = png(2)
  const view = await twoTurns(png(1), b)
  const urls = attachmentUrls(view, page!.client, { gcTime: 60_000 })
  const idB = await idOf(b)
  await whenUrls(urls, () => urls.get(idB) !== undefined)
  const urlB = urls.get(idB)
  const reads = page!.calls.get('attachment')
  await view.rewind('u2')
  await until(view, (s) => !s.rows.some((r) => r.key === 'u2'))
  await view.switchBranch('u2-answer')
  await until(view, (s) => s.rows.some((r) => r.key === 'u2'))
  expect(keys(view)).toEqual(['u1', 'u1-answer', 'u2', 'u2-answer'])
  expect(urls.get(idB)).toBe(urlB)
  expect(page!.calls.get('attachment')).toBe(reads)
  expect(revoked).toEqual([])
  // Disposed with a collection still waiting: revoked at once, the timer does nothing later.
  urls.dispose()
  expect(revoked.sort()).toEqual([...made].sort())
  view.dispose()
})

test('dispose revokes every URL, even one whose bytes arrive afterwards, and tells subscribers', async () => {
  const a = png(1)
  const b = png(2)
  const view = await twoTurns(a, b)
  const early = attachmentUrls(view, page!.client)
  const [idA, idB] = [await idOf(a), await idOf(b)]
  await whenUrls(early, () => early.get(idA) !== undefined && early.get(idB) !== undefined)
  const told = vi.fn()
  early.subscribe(told)
  early.dispose()
  expect(told).toHaveBeenCalledTimes(1)
  expect(revoked.sort()).toEqual([...made].sort())
  expect(early.get(idA)).toBeUndefined()

  // Disposed before its reads answer: no URL is ever made.
  const late = attachmentUrls(view, page!.client)
  const before = made.length
  late.dispose()
  await page!.client.attachment(idB) // a read sent after theirs: they have answered
  expect(made).toHaveLength(before)
  view.dispose()
})

test('a queued input’s file gets a URL once the engine stored it, revoked when the input is cancelled', async () => {
  page = await openPage()
  const { id } = await page.client.createSession({ title: 'queue' })
  await page.engine.admit(id, { id: 'busy', text: 'running turn' })
  await page.engine.promote(id, 'settled') // a turn is open: the next input waits in the queue
  const view = page.client.open(id)
  await until(view, (s) => s.status === 'ready')
  const urls = attachmentUrls(view, page.client, { gcTime: 0 })
  const image = png(5, 5, 5)
  const attachmentId = await idOf(image)
  const receipt = await view.admit('later', {
    id: 'q1',
    delivery: 'queue',
    attachments: [{ name: 'later.png', mediaType: 'image/png', data: image }],
  })
  expect(receipt.attachments?.[0]?.attachmentId).toBe(attachmentId)
  await until(view, (s) => s.queued.some((input) => input.id === 'q1' && input.state === 'pending'))
  await whenUrls(urls, () => urls.get(attachmentId) !== undefined)
  const url = urls.get(attachmentId)
  await view.cancel('q1')
  await until(view, (s) => !s.queued.some((input) => input.id === 'q1'))
  await whenUrls(urls, () => urls.get(attachmentId) === undefined)
  expect(revoked).toEqual([url])
  urls.dispose()
  view.dispose()
})

test('bytes not stored, or a read that fails, give no URL and no error; a failed read is tried again', async () => {
  const a = png(1)
  const b = png(2)
  const view = await twoTurns(a, b)
  const [idA, idB] = [await idOf(a), await idOf(b)]
  const asked: string[] = []
  let failB = true
  const urls = attachmentUrls(
    view,
    {
      async attachment(attachmentId) {
        asked.push(attachmentId)
        if (attachmentId === idA) return undefined // not stored
        if (failB) throw new Error('worker gone')
        return page!.client.attachment(attachmentId)
      },
    },
    { gcTime: 0 },
  )
  await new Promise((resolve) => setTimeout(resolve, 20))
  expect([urls.get(idA), urls.get(idB)]).toEqual([undefined, undefined])
  expect(made).toEqual([])
  // The next snapshot (here: a pending input shown) reads the failed one again, not the absent one.
  failB = false
  view.admit('one more', { delivery: 'queue' }).catch(() => undefined)
  await whenUrls(urls, () => urls.get(idB) !== undefined)
  expect(asked.filter((x) => x === idB)).toHaveLength(2)
  expect(asked.filter((x) => x === idA)).toHaveLength(1)
  expect(urls.get(idA)).toBeUndefined()
  urls.dispose()
  view.dispose()
})
