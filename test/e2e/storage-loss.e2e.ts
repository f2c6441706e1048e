/**
 * The database taken from under a running app, in Chromium: another connection opening a newer
 * version (what a tab with the next release does), and the origin's IndexedDB data cleared over
 * the DevTools protocol (what "Clear site data" does). The worker's engine must notice, tell the
 * open view (the playground shows the reason and disables its composer), and refuse calls with
 * the reason, instead of hanging or writing into a freshly created database.
 */
import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { demoSuite, noticeText, send } from './harness'

const { start, figures } = demoSuite()

/** A page-side call's failure as `code` and `details.reason`. */
async function refusalOf(page: Page, call: 'listSessions' | 'admit') {
  return page.evaluate(async (method) => {
    const app = window.__sessionline!
    try {
      if (method === 'admit') await app.client.admit(app.sessionId!, { text: 'after the loss' })
      else await app.client.listSessions()
      return { code: 'accepted' }
    } catch (error) {
      const { code, details } = error as { code?: string; details?: { reason?: string } }
      return { code, reason: details?.reason }
    }
  }, call)
}

const composerEnabled = (page: Page) =>
  page.$eval('#composer-input', (input) => !(input as HTMLTextAreaElement).disabled)

describe('storage taken away (Chromium)', () => {
  test('a newer version opened by another connection: the view says upgraded, calls refuse, the upgrade is not blocked', async () => {
    const { page } = await start('?wordDelayMs=0')
    await send(page, 'written before the upgrade')
    await page.waitForFunction(async () => {
      const app = window.__sessionline!
      return (
        (await app.client.pending(app.sessionId!)).length +
          (await app.client.page(app.sessionId!)).messages.length >
        0
      )
    })
    const started = Date.now()
    // Another tab's connection (here: the page's own, beside the worker's) asks for a newer version.
    const upgraded = await page.evaluate(
      () =>
        new Promise<{ version: number; blocked: boolean }>((resolve, reject) => {
          let blocked = false
          const request = indexedDB.open('sessionline', 1000)
          request.onblocked = () => {
            blocked = true
          }
          request.onsuccess = () => {
            const version = request.result.version
            request.result.close()
            resolve({ version, blocked })
          }
          request.onerror = () => reject(request.error)
        }),
    )
    figures['upgrade: newer connection open after (ms)'] = String(Date.now() - started)
    expect(upgraded).toEqual({ version: 1000, blocked: false })
    await page.waitForFunction(() => /upgraded/.test(document.querySelector('#notice')?.textContent ?? ''))
    expect(await noticeText(page)).toMatch(/reload/)
    expect(await composerEnabled(page)).toBe(false)
    expect(await refusalOf(page, 'listSessions')).toEqual({ code: 'storage_unavailable', reason: 'upgraded' })
  })

  test('site data cleared while the app runs: the next call refuses database_deleted, the view reports it, nothing is recreated', async () => {
    const { page, browser } = await start('?wordDelayMs=0')
    const origin = new URL(page.url()).origin
    const cdp = await browser.context.newCDPSession(page)
    await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'indexeddb' })
    // (The engine also probes on the connection's close event, which finds the loss at once in
    // fake-indexeddb; in Chromium 156 the probe's open does not complete after a clear, so here
    // the next call's reopen finds it.)
    expect(await refusalOf(page, 'admit')).toEqual({
      code: 'storage_unavailable',
      reason: 'database_deleted',
    })
    await page.waitForFunction(() => /deleted/.test(document.querySelector('#notice')?.textContent ?? ''))
    expect(await composerEnabled(page)).toBe(false)
    // Nothing was created again behind the app's back.
    const names = await page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name))
    expect(names).not.toContain('sessionline')
  })
})
