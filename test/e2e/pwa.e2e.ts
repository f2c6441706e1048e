import { execFile } from 'node:child_process'
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, test } from 'vitest'
import { startServer } from '../../demo/serve.mjs'
import {
  type Browser,
  DIST,
  launchBrowser,
  newSession,
  noticeText,
  rowWithText,
  send,
  waitReady,
} from './harness'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const lastAssistant = '.transcript__rows > .row[data-role="assistant"]:last-child'
const SECOND_BUILD = 'e2e-second-build'

/** A build of the demo into `outDir`, named `build` (what a deployment of new code looks like). */
async function buildDemo(outDir: string, build: string): Promise<void> {
  await promisify(execFile)(
    join(ROOT, 'node_modules', '.bin', 'vite'),
    ['build', '--config', 'demo/vite.config.ts', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'error'],
    { cwd: ROOT, env: { ...process.env, DEMO_BUILD: build } },
  )
}

/** Replaces what `root` serves with `from`, as a deployment does. */
async function deploy(from: string, root: string): Promise<void> {
  for (const entry of await readdir(root)) await rm(join(root, entry), { recursive: true, force: true })
  await cp(from, root, { recursive: true })
}

const buildOf = (page: import('playwright-core').Page) =>
  page.evaluate(() => document.documentElement.dataset.build)

let browser: Browser | undefined
const cleanups: (() => Promise<unknown>)[] = []
afterEach(async (context) => {
  try {
    if (browser && context.task.result?.state !== 'fail') expect(browser.errors).toEqual([])
    else if (browser?.errors.length) console.error('browser errors:', browser.errors)
  } finally {
    await browser?.close()
    browser = undefined
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  }
})

describe('the playground as an offline PWA (Workbox) in Chromium', () => {
  test('a new build is offered, fetches only the files that changed, and once accepted runs with the session intact, also offline', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    const root = await mkdtemp(join(tmpdir(), 'sessionline-pwa-'))
    const next = await mkdtemp(join(tmpdir(), 'sessionline-pwa-next-'))
    cleanups.push(
      () => rm(root, { recursive: true, force: true }),
      () => rm(next, { recursive: true, force: true }),
    )
    await cp(DIST, root, { recursive: true })
    const requests: string[] = []
    const server = await startServer({ root, onRequest: (path) => requests.push(path) })
    cleanups.push(() => server.close())

    browser = await launchBrowser()
    const page = await browser.open(`${server.url}?wordDelayMs=5&toolRate=0`)
    expect(await buildOf(page)).toBe(version)
    const id = await newSession(page)
    await send(page, 'Written before the update')
    await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 20_000 })
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready
    })

    // Deploy a second build over the first; the open tab learns of it on its next navigation.
    await buildDemo(next, SECOND_BUILD)
    const before = new Set(await readdir(join(root, 'assets')))
    const changed = (await readdir(join(next, 'assets'))).filter((file) => !before.has(file))
    await deploy(next, root)
    requests.length = 0
    await page.reload()
    await waitReady(page)
    await page.waitForSelector('#update-prompt:not([hidden])', { timeout: 30_000 })
    // Still the old build until the reader accepts: nothing is swapped under the open page.
    expect(await buildOf(page)).toBe(version)

    // Per-file revisions: only the service worker, the changed shell and the new bundle were
    // downloaded; the worker bundle, styles and icons, unchanged, came from the old cache.
    const downloaded = [...new Set(requests)].filter((path) => path !== '/sw.js').sort()
    expect(changed.filter((file) => !file.endsWith('.map')).length).toBeGreaterThan(0)
    expect(downloaded).toEqual(
      [
        '/index.html',
        ...changed.filter((file) => !file.endsWith('.map')).map((file) => `/assets/${file}`),
      ].sort(),
    )

    const precached = (await readFile(join(root, 'sw.js'), 'utf8')).match(/"url":"/g)?.length ?? 0
    console.log(
      `e2e figures: the update downloaded ${downloaded.length} of ${precached} precached files:`,
      downloaded,
    )

    await Promise.all([page.waitForEvent('load'), page.click('#update-reload')])
    await waitReady(page)
    expect(await buildOf(page)).toBe(SECOND_BUILD)
    expect(page.url()).toContain(id)
    await page.waitForSelector(rowWithText('Written before the update'))
    expect(await page.isHidden('#update-prompt')).toBe(true)

    // The new build is what works offline now, for a URL never visited too (the navigation fallback).
    await browser.context.setOffline(true)
    const offline = await page.goto(`${server.url}?toolRate=0&wordDelayMs=5&never=visited#/session/${id}`)
    expect(offline?.fromServiceWorker()).toBe(true)
    await waitReady(page)
    expect(await buildOf(page)).toBe(SECOND_BUILD)
    await page.waitForSelector(rowWithText('Written before the update'))
    await send(page, 'Written offline after the update')
    await page.waitForSelector(`${lastAssistant}[data-turn="2"][data-state="complete"]`, { timeout: 20_000 })
    expect(await noticeText(page)).toBe('')
  })
})
