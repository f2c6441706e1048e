import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { startServer } from '../../demo/serve.mjs'
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.mjs'

const STATIC = fileURLToPath(new URL('../../storybook-static/', import.meta.url))

let server: { url: string; close(): Promise<unknown> } | undefined
let browser: Browser | undefined
let context: BrowserContext | undefined
let errors: string[] = []

beforeAll(async () => {
  if (!existsSync(join(STATIC, 'iframe.html')))
    throw new Error('storybook-static is missing: run `npm run build-storybook` first')
  server = await startServer({ root: STATIC })
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS] })
})
afterAll(async () => {
  await browser?.close()
  await server?.close()
})
afterEach(async () => {
  await context?.close()
  context = undefined
})

/** A fresh browser context on `id`'s story (the preview iframe alone), recording every error. */
async function openStory(id: string): Promise<Page> {
  if (!browser || !server) throw new Error('not started')
  errors = []
  context = await browser.newContext({ viewport: { width: 1100, height: 800 } })
  const page = await context.newPage()
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`)
  })
  page.on('worker', (worker) =>
    worker.on('console', (message) => {
      if (message.type() === 'error') errors.push(`worker console: ${message.text()}`)
    }),
  )
  await page.goto(`${server.url}iframe.html?id=${id}&viewMode=story`)
  return page
}

/** Switches the preview to another story in place, as the Storybook UI does (unmounting the first). */
async function switchStory(page: Page, id: string): Promise<void> {
  await page.evaluate((storyId) => {
    const channel = (
      window as unknown as { __STORYBOOK_ADDONS_CHANNEL__: { emit(...args: unknown[]): void } }
    ).__STORYBOOK_ADDONS_CHANNEL__
    channel.emit('setCurrentStory', { storyId, viewMode: 'story' })
  }, id)
}

const storyDatabases = (page: Page) =>
  page.evaluate(async () =>
    (await indexedDB.databases())
      .map((database) => database.name ?? '')
      .filter((name) => name.startsWith('sessionline-story-')),
  )

describe('Storybook stories in Chromium (static build)', () => {
  test('the index lists a story for each playground part and the React chat', async () => {
    const index = JSON.parse(await readFile(join(STATIC, 'index.json'), 'utf8')) as {
      entries: Record<string, { type: string; title: string }>
    }
    const titles = new Set(
      Object.values(index.entries)
        .filter((entry) => entry.type === 'story')
        .map((entry) => entry.title),
    )
    expect([...titles].sort()).toEqual(
      expect.arrayContaining([
        'Playground/History',
        'Playground/Import report',
        'Playground/Queue tray',
        'Playground/Transcript',
        'Playground/Turn rail',
        'React chat',
      ]),
    )
  })

  test('transcript, streaming: the seeded model streams a markdown answer to completion, with no console error', async () => {
    const page = await openStory('playground-transcript--streaming')
    const answer = '.row[data-role="assistant"]'
    await page.waitForSelector(`${answer}[data-state="streaming"]`, { timeout: 30_000 })
    await page.waitForSelector(`${answer}[data-state="complete"]`, { timeout: 60_000 })
    const text = await page.textContent(`${answer} .part--markdown`)
    expect(text).toContain('You said: "Explain how steering differs from queueing".')
    expect(errors).toEqual([])
  })

  test('transcript, markdown answer: list, code, table and link render, raw HTML stays text', async () => {
    const page = await openStory('playground-transcript--markdown-answer')
    await page.waitForSelector('.part--markdown table')
    const shown = await page.$eval('.part--markdown', (part) => ({
      items: part.querySelectorAll(':scope > ol > li').length,
      code: part.querySelector('pre > code.language-ts') !== null,
      link: part.querySelector('a')?.getAttribute('href'),
      bold: part.querySelectorAll('b, [onclick]').length,
      text: part.textContent ?? '',
    }))
    expect(shown).toMatchObject({ items: 2, code: true, link: 'https://example.com/design', bold: 0 })
    expect(shown.text).toContain('<b onclick="x()">this</b>')
    expect(errors).toEqual([])
  })

  test('queue tray: three inputs queued behind a running turn wait in the tray', async () => {
    const page = await openStory('playground-queue-tray--queued-behind-a-running-turn')
    await page.waitForSelector('.row[data-role="assistant"][data-state="streaming"]', { timeout: 30_000 })
    await expect
      .poll(() => page.$$eval('.tray__item', (items) => items.map((item) => item.textContent ?? '')), {
        timeout: 20_000,
      })
      .toEqual([
        expect.stringContaining('Then list its edge cases'),
        expect.stringContaining('Suggest a test for each'),
        expect.stringContaining('Draft the commit message'),
      ])
    expect(await page.textContent('.tray__title')).toBe('queued · 3')
    expect(errors).toEqual([])
  })

  test('history, branch picker: the twice-edited prompt shows "3 / 3", and the previous arrow shows the second version', async () => {
    const page = await openStory('playground-history--branch-picker')
    const edited = page.locator('.row[data-role="user"]', { hasText: 'And a branch, in one line?' })
    await expect
      .poll(() => edited.locator('.branch-picker__label').textContent(), { timeout: 30_000 })
      .toBe('3 / 3')
    await edited.getByRole('button', { name: 'Previous branch' }).click()
    await page.waitForSelector(
      '.row[data-role="user"]:has-text("And a branch, briefly?") .branch-picker__label',
    )
    expect(
      await page.textContent(
        '.row[data-role="user"]:has-text("And a branch, briefly?") .branch-picker__label',
      ),
    ).toBe('2 / 3')
    expect(errors).toEqual([])
  })

  test('history, compacted region: the summary row opens the two turns it replaced', async () => {
    const page = await openStory('playground-history--compacted-region')
    const summary = page.locator('.row[data-role="summary"]')
    await summary.waitFor({ timeout: 30_000 })
    await summary.locator('details.replaced > summary').click()
    await expect
      .poll(() => summary.locator('.replaced__row[data-role="user"] .replaced__text').allTextContents())
      .toEqual(['What is a history tree?', 'And a branch?'])
    expect(errors).toEqual([])
  })

  test('history, aborted compaction: no summary row, both turns still shown', async () => {
    const page = await openStory('playground-history--aborted-compaction')
    await expect
      .poll(() => page.$$eval('.row[data-role="user"]', (rows) => rows.map((row) => row.textContent ?? '')), {
        timeout: 30_000,
      })
      .toEqual([expect.stringContaining('What is a history tree?'), expect.stringContaining('And a branch?')])
    expect(await page.$$('.row[data-role="summary"]')).toHaveLength(0)
    expect(await page.$$('.row[data-role="assistant"]')).toHaveLength(2)
    expect(errors).toEqual([])
  })

  test('history, reordered tray: the input moved to the front is shown first', async () => {
    const page = await openStory('playground-history--reordered-tray')
    await expect
      .poll(() => page.$$eval('.tray__text', (items) => items.map((item) => item.textContent ?? '')), {
        timeout: 30_000,
      })
      .toEqual(['Draft the commit message', 'Then list its edge cases', 'Suggest a test for each'])
    expect(errors).toEqual([])
  })

  test('turn rail, 10,000 turns: the same rows every time and a rail over every turn, with only the last page loaded', {
    timeout: 240_000,
  }, async () => {
    const page = await openStory('playground-turn-rail--ten-thousand-turns')
    await page.waitForSelector('.row[data-turn="10000"]', { timeout: 90_000 })
    // demo/seed.ts, turn 10000: topic 10000 % 10 = 0, "the retry policy for flaky uploads".
    expect(await page.textContent('.row[data-turn="10000"][data-role="user"] .part--text')).toBe(
      'Turn 10000: can you look into the retry policy for flaky uploads?',
    )
    expect(await page.$eval('.rail__track', (track) => (track as HTMLElement).style.height)).toBe('100000px')
    // One mark per turn, and only the last page of rows loaded.
    expect(await page.$$eval('.row[data-turn="1"]', (rows) => rows.length)).toBe(0)
    expect(errors).toEqual([])
  })

  test('import report: real Pi, Claude Code and Codex files import, a broken one fails with its reason', async () => {
    const page = await openStory('playground-import-report--folder-of-three-tools')
    await page.waitForSelector('#folder-report[data-state="done"]', { timeout: 60_000 })
    const report = await page.$eval('#folder-report', (element) => ({
      imported: (element as HTMLElement).dataset.imported,
      failed: (element as HTMLElement).dataset.failed,
      lines: [...element.querySelectorAll<HTMLElement>('.folder-report__item')].map(
        (item) => `${item.dataset.status} ${item.dataset.path}`,
      ),
    }))
    expect(report).toEqual({
      imported: '3',
      failed: '1',
      lines: [
        'failed agent-sessions/pi/agent/sessions/--home-me-cache--/2026-01-03T10-00-00-000Z_future.jsonl',
        'imported agent-sessions/claude/projects/-home-me-decorators/test-session-id.jsonl',
        'imported agent-sessions/codex/sessions/2025/09/01/rollout-2025-09-01T08-00-00-test-session.jsonl',
        'imported agent-sessions/pi/agent/sessions/--home-me-cache--/2026-01-02T10-00-00-000Z_replay.jsonl',
      ],
    })
    expect(errors).toEqual([])
  })

  test('React chat on the AI SDK adapter: a message sent streams an answer, ids unique, status back to ready', async () => {
    const page = await openStory('react-chat--ai-sdk-use-chat')
    await page.fill('textarea[aria-label="Message"]', 'Hello from the story')
    await page.click('button[type="submit"]')
    await page.waitForSelector('.ai-sdk-chat article[data-role="assistant"]', { timeout: 30_000 })
    await page.waitForSelector('.ai-sdk-chat[data-status="ready"] article[data-role="assistant"]', {
      timeout: 60_000,
    })
    const messages = await page.$$eval('.ai-sdk-chat article', (articles) =>
      articles.map((article) => ({
        id: (article as HTMLElement).dataset.id,
        role: (article as HTMLElement).dataset.role,
        text: article.textContent ?? '',
      })),
    )
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant'])
    expect(new Set(messages.map((message) => message.id)).size).toBe(2)
    expect(messages[1]!.text).toContain('You said: "Hello from the story".')
    expect(errors).toEqual([])
  })

  test('React chat on the assistant-ui adapter: a message sent streams an answer that completes', async () => {
    const page = await openStory('react-chat--assistant-ui')
    await page.fill('[aria-label="Message"]', 'Hello from assistant-ui')
    await page.click('.assistant-ui-thread button.button--primary')
    await page.waitForSelector('.assistant-ui-thread [data-role="assistant"][data-status="complete"]', {
      timeout: 60_000,
    })
    const text = await page.textContent(
      '.assistant-ui-thread [data-role="assistant"][data-status="complete"]',
    )
    expect(text).toContain('You said: "Hello from assistant-ui".')
    expect(await page.$$eval('.assistant-ui-thread [data-role="user"]', (rows) => rows.length)).toBe(1)
    expect(errors).toEqual([])
  })

  test('assistant-ui thread list: the sessions, newest first; New chat adds one, a title switches, × deletes', async () => {
    const page = await openStory('adapters-assistant-ui-thread-list--thread-list')
    const titles = () => page.$$eval('.thread-list__item', (items) => items.map((item) => item.textContent))
    await expect.poll(titles, { timeout: 30_000 }).toEqual(['Second chat×', 'First chat×'])
    await page.click('.thread-list > button:text-is("New chat")')
    await expect.poll(titles, { timeout: 30_000 }).toEqual(['New chat×', 'Second chat×', 'First chat×'])
    // Switch to the first session and send there: its answer shows in the thread.
    await page.click('.thread-list__item:has-text("First chat") button:has-text("First chat")')
    await page.fill('.thread textarea', 'Hello from the first chat')
    await page.click('.thread button.button--primary')
    await page.waitForSelector('.thread [data-role="assistant"]', { timeout: 60_000 })
    await page.click('.thread-list__item:has-text("New chat") [aria-label="Delete"]')
    await expect.poll(titles, { timeout: 30_000 }).toEqual(['First chat×', 'Second chat×'])
    expect(errors).toEqual([])
  })

  test('each story opens its own database, and leaving a story deletes it', async () => {
    const page = await openStory('playground-transcript--markdown-answer')
    await page.waitForSelector('.part--markdown table')
    const first = await storyDatabases(page)
    expect(first).toHaveLength(1)
    await switchStory(page, 'playground-turn-rail--eighty-eight-turns')
    await page.waitForSelector('.row[data-turn="88"]', { timeout: 30_000 })
    await expect.poll(() => storyDatabases(page), { timeout: 10_000 }).toHaveLength(1)
    const second = await storyDatabases(page)
    expect(second[0]).not.toBe(first[0])
    expect(errors).toEqual([])
  })
})
