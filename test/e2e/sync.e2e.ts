/**
 * Two devices share a session through the sync server in the playground (issue 29, decision
 * 0036): two Chromium profiles (two IndexedDBs), the built playground and the streams on ONE
 * origin (the static server forwards `/v1/stream/` to the reference server), Settings pointed at
 * that origin. A writes a turn and syncs; B opens the session by id and sees it; B goes offline,
 * both write a turn, B comes back: both show the same rows on the same head, the turns written
 * apart as two branches of the same prompt, and the state `live` with nothing pending.
 */
import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { startServer } from '../../demo/serve.mjs'
import { type SyncServer, startSyncServer } from '../sync/server.mjs'
import {
  type Browser,
  DIST,
  launchBrowser,
  newSession,
  noticeText,
  rowWithText,
  screenshot,
  send,
} from './harness'

const rows = '.transcript__rows > .row'
const WAIT = { timeout: 30_000 }

let sync: SyncServer | undefined
let app: { url: string; close(): Promise<void> } | undefined
const devices: Browser[] = []

beforeAll(async () => {
  sync = await startSyncServer()
  app = await startServer({ root: DIST, syncServer: sync.url })
})
afterEach(async (context) => {
  const failed = context.task.result?.state === 'fail'
  for (const [index, device] of devices.entries()) {
    if (failed) {
      for (const page of device.context.pages())
        await screenshot(page, `failed-sync-device-${index}`).catch(() => undefined)
      if (device.errors.length > 0) console.error(`device ${index} errors:`, device.errors)
    }
  }
  try {
    // No console error anywhere, B's offline requests included (the sync reports them as a state).
    if (!failed) for (const device of devices) expect(device.errors).toEqual([])
  } finally {
    await Promise.all(devices.splice(0).map((device) => device.close()))
  }
})
afterAll(async () => {
  await app?.close()
  await sync?.close()
})

async function device(): Promise<{ page: Page; browser: Browser }> {
  const browser = await launchBrowser()
  devices.push(browser)
  const page = await browser.open(`${app!.url}?wordDelayMs=5&toolRate=0`)
  return { page, browser }
}

/** Sends `text` and waits until its turn's answer is complete. */
async function exchange(page: Page, text: string): Promise<void> {
  const done = `${rows}[data-role="assistant"][data-state="complete"]`
  const answers = await page.locator(done).count()
  await send(page, text)
  await page.waitForFunction(
    ([selector, count]) => document.querySelectorAll(selector as string).length > (count as number),
    [done, answers] as const,
    WAIT,
  )
  await page.waitForSelector('#stop:disabled', WAIT)
}

const badge = (page: Page) =>
  page.$eval('#sync-status', (element) =>
    (element as HTMLElement).hidden
      ? 'hidden'
      : `${(element as HTMLElement).dataset.state} ${(element as HTMLElement).dataset.pending}`,
  )
const settled = (page: Page) =>
  page.waitForSelector('#sync-status[data-state="live"][data-pending="0"]', WAIT)
const prompts = (page: Page) =>
  page.$$eval(`${rows}[data-role="user"] .part--text`, (nodes) => nodes.map((n) => n.textContent))
const rowsShown = (page: Page) =>
  page.$$eval(rows, (nodes) =>
    nodes.map(
      (n) => `${(n as HTMLElement).dataset.role}: ${n.querySelector('.part--text')?.textContent ?? ''}`,
    ),
  )
/** The session's whole log as this device's engine holds it. */
const log = (page: Page, id: string) =>
  page.evaluate(async (sessionId) => {
    const events = await window.__sessionline!.client.events(sessionId, { afterSeq: 0, limit: 10_000 })
    return events.map(({ seq, type, at }) => ({ seq, type, at }))
  }, id)

