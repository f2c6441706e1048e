/**
 * A pasted image survives (issue 25): pasted into the playground's composer it shows as a
 * thumbnail, is sent with the text, renders in the transcript from the engine's stored bytes,
 * renders again after a reload, and comes back whole from an export imported as a new file of
 * the same session elsewhere (here: after deleting it).
 */
import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { demoSuite, newSession, waitReady } from './harness'

const { start } = demoSuite()

/** A 2×2 red PNG. */
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg=='

/** Pastes a PNG into the composer the way a browser delivers a screenshot. */
async function pasteImage(page: Page): Promise<void> {
  await page.evaluate((base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))
    const transfer = new DataTransfer()
    transfer.items.add(new File([bytes], 'image.png', { type: 'image/png' }))
    const input = document.querySelector('#composer-input') as HTMLTextAreaElement
    input.dispatchEvent(
      new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }),
    )
  }, PNG_BASE64)
}

/** The transcript's image of a user row, once it has decoded. */
const renderedImage = (page: Page) =>
  page.waitForFunction(
    () => {
      const image = document.querySelector(
        '.transcript__rows > .row[data-role="user"] .file-card__image',
      ) as HTMLImageElement | null
      return (
        image && !image.hidden && image.src.startsWith('blob:') && image.complete && image.naturalWidth === 2
      )
    },
    null,
    { timeout: 20_000 },
  )

describe('attachments in the playground (Chromium)', () => {
  test('a pasted image shows as a thumbnail, renders in the transcript, and again after a reload', async () => {
    const { page } = await start('?wordDelayMs=0&toolRate=0')
    await waitReady(page)
    const sessionId = await newSession(page)
    await pasteImage(page)
    await page.waitForSelector('.composer__file img')
    await page.fill('#composer-input', 'what colour is this?')
    await page.press('#composer-input', 'Enter')
    expect(await page.$$('.composer__file')).toHaveLength(0)
    await renderedImage(page)
    await page.reload()
    await waitReady(page)
    expect(new URL(page.url()).hash).toBe(`#/session/${sessionId}`)
    await renderedImage(page)

    // Export, delete, import: the same session with the same bytes.
    const restored = await page.evaluate(async (id) => {
      const { client } = window.__sessionline!
      const file = await client.exportSession(id)
      await client.deleteSession(id)
      const gone = (await client.listSessions()).some((s) => s.id === id)
      const info = await client.importTranscript({ blob: file })
      const rows = (await client.page(id)).messages
      const part = rows.flatMap((r) => r.parts).find((p) => p.type === 'file')
      const blob = part?.type === 'file' ? await client.attachment(part.attachmentId) : undefined
      return { gone, id: info.id, size: blob?.size, type: blob?.type }
    }, sessionId)
    expect(restored).toEqual({ gone: false, id: sessionId, size: atob(PNG_BASE64).length, type: 'image/png' })
  })
})
