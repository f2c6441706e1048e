import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type BrowserContext, chromium, type Page, type Worker } from 'playwright-core'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { startServer } from '../../demo/serve.mjs'
import { CHROMIUM_ARGS as ARGS, CHROMIUM } from '../support/chromium.mjs'

export const DIST = fileURLToPath(new URL('../../demo/dist/', import.meta.url))
export const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url))
/** run.mjs makes one folder per run and removes it (and kills what runs from it) at the end. */
const RUN_DIR = process.env.SESSIONLINE_E2E_TMP ?? join(tmpdir(), 'sessionline-e2e')

export interface Browser {
  context: BrowserContext
  /**
   * Console errors (of the pages, their workers and the service worker), uncaught page errors
   * and crashes seen so far. A failed request shows here as Chromium's console error for it.
   */
  errors: string[]
  /** A new tab that records its errors into `errors`. */
  open(url: string): Promise<Page>
  close(): Promise<void>
}

/** Pids of the browser processes started from `userDataDir` (direct children of this process). */
function browserPids(userDataDir: string): number[] {
  try {
    const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    return out
      .split('\n')
      .filter((line) => line.includes(userDataDir))
      .map((line) => Number.parseInt(line.trim(), 10))
      .filter((pid) => Number.isInteger(pid) && pid > 0)
  } catch {
    return []
  }
}

/**
 * Chromium with a real profile on disk (IndexedDB and the service worker cache persist across
 * reloads, unlike an incognito context), in a fresh folder for every test.
 */
export async function launchBrowser(
  options: { viewport?: { width: number; height: number } } = {},
): Promise<Browser> {
  if (!existsSync(join(DIST, 'index.html')))
    throw new Error('demo/dist is missing: run `npm run demo:build` first')
  await mkdir(RUN_DIR, { recursive: true })
  const userDataDir = await mkdtemp(join(RUN_DIR, 'profile-'))
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...ARGS],
    viewport: options.viewport ?? { width: 1280, height: 800 },
    timeout: 30_000,
  })
  const pids = browserPids(userDataDir)
  const errors: string[] = []
  const watch = (page: Page) => {
    page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(`console: ${message.text()}`)
    })
    page.on('worker', (worker) =>
      worker.on('console', (message) => {
        if (message.type() === 'error') errors.push(`worker console: ${message.text()}`)
      }),
    )
    page.on('crash', () => errors.push('page crashed'))
  }
  context.pages().forEach(watch)
  context.on('page', watch)
  const watchServiceWorker = (worker: Worker) =>
    worker.on('console', (message) => {
      if (message.type() === 'error') errors.push(`service worker console: ${message.text()}`)
    })
  context.serviceWorkers().forEach(watchServiceWorker)
  context.on('serviceworker', watchServiceWorker)
  return {
    context,
    errors,
    async open(url) {
      const blank = context.pages().find((page) => page.url() === 'about:blank')
      const page = blank ?? (await context.newPage())
      await page.goto(url)
      await waitReady(page)
      return page
    },
    async close() {
      const closed = context.close().then(
        () => true,
        () => false,
      )
      const timeout = new Promise<boolean>((done) => setTimeout(() => done(false), 10_000))
      if (!(await Promise.race([closed, timeout]))) {
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL')
          } catch {
            // Already gone.
          }
        }
      }
      await rm(userDataDir, { recursive: true, force: true, maxRetries: 3 })
    },
  }
}

/** The app sets `data-ready` on <html> once it has opened a session. */
export async function waitReady(page: Page): Promise<void> {
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 })
}

export async function newSession(page: Page): Promise<string> {
  const before = page.url()
  await page.click('#new-session')
  await page.waitForFunction((url) => location.href !== url && /#\/session\//.test(location.hash), before)
  await page.waitForSelector('.transcript__empty:not([hidden])')
  return new URL(page.url()).hash.replace('#/session/', '')
}

/** Types `text` into the composer and sends it: Enter steers, Ctrl+Enter queues. */
export async function send(page: Page, text: string, delivery: 'steer' | 'queue' = 'steer'): Promise<void> {
  await page.fill('#composer-input', text)
  await page.press('#composer-input', delivery === 'queue' ? 'Control+Enter' : 'Enter')
}

/** Selector of the transcript row whose text is exactly `text`. */
export const rowWithText = (text: string) =>
  `.transcript__rows > .row:has(.part--text:text-is(${JSON.stringify(text)}))`

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true })
  const path = join(ARTIFACTS, `${name}.png`)
  await page.screenshot({ path })
  return path
}

/** Visible notice text (the app reports every failure there), or '' when none is shown. */
export async function noticeText(page: Page): Promise<string> {
  return page.$eval('#notice', (element) =>
    (element as HTMLElement).hidden ? '' : (element.textContent ?? ''),
  )
}

export interface StartOptions {
  viewport?: { width: number; height: number }
}

/**
 * The lifecycle every e2e file shares: one static server for the file, one fresh browser per
 * test (closed after it, with screenshots of every tab when it failed), and no console error
 * or uncaught error allowed in a passing test. `figures` are printed at the end of the file.
 */
export function demoSuite() {
  let server: { url: string; close(): Promise<unknown> } | undefined
  let browser: Browser | undefined
  const figures: Record<string, string> = {}

  beforeAll(async () => {
    server = await startServer({ root: DIST })
  })
  afterAll(async () => {
    await server?.close()
    if (Object.keys(figures).length > 0) console.log('e2e figures:', figures)
  })
  afterEach(async (context) => {
    const current = browser
    browser = undefined
    if (!current) return
    try {
      if (context.task.result?.state === 'fail') {
        const name = context.task.name.split(':')[0]!.replace(/\W+/g, '-')
        for (const [index, page] of current.context.pages().entries()) {
          await screenshot(page, `failed-${name}-${index}`).catch(() => undefined)
        }
        if (current.errors.length > 0) console.error('browser errors:', current.errors)
      } else {
        // Any console error or uncaught error anywhere in the test fails it.
        expect(current.errors).toEqual([])
      }
    } finally {
      await current.close()
    }
  })

  async function start(query = '', options: StartOptions = {}): Promise<{ page: Page; browser: Browser }> {
    if (!server) throw new Error('the demo server is not running')
    browser = await launchBrowser(options)
    const page = await browser.open(`${server.url}${query}`)
    return { page, browser }
  }

  return { start, figures, url: () => server?.url ?? '' }
}