describe('playground sync between two devices', () => {
  test('A shares a session, B opens it by id; turns written while B was offline become branches on both', async () => {
    const started = performance.now()
    const a = await device()
    const id = await newSession(a.page)
    await exchange(a.page, 'Written on A first')
    expect(await badge(a.page)).toBe('hidden') // no sync server set: the playground stays local

    // A: Settings → the sync server is this same origin (its /v1/stream/ goes to the server).
    const server = app!.url.replace(/\/$/, '')
    await a.page.click('#open-settings')
    expect(await a.page.textContent('#share-session-id')).toBe(id)
    await a.page.fill('#settings input[name="syncUrl"]', 'ftp://127.0.0.1:4437')
    await a.page.click('#settings button[type="submit"]')
    expect(await a.page.textContent('#settings .settings__error')).toContain('http or https')
    await a.page.fill('#settings input[name="syncUrl"]', server)
    await a.page.click('#settings button[type="submit"]')
    await a.page.waitForSelector('#settings', { state: 'hidden' })
    await settled(a.page)

    // B: "Open a synced session" with the id A shows.
    const b = await device()
    await b.page.click('#open-synced')
    // An id the server has no stream for: said in the dialog, nothing created here.
    await b.page.fill('#open-synced-dialog input[name="sessionId"]', 'no-such-session')
    await b.page.fill('#open-synced-dialog input[name="syncUrl"]', server)
    await b.page.click('#open-synced-dialog button[type="submit"]')
    await b.page.waitForSelector(
      '#open-synced-dialog .settings__error:text-matches("^No session no-such-session")',
      WAIT,
    )
    expect(await b.page.$$eval('[data-session]', (items) => items.length)).toBe(1) // its first session
    expect(await b.page.evaluate(() => localStorage.getItem('sessionline-demo:sync-url'))).toBeNull()
    await b.page.fill('#open-synced-dialog input[name="sessionId"]', id)
    await b.page.click('#open-synced-dialog button[type="submit"]')
    await b.page.waitForSelector('#open-synced-dialog', { state: 'hidden', ...WAIT })
    expect(new URL(b.page.url()).hash).toBe(`#/session/${id}`)
    await b.page.waitForSelector(rowWithText('Written on A first'), WAIT)
    await settled(b.page)
    expect(await rowsShown(b.page)).toEqual(await rowsShown(a.page))
    const shared = performance.now()

    // B goes offline and writes a turn: it stays local, counted as pending.
    await b.browser.context.setOffline(true)
    await exchange(b.page, 'Written on B offline')
    await b.page.waitForSelector('#sync-status[data-state="offline"]', WAIT)
    expect(Number(await b.page.getAttribute('#sync-status', 'data-pending'))).toBeGreaterThan(0)
    // Meanwhile A writes a turn after the same prompt, and the server has it.
    await exchange(a.page, 'Written on A meanwhile')
    await settled(a.page)
    expect(await prompts(b.page)).toEqual(['Written on A first', 'Written on B offline'])

    // B is back: both converge on the same log, rows and head.
    const back = performance.now()
    await b.browser.context.setOffline(false)
    await settled(b.page)
    await expect.poll(() => log(a.page, id), WAIT).toEqual(await log(b.page, id))
    await settled(a.page)
    const converged = performance.now()
    // B pushed last, so its turn holds the head; A's is the other branch of the same place.
    const expected = ['Written on A first', 'Written on B offline']
    await expect.poll(() => prompts(a.page), WAIT).toEqual(expected)
    expect(await prompts(b.page)).toEqual(expected)
    expect(await rowsShown(a.page)).toEqual(await rowsShown(b.page))
    for (const { page } of [a, b])
      expect(
        await page
          .locator(rowWithText('Written on B offline'))
          .locator('.branch-picker__label')
          .textContent(),
      ).toBe('2 / 2')
    expect([await badge(a.page), await badge(b.page)]).toEqual(['live 0', 'live 0'])

    // A steps to its own branch: the head move reaches B too.
    await a.page
      .locator(rowWithText('Written on B offline'))
      .getByRole('button', { name: 'Previous branch' })
      .click()
    const other = ['Written on A first', 'Written on A meanwhile']
    await expect.poll(() => prompts(a.page), WAIT).toEqual(other)
    await expect.poll(() => prompts(b.page), WAIT).toEqual(other)
    expect(
      await b.page
        .locator(rowWithText('Written on A meanwhile'))
        .locator('.branch-picker__label')
        .textContent(),
    ).toBe('1 / 2')
    await settled(a.page)
    await settled(b.page)
    expect(await log(a.page, id)).toEqual(await log(b.page, id))

    // B's worker dies (as a browser ends one): the client's fresh worker syncs the session again.
    await b.page.evaluate(() => window.__sessionline!.killWorker())
    // The client notices at its next call (a missed heartbeat); that read fails, nothing is lost.
    void b.page.evaluate(() => window.__sessionline!.client.listSessions().catch(() => undefined))
    await b.page.waitForFunction(() => window.__sessionline!.workers === 2, null, WAIT)
    await exchange(a.page, 'Written on A after B restarted')
    await b.page.waitForSelector(rowWithText('Written on A after B restarted'), WAIT)
    await settled(a.page)
    await settled(b.page)
    expect(await log(a.page, id)).toEqual(await log(b.page, id))
    expect([await noticeText(a.page), await noticeText(b.page)]).toEqual(['', ''])
    await screenshot(a.page, 'sync-device-a')
    await screenshot(b.page, 'sync-device-b')
    console.log('e2e figures:', {
      'A shares, B opens and shows it (ms)': Math.round(shared - started),
      'B back online until both logs agree (ms)': Math.round(converged - back),
    })
  })
})
