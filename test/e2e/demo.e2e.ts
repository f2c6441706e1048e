import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { MARKER_TURN, markerWord } from '../../demo/seed'
import { startChatServer } from './chat-server'
import { demoSuite, newSession, noticeText, rowWithText, screenshot, send, waitReady } from './harness'

const { start, figures } = demoSuite()

const PI_FIXTURE = fileURLToPath(
  new URL('../import/fixtures/pi/tree-v3-branch-compaction.jsonl', import.meta.url),
)
const lastAssistant = '.transcript__rows > .row[data-role="assistant"]:last-child'

/** Markup that runs script if it is ever parsed as HTML (and shows as itself if it is text). */
const MARKUP = '<img src=x onerror=alert(1)>'

/** A small Pi v3 file whose prompt and answer are `text`. */
function piFileSaying(id: string, text: string): string {
  const at = (second: number) => `2026-02-05T10:00:0${second}.000Z`
  const usage = { input: 3, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 5 }
  return `${[
    { type: 'session', version: 3, id, timestamp: at(0), cwd: '/home/me/markup' },
    { type: 'message', id: 'u1', parentId: null, timestamp: at(1), message: { role: 'user', content: text } },
    {
      type: 'message',
      id: 'r1',
      parentId: 'u1',
      timestamp: at(2),
      message: {
        role: 'assistant',
        content: [{ type: 'text', text }],
        model: 'm',
        usage,
        stopReason: 'stop',
      },
    },
  ]
    .map((line) => JSON.stringify(line))
    .join('\n')}\n`
}

/** What of the page could have come from parsing `MARKUP` as HTML. */
const parsedMarkup = (page: Page) =>
  page.evaluate(() => ({
    images: document.querySelectorAll('img[src="x"], .transcript img').length,
    handlers: document.querySelectorAll('[onerror]').length,
  }))

/** Installs, in the page, a frame counter and an observer that records when rows appear and any duplicate key. */
async function installProbe(page: Page): Promise<void> {
  await page.evaluate(() => {
    const probe = {
      frame: 0,
      keyFrame: -1,
      keyAt: 0,
      seen: {} as Record<string, { frame: number; at: number; state: string }>,
      duplicates: [] as string[],
      tagged: new WeakSet<Element>(),
    }
    ;(window as unknown as { probe: typeof probe }).probe = probe
    const tick = () => {
      probe.frame++
      requestAnimationFrame(tick)
    }
    requestAnimationFrame(tick)
    document.addEventListener(
      'keydown',
      (event) => {
        if (event.key === 'Enter') {
          probe.keyFrame = probe.frame
          probe.keyAt = performance.now()
        }
      },
      true,
    )
    const rows = document.querySelector('.transcript__rows')!
    new MutationObserver(() => {
      const counts = new Map<string, number>()
      for (const row of rows.querySelectorAll<HTMLElement>(':scope > [data-key]')) {
        const key = row.dataset.key!
        counts.set(key, (counts.get(key) ?? 0) + 1)
        if (!probe.seen[key]) {
          probe.seen[key] = { frame: probe.frame, at: performance.now(), state: row.dataset.state ?? '' }
          probe.tagged.add(row)
        }
      }
      for (const [key, count] of counts) if (count > 1) probe.duplicates.push(key)
    }).observe(rows, { childList: true, subtree: true, attributes: true, characterData: true })
  })
}

/**
 * Keyboard only: from the composer, Shift+Tab reaches the rail's one tabbable mark (from the
 * transcript, Tab first walks its rows' Edit, Rewind and Regenerate buttons), Home moves to
 * turn 1 (not loaded yet), Enter loads and lands it. Returns how long that took and where it landed.
 */
async function jumpToFirstTurnByKeyboard(page: Page, timeout: number) {
  await page.focus('#composer-input')
  await page.keyboard.press('Shift+Tab')
  // At the tail, the tabbable mark is the last turn's, and it is the current one.
  const first = await page.evaluate(() => ({
    mark: document.activeElement?.classList.contains('rail__mark'),
    current: document.activeElement?.getAttribute('aria-current'),
  }))
  expect(first).toEqual({ mark: true, current: 'true' })
  await page.keyboard.press('Home')
  // The rail holds the newest outline entries only; Home's mark fills in once its outline is read.
  await page.waitForFunction(
    () => (document.activeElement as HTMLElement | null)?.dataset.turn === '1',
    undefined,
    {
      timeout,
    },
  )
  const focused = await page.evaluate(() => ({
    turn: (document.activeElement as HTMLElement).dataset.turn,
    label: document.activeElement?.getAttribute('aria-label'),
    preview: document.querySelector('#rail-preview:not([hidden]) .rail__preview-turn')?.textContent,
  }))
  expect(focused).toEqual({ turn: '1', label: 'Load and jump to turn 1', preview: 'Turn 1 · not loaded yet' })
  expect(await page.$('.row[data-turn="1"]')).toBeNull()

  await page.evaluate(() => {
    const mark = document.activeElement!
    new MutationObserver(() => {
      if (mark.getAttribute('aria-busy') === 'true') mark.setAttribute('data-was-busy', '')
    }).observe(mark, { attributes: true, attributeFilter: ['aria-busy'] })
  })
  const started = Date.now()
  await page.keyboard.press('Enter')
  await page.waitForFunction(
    () => document.querySelector('.rail__mark[data-turn="1"]')?.getAttribute('aria-current') === 'true',
    undefined,
    { timeout },
  )
  const ms = Date.now() - started
  const landing = await page.evaluate(() => {
    const viewport = document.querySelector('.transcript')!.getBoundingClientRect()
    const row = document.querySelector('.row[data-turn="1"]')!.getBoundingClientRect()
    const mark = document.querySelector('.rail__mark[data-turn="1"]')!
    return {
      offset: row.top - viewport.top,
      busy: mark.getAttribute('aria-busy'),
      kind: mark.getAttribute('data-kind'),
      current: document.querySelectorAll('.rail__mark[aria-current]').length,
      focused: document.activeElement === mark,
      wasBusy: mark.hasAttribute('data-was-busy'),
      rows: document.querySelectorAll('.transcript__rows > .row').length,
    }
  })
  expect(landing).toMatchObject({ busy: null, wasBusy: true, kind: 'loaded', current: 1, focused: true })
  return { ms, offset: landing.offset, rows: landing.rows }
}

describe('the playground in Chromium', () => {
  test('steer: the pending row shows within a frame and is promoted in place', async () => {
    const { page } = await start('?wordDelayMs=60&toolRate=0')
    await newSession(page)
    await send(page, 'Tell me about rivers')
    await page.waitForFunction(
      (selector) => {
        const row = document.querySelector<HTMLElement>(selector)
        return row?.dataset.state === 'streaming' && (row.textContent ?? '').length > 40
      },
      lastAssistant,
      { timeout: 15_000 },
    )
    await installProbe(page)
    const steer = 'Also mention the lakes'
    await send(page, steer)
    const row = page.locator(rowWithText(steer))
    await row.waitFor()
    const key = (await row.getAttribute('data-key'))!
    const appeared = await page.evaluate((k) => {
      const probe = (
        window as unknown as {
          probe: {
            keyFrame: number
            keyAt: number
            seen: Record<string, { frame: number; at: number; state: string }>
          }
        }
      ).probe
      const seen = probe.seen[k]!
      return { frames: seen.frame - probe.keyFrame, ms: seen.at - probe.keyAt, state: seen.state }
    }, key)
    figures['steer row after keypress'] = `${appeared.frames} frame(s), ${appeared.ms.toFixed(1)} ms`
    expect(appeared.frames).toBeLessThanOrEqual(1)
    expect(['sending', 'pending']).toContain(appeared.state)

    // Promoted in place: the same element turns into the user row of the transcript.
    await page.waitForSelector(`.row[data-key="${key}"][data-state="complete"]:not(.row--pending)`, {
      timeout: 20_000,
    })
    // The next assistant row continues after it.
    await page.waitForFunction(
      (k) => {
        const next = document.querySelector(`.row[data-key="${k}"]`)?.nextElementSibling as HTMLElement | null
        return next?.dataset.role === 'assistant' && (next.textContent ?? '').length > 20
      },
      key,
      { timeout: 20_000 },
    )
    const check = await page.evaluate((k) => {
      const probe = (window as unknown as { probe: { duplicates: string[]; tagged: WeakSet<Element> } }).probe
      const nodes = document.querySelectorAll(`[data-key="${k}"]`)
      return { count: nodes.length, sameNode: probe.tagged.has(nodes[0]!), duplicates: probe.duplicates }
    }, key)
    expect(check).toEqual({ count: 1, sameNode: true, duplicates: [] })
    await screenshot(page, 'main-screen')
    expect(await noticeText(page)).toBe('')
  })

  test('queue: queued inputs wait in the tray, run one turn each, and a cancelled one never runs', async () => {
    const { page } = await start('?wordDelayMs=80&toolRate=0.5')
    await newSession(page)
    await send(page, 'Start with a short plan')
    await page.waitForSelector(`${lastAssistant}[data-state="streaming"]`, { timeout: 15_000 })
    await send(page, 'Queued one', 'queue')
    await send(page, 'Queued two', 'queue')
    await send(page, 'Queued three', 'queue')
    const tray = page.locator('#queue-tray')
    await expect.poll(() => tray.locator('.tray__title').textContent()).toBe('queued · 3')
    expect(await tray.locator('.tray__text').allTextContents()).toEqual([
      'Queued one',
      'Queued two',
      'Queued three',
    ])
    await screenshot(page, 'queue-tray')

    await tray
      .locator('.tray__item', { hasText: 'Queued two' })
      .getByRole('button', { name: 'Cancel' })
      .click()
    await expect
      .poll(() => tray.locator('.tray__text').allTextContents())
      .toEqual(['Queued one', 'Queued three'])
    const third = tray.locator('.tray__item').nth(1)
    await third.getByRole('button', { name: 'Edit' }).click()
    await third.locator('textarea').fill('Queued three, edited')
    await third.locator('textarea').press('Enter')
    await expect
      .poll(() => tray.locator('.tray__text').allTextContents())
      .toEqual(['Queued one', 'Queued three, edited'])

    // Each queued input opens its own turn, in order, after the previous one settles.
    const one = page.locator(rowWithText('Queued one'))
    await one.waitFor({ timeout: 30_000 })
    expect(await one.getAttribute('data-turn')).toBe('2')
    const three = page.locator(rowWithText('Queued three, edited'))
    await three.waitFor({ timeout: 30_000 })
    expect(await three.getAttribute('data-turn')).toBe('3')
    const order = await page.$$eval('.transcript__rows > .row', (rows) =>
      rows.map((row) => `${(row as HTMLElement).dataset.role}:${(row as HTMLElement).dataset.turn}`),
    )
    const firstOf = (entry: string) => order.indexOf(entry)
    // Turn 1's rows all come before turn 2's prompt, and turn 2's before turn 3's.
    expect(order.lastIndexOf('assistant:1')).toBeLessThan(firstOf('user:2'))
    expect(order.lastIndexOf('assistant:2')).toBeLessThan(firstOf('user:3'))
    await page.waitForSelector(`${lastAssistant}[data-turn="3"][data-state="complete"]`, { timeout: 30_000 })
    await expect.poll(() => tray.isHidden()).toBe(true)

    // For good: after a reload it is neither in the transcript nor in the tray.
    await page.reload()
    await waitReady(page)
    await page.waitForSelector(rowWithText('Queued three, edited'))
    expect(await page.getByText('Queued two').count()).toBe(0)
    expect(await noticeText(page)).toBe('')
  })

  test('reload during streaming keeps the streamed text and every pending input, and marks the turn interrupted', async () => {
    const { page } = await start('?wordDelayMs=70&toolRate=0')
    await newSession(page)
    await send(page, 'Write a long answer')
    await page.waitForFunction(
      (selector) => {
        const row = document.querySelector<HTMLElement>(selector)
        return (
          row?.dataset.state === 'streaming' &&
          (row.querySelector('.part--text')?.textContent ?? '').length > 60
        )
      },
      lastAssistant,
      { timeout: 20_000 },
    )
    await send(page, 'A queued follow-up', 'queue')
    await send(page, 'A steer that waits')
    // Both receipts are durable once the worker answered (`pending`, no longer `sending`).
    await page.waitForSelector('#queue-tray .tray__item[data-state="pending"]')
    await page.waitForSelector(
      `${rowWithText('A steer that waits')}[data-state="pending"], ${rowWithText('A steer that waits')}[data-state="complete"]`,
    )
    const streamed = await page.$eval(
      '.transcript__rows > .row[data-role="assistant"][data-turn="1"] .part--text',
      (part) => part.textContent ?? '',
    )
    await page.reload()
    await waitReady(page)

    const answer = page.locator('.transcript__rows > .row[data-role="assistant"][data-turn="1"]').first()
    await expect.poll(() => answer.getAttribute('data-state'), { timeout: 15_000 }).toBe('interrupted')
    const kept = (await answer.locator('.part--text').first().textContent()) ?? ''
    figures['streamed before reload / kept after'] = `${streamed.length} / ${kept.length} chars`
    // What was persisted is what was shown, up to the last unflushed batch (or more, if it kept streaming).
    // Compared without whitespace: the answer is markdown, and a list item that had only its
    // marker when the text was read renders its surrounding line breaks differently once it has words.
    const common = Math.min(kept.length, streamed.length)
    const squeeze = (text: string) => text.slice(0, common).replace(/\s+/g, '')
    expect(squeeze(kept).slice(0, squeeze(streamed).length - 1)).toBe(squeeze(streamed).slice(0, -1))
    expect(kept.length).toBeGreaterThan(Math.min(streamed.length - 80, streamed.length / 2))
    for (const text of ['A queued follow-up', 'A steer that waits']) {
      await expect.poll(() => page.getByText(text, { exact: true }).count()).toBeGreaterThan(0)
    }
    expect(await noticeText(page)).toBe('')
  })

  test('jump: a keyboard activation of an unloaded rail mark loads turn 1 and lands it at the top', async () => {
    const { page } = await start('?wordDelayMs=20')
    await page.click('[data-seed="88"]')
    await page.waitForSelector('.sessions__open[aria-current] >> text=88 turns (seeded)', { timeout: 30_000 })
    await page.waitForSelector('.row[data-turn="88"]')
    figures['seed 88 turns'] =
      `${await page.$eval('#seed-status', (el) => (el as HTMLElement).dataset.seconds)} s`
    const marks = await page.$$eval('.rail__mark', (list) => list.length)
    expect(marks).toBeGreaterThan(0)

    const { ms, offset } = await jumpToFirstTurnByKeyboard(page, 15_000)
    figures['jump to unloaded turn 1 (88 turns)'] = `${ms} ms`
    figures['turn 1 lands below viewport top'] = `${offset.toFixed(0)} px`
    expect(offset).toBeGreaterThanOrEqual(0)
    expect(offset).toBeLessThanOrEqual(160)
    await page.waitForTimeout(300) // nothing may drift the landing afterwards
    const settled = await page.evaluate(
      () =>
        document.querySelector('.row[data-turn="1"]')!.getBoundingClientRect().top -
        document.querySelector('.transcript')!.getBoundingClientRect().top,
    )
    expect(Math.abs(settled - offset)).toBeLessThan(2)
    await screenshot(page, 'rail-jump')
    expect(await noticeText(page)).toBe('')
  })

  test('a 10,000-turn session: the rail covers every turn, and a jump to turn 1 lands it', async () => {
    const { page } = await start()
    await page.click('[data-seed="10000"]')
    await page.waitForSelector('.sessions__open[aria-current] >> text=10,000 turns (seeded)', {
      timeout: 150_000,
    })
    await page.waitForSelector('.row[data-turn="10000"]')
    figures['seed 10,000 turns'] =
      `${await page.$eval('#seed-status', (el) => (el as HTMLElement).dataset.seconds)} s`
    expect(await page.$eval('.rail__track', (track) => (track as HTMLElement).style.height)).toBe('100000px')
    expect(await page.$$eval('.rail__mark', (marks) => marks.length)).toBeLessThan(200)
    const { ms, offset, rows } = await jumpToFirstTurnByKeyboard(page, 60_000)
    figures['jump to unloaded turn 1 (10,000 turns)'] =
      `${ms} ms, ${rows} rows rendered, lands at ${offset.toFixed(0)} px`
    expect(offset).toBeGreaterThanOrEqual(0)
    expect(offset).toBeLessThanOrEqual(160)
    // A sparse window: turn 1's neighbourhood, a gap, the tail; not the 23,000 rows between.
    expect(rows).toBeLessThanOrEqual(400)
    expect(await page.$$eval('.row[data-role="gap"]', (gaps) => gaps.length)).toBe(1)
    expect(await noticeText(page)).toBe('')

    // Search (Ctrl+K) a word only turn 3 holds, from a fresh tail view, and land on its row.
    const sessionId = (await page.evaluate(() => window.__sessionline?.sessionId))!
    const word = markerWord(sessionId)
    await page.reload()
    await waitReady(page)
    await page.waitForSelector('.row[data-turn="10000"]')
    expect(await page.$('.row[data-turn="3"]')).toBeNull()
    await page.keyboard.press('Control+k')
    await page.waitForSelector('#search[open]')
    const typed = Date.now()
    await page.fill('#search-input', word)
    await page.waitForSelector('.search__hit[aria-selected="true"]', { timeout: 60_000 })
    const firstQuery = Date.now() - typed
    const hits = await page.$$eval('.search__hit', (list) =>
      list.map((item) => ({
        turn: (item as HTMLElement).dataset.turn,
        message: (item as HTMLElement).dataset.message,
        marked: [...item.querySelectorAll('mark')].map((m) => m.textContent),
      })),
    )
    expect(hits).toEqual([{ turn: String(MARKER_TURN), message: `${sessionId}-t3-u`, marked: [word] }])
    // The same query again, with the index built: what a user's next query costs.
    const firstMs = await page.$eval('#search-status', (el) => (el as HTMLElement).dataset.ms)
    await page.fill('#search-input', `${word} `)
    await page.waitForFunction(
      (before) => (document.querySelector('#search-status') as HTMLElement | null)?.dataset.ms !== before,
      firstMs,
    )
    const queryMs = await page.$eval('#search-status', (el) => (el as HTMLElement).dataset.ms)
    const chosen = Date.now()
    await page.keyboard.press('Enter')
    const key = `${sessionId}-t3-u`
    await page.waitForFunction(
      (k) => {
        const row = document.querySelector(`.row[data-key="${k}"]`)
        if (!row?.classList.contains('row--hit')) return false
        const box = row.getBoundingClientRect()
        const viewport = document.querySelector('.transcript')!.getBoundingClientRect()
        return box.top >= viewport.top && box.bottom <= viewport.bottom
      },
      key,
      { timeout: 30_000 },
    )
    const landedMs = Date.now() - chosen
    const rendered = await page.$$eval('.transcript__rows > .row', (list) => list.length)
    figures['search 10,000 turns: first query (index build)'] = `${firstQuery} ms`
    figures['search 10,000 turns: query in the worker, built'] = `${queryMs} ms`
    figures['search hit → landed (turn 3 of 10,000)'] =
      `${landedMs} ms (page: ${await page.evaluate(() => document.documentElement.dataset.landedMs)} ms), ${rendered} rows rendered`
    expect(rendered).toBeLessThanOrEqual(400)
    expect(await noticeText(page)).toBe('')
    await screenshot(page, 'search-landed')
  }, 300_000)

  test('import: a Pi session file becomes a session, and its superseded history shows on request', async () => {
    const { page } = await start()
    await page.setInputFiles('#import-file', PI_FIXTURE)
    await page.waitForSelector('.sessions__open[aria-current] >> text=pi import', { timeout: 15_000 })
    await page.waitForSelector('.transcript__rows > .row')
    // An imported history is read-only: the composer says so instead of failing a send.
    expect(await page.isDisabled('#composer-input')).toBe(true)
    expect(await page.getAttribute('#composer-input', 'placeholder')).toBe('Imported from Pi: read-only')
    const visible = await page.$$eval('.transcript__rows > .row', (rows) => rows.length)
    expect(await page.$$eval('.row--superseded', (rows) => rows.length)).toBe(0)
    await page.check('#show-superseded')
    await page.waitForSelector('.row--superseded')
    const all = await page.$$eval('.transcript__rows > .row', (rows) => rows.length)
    figures['Pi import rows (visible / with superseded)'] = `${visible} / ${all}`
    expect(all).toBeGreaterThan(visible)
    await screenshot(page, 'import-superseded')
    expect(await noticeText(page)).toBe('')
  })

  test('message text, imported content and file names show as literal text, never as HTML', async () => {
    const { page } = await start('?wordDelayMs=5&toolRate=0')
    const dialogs: string[] = []
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    await newSession(page)
    await send(page, MARKUP)
    const row = page.locator(rowWithText(MARKUP))
    await row.waitFor()
    await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 15_000 })
    expect(await row.locator('.part--text').textContent()).toBe(MARKUP)

    // An imported transcript saying it, from a file named with it.
    const name = `${MARKUP}.jsonl`
    await page.setInputFiles('#import-file', {
      name,
      mimeType: 'application/json',
      buffer: Buffer.from(piFileSaying('markup-file', MARKUP)),
    })
    await expect.poll(() => page.textContent('#import-status')).toBe(`Imported ${name}`)
    await page.waitForSelector('.sessions__open[aria-current] >> text=pi import', { timeout: 15_000 })
    await expect
      .poll(() => page.$$eval('.transcript__rows .part--text', (parts) => parts.map((p) => p.textContent)))
      .toEqual([MARKUP, MARKUP])
    // The rail's preview of the turn.
    await page.hover('.rail__mark[data-turn="1"]')
    await expect.poll(() => page.textContent('#rail-preview')).toContain(MARKUP)

    // A folder whose file names say it: one imports, one is refused (its reason shows too).
    const root = await mkdtemp(join(tmpdir(), 'sessionline-markup-'))
    try {
      const dir = join(root, 'sessions', `--home-me-${MARKUP}--`)
      await mkdir(dir, { recursive: true })
      await writeFile(
        join(dir, `2026-02-05T10-00-00-000Z_${MARKUP}.jsonl`),
        piFileSaying('markup-folder', MARKUP),
      )
      await writeFile(
        join(dir, `2026-02-05T11-00-00-000Z_${MARKUP}-v4.jsonl`),
        `${JSON.stringify({ type: 'session', version: 4, id: 'markup-v4', timestamp: '2026-02-05T11:00:00.000Z', cwd: '/x' })}\n`,
      )
      await page.setInputFiles('#import-folder-input', join(root, 'sessions'))
      await page.waitForSelector('#folder-report[data-state="done"]', { timeout: 30_000 })
      const lines = await page.$$eval('#folder-report .folder-report__item', (items) =>
        items.map((item) => ({
          status: (item as HTMLElement).dataset.status,
          path: (item as HTMLElement).dataset.path,
          label: item.querySelector('.folder-report__label')?.textContent ?? '',
        })),
      )
      expect(lines.map((line) => line.status).sort()).toEqual(['failed', 'imported'])
      for (const line of lines) {
        expect(line.path).toContain(`--home-me-${MARKUP}--`)
        expect(line.label).toContain(MARKUP)
      }
    } finally {
      await rm(root, { recursive: true, force: true })
    }

    expect(await parsedMarkup(page)).toEqual({ images: 0, handlers: 0 })
    expect(dialogs).toEqual([])
    expect(await noticeText(page)).toBe('')
  })

  test('markdown: a streamed answer renders lists, code, tables and links, keeps the nodes of finished blocks, and its attacks stay inert', async () => {
    const answer = [
      'Here is **the plan**:',
      '',
      '- first step',
      '- second step',
      '',
      '```ts',
      'const x = 1 < 2',
      '```',
      '',
      '| name | value |',
      '| ---- | ----: |',
      '| a    | 1     |',
      '',
      'Read [the guide](https://example.com/guide) or [this](javascript:alert(1)).',
      '',
      MARKUP,
      '',
      '<div><a href="javascript:alert(2)">nested <b>html</b></a><script>alert(3)</script></div>',
      '',
      '![leak](https://example.com/pixel?secret=1)',
      '',
      '<svg onload=alert(4)></svg> [entity](jav&#x61;script:alert(5))',
    ].join('\n')
    // Small deltas, cut anywhere (mid-word, mid-tag), as a real stream comes.
    const words = answer.match(/[\s\S]{1,7}/g)!
    const model = await startChatServer(words)
    try {
      const { page } = await start()
      const dialogs: string[] = []
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message())
        void dialog.dismiss()
      })
      await newSession(page)
      await page.click('#open-settings')
      await page.check('#kind-openai')
      await page.fill('input[name="baseUrl"]', `${model.url}v1`)
      await page.fill('input[name="model"]', 'markdown-model')
      await page.click('.settings button[type="submit"]')
      await page.waitForSelector('#settings', { state: 'hidden' })
      await send(page, 'Show me markdown')
      // Once the list has a second item, the paragraph before it is finished: its node must stay.
      await page.waitForFunction(
        (selector) => document.querySelector(`${selector} .part--markdown > ul > li:nth-child(2)`) !== null,
        lastAssistant,
        { timeout: 15_000 },
      )
      await page.evaluate((selector) => {
        const first = document.querySelector(`${selector} .part--markdown`)!.firstElementChild!
        ;(window as unknown as { firstBlock: Element }).firstBlock = first
      }, lastAssistant)
      await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 20_000 })
      const rendered = await page.evaluate((selector) => {
        const part = document.querySelector(`${selector} .part--markdown`)!
        const first = (window as unknown as { firstBlock: Element }).firstBlock
        return {
          keptFirstBlock: part.firstElementChild === first && first.isConnected,
          first: first.outerHTML,
          items: [...part.querySelectorAll(':scope > ul > li')].map((li) => li.textContent),
          code: part.querySelector(':scope > pre > code.language-ts')?.textContent,
          cells: [...part.querySelectorAll(':scope > table td')].map((td) => td.textContent),
          align: part.querySelector(':scope > table td:last-child')?.getAttribute('style'),
          links: [...part.querySelectorAll('a')].map((a) => [
            a.getAttribute('href'),
            a.textContent,
            a.target,
          ]),
          text: part.textContent ?? '',
          unsafe: part.querySelectorAll(
            'img, script, svg, div, b, iframe, [onerror], [onload], [href^="javascript:" i]',
          ).length,
        }
      }, lastAssistant)
      expect(rendered).toMatchObject({
        keptFirstBlock: true,
        first: '<p>Here is <strong>the plan</strong>:</p>',
        items: ['first step', 'second step'],
        code: 'const x = 1 < 2\n',
        cells: ['a', '1'],
        align: 'text-align:right',
        links: [
          ['https://example.com/guide', 'the guide', '_blank'],
          ['https://example.com/pixel?secret=1', 'leak', '_blank'],
        ],
        unsafe: 0,
      })
      for (const literal of [MARKUP, '<script>alert(3)</script>', '[this](javascript:alert(1))'])
        expect(rendered.text).toContain(literal)
      expect(await parsedMarkup(page)).toEqual({ images: 0, handlers: 0 })
      expect(dialogs).toEqual([])
      expect(await noticeText(page)).toBe('')
    } finally {
      await model.close()
    }
  })

  test('stop: interrupts the running turn and keeps the pending input', async () => {
    const { page } = await start('?wordDelayMs=80&toolRate=0')
    await newSession(page)
    await send(page, 'Explain something at length')
    await page.waitForFunction(
      (selector) => (document.querySelector(selector)?.textContent ?? '').length > 30,
      `${lastAssistant}[data-state="streaming"]`,
      { timeout: 15_000 },
    )
    await send(page, 'Waiting in the queue', 'queue')
    await page.waitForSelector('#queue-tray .tray__item[data-state="pending"]')
    await page.click('#stop')
    const answer = page.locator('.transcript__rows > .row[data-role="assistant"][data-turn="1"]').last()
    await expect.poll(() => answer.getAttribute('data-state'), { timeout: 10_000 }).toBe('interrupted')
    // The queued input survives the stop (it then runs as the next turn).
    await expect
      .poll(() => page.getByText('Waiting in the queue', { exact: true }).count())
      .toBeGreaterThan(0)
    expect(await noticeText(page)).toBe('')
  })

  test('settings: switching to an OpenAI-compatible server streams its answer', async () => {
    const model = await startChatServer(['Hello ', 'from the ', 'local model.'])
    try {
      const { page } = await start()
      await newSession(page)
      await page.click('#open-settings')
      await page.check('#kind-openai')
      await page.fill('input[name="baseUrl"]', `${model.url}v1`)
      await page.fill('input[name="model"]', 'tiny-test-model')
      await page.fill('input[name="apiKey"]', 'sk-local-test')
      await page.click('.settings button[type="submit"]')
      await page.waitForSelector('#settings', { state: 'hidden' })
      expect(await page.textContent('#provider-label')).toContain('tiny-test-model')
      await send(page, 'Say hello')
      await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 15_000 })
      expect(await page.textContent(`${lastAssistant} .part--text`)).toBe('Hello from the local model.')
      const request = model.requests[0]!
      expect(request.authorization).toBe('Bearer sk-local-test')
      expect(request.body.model).toBe('tiny-test-model')
      expect(JSON.stringify(request.body.messages)).toContain('Say hello')
      expect(await noticeText(page)).toBe('')
    } finally {
      await model.close()
    }
  })

  test('sessions: create, switch and delete', async () => {
    const { page } = await start()
    const first = await newSession(page)
    await send(page, 'Only in the first', 'queue')
    const second = await newSession(page)
    expect(second).not.toBe(first)
    await page.click(`.sessions__item[data-session="${first}"] .sessions__open`)
    await page.waitForSelector(rowWithText('Only in the first'))
    expect(page.url()).toContain(first)
    page.once('dialog', (dialog) => void dialog.accept())
    await page.click(`.sessions__item[data-session="${first}"] .sessions__delete`, { force: true })
    await page.waitForSelector(`.sessions__item[data-session="${first}"]`, { state: 'detached' })
    expect(page.url()).not.toContain(first)
    expect(await page.getByText('Only in the first').count()).toBe(0)
    expect(await noticeText(page)).toBe('')
  })

  test('two tabs on one session: an input admitted in one shows in the other within a second', async () => {
    const { page, browser } = await start('?wordDelayMs=30&toolRate=0')
    await newSession(page)
    const other = await browser.context.newPage()
    await other.goto(page.url())
    await waitReady(other)
    await page.bringToFront()
    const text = 'Hello from the first tab'
    const sent = Date.now()
    await send(page, text, 'queue')
    await other.waitForFunction((t) => document.body.textContent?.includes(t), text, { timeout: 1_000 })
    figures['second tab sees the input after'] = `${Date.now() - sent} ms`
    // And back: the other tab's input shows in the first.
    await send(other, 'And hello back', 'queue')
    await page.waitForFunction(() => document.body.textContent?.includes('And hello back'), undefined, {
      timeout: 1_000,
    })
    expect(await noticeText(page)).toBe('')
    expect(await noticeText(other)).toBe('')
  })

  test('narrow screen: a menu button opens the sessions as a drawer, Escape closes it, and a session can be switched by keyboard', async () => {
    const { page } = await start('?wordDelayMs=10&toolRate=0', { viewport: { width: 390, height: 800 } })
    const toggle = page.locator('#open-sessions')
    const sidebar = page.locator('#sidebar')
    const drawer = () =>
      page.evaluate(() => ({
        expanded: document.querySelector('#open-sessions')!.getAttribute('aria-expanded'),
        chatInert: (document.querySelector('#chat') as HTMLElement).inert,
        focus: document.activeElement?.id || document.activeElement?.className,
      }))
    await expect.poll(() => sidebar.isVisible()).toBe(false)
    expect(await toggle.isVisible()).toBe(true)
    const first = new URL(page.url()).hash.replace('#/session/', '')
    await send(page, 'Only in the first session', 'queue')
    await page.waitForSelector(rowWithText('Only in the first session'))
    await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 15_000 })

    // Keyboard: the menu button opens the drawer with focus on the open session.
    await toggle.focus()
    await page.keyboard.press('Enter')
    await sidebar.waitFor({ state: 'visible' })
    expect(await drawer()).toEqual({ expanded: 'true', chatInert: true, focus: 'sessions__open' })
    await page.click('#new-session')
    await page.waitForFunction((id) => !location.hash.includes(id), first)
    await expect.poll(() => sidebar.isVisible()).toBe(false)
    const second = new URL(page.url()).hash.replace('#/session/', '')
    await send(page, 'Only in the second session', 'queue')
    await page.waitForSelector(rowWithText('Only in the second session'))
    await screenshot(page, 'mobile-main')

    // Escape closes it and gives focus back to the menu button.
    await toggle.focus()
    await page.keyboard.press('Enter')
    await sidebar.waitFor({ state: 'visible' })
    await page.waitForFunction(
      () => getComputedStyle(document.querySelector('#sidebar')!).transform === 'none',
    )
    await screenshot(page, 'mobile-drawer')
    await page.keyboard.press('Escape')
    await expect.poll(() => sidebar.isVisible()).toBe(false)
    expect(await drawer()).toEqual({ expanded: 'false', chatInert: false, focus: 'open-sessions' })

    // Open again, Tab to the first session, Enter: it opens and the drawer closes.
    await page.keyboard.press('Enter')
    await sidebar.waitFor({ state: 'visible' })
    expect(
      await page.evaluate(
        () => (document.activeElement?.closest('.sessions__item') as HTMLElement | null)?.dataset.session,
      ),
    ).toBe(second)
    // The list is newest first, and which session was touched last depends on when its turn
    // ended: Tab forward or back, whichever way the first session lies.
    const firstIsAbove = await page.evaluate(
      ([a, b]) => {
        const [one, two] = [a, b].map(
          (id) => document.querySelector(`.sessions__item[data-session="${id}"]`)!,
        )
        return Boolean(two!.compareDocumentPosition(one!) & Node.DOCUMENT_POSITION_PRECEDING)
      },
      [first, second],
    )
    for (let i = 0; i < 6; i++) {
      const focused = await page.evaluate(() => ({
        session: (document.activeElement?.closest('.sessions__item') as HTMLElement | null)?.dataset.session,
        open: document.activeElement?.classList.contains('sessions__open'),
      }))
      if (focused.session === first && focused.open) break
      await page.keyboard.press(firstIsAbove ? 'Shift+Tab' : 'Tab')
    }
    await page.keyboard.press('Enter')
    await page.waitForSelector(rowWithText('Only in the first session'))
    expect(page.url()).toContain(first)
    await expect.poll(() => sidebar.isVisible()).toBe(false)
    expect(await drawer()).toEqual({ expanded: 'false', chatInert: false, focus: 'open-sessions' })
    expect(await page.getByText('Only in the second session').count()).toBe(0)
    // The backdrop closes it too.
    await toggle.click()
    await sidebar.waitFor({ state: 'visible' })
    await page.mouse.click(380, 400)
    await expect.poll(() => sidebar.isVisible()).toBe(false)
    expect(await noticeText(page)).toBe('')
  })

  test('two tabs, one runner: an input admitted in one tab runs exactly one turn, whichever worker holds the lock', async () => {
    const { page, browser } = await start('?wordDelayMs=40&toolRate=0.5')
    const id = await newSession(page)
    const other = await browser.context.newPage()
    await other.goto(page.url())
    await waitReady(other)
    await page.bringToFront()
    await send(page, 'Run this once')
    await page.waitForSelector(`${lastAssistant}[data-state="streaming"]`, { timeout: 15_000 })
    // A steer from the other tab while the turn runs: the runner of the tab that holds the
    // session's lock takes it into the same turn; the other tab's runner must not step in.
    await send(other, 'Steered from the other tab')
    type Logged = { type: string; data: Record<string, unknown> }
    // The session's log, read through the client of either tab (the demo's console handle).
    const readLog = (tab: Page) =>
      tab.evaluate(async (sessionId) => {
        const events: { type: string; data: unknown; seq: number }[] = []
        for (;;) {
          const batch = await window.__sessionline!.client.events(sessionId, {
            afterSeq: events.at(-1)?.seq ?? 0,
            limit: 1000,
          })
          events.push(...batch)
          if (batch.length < 1000) return events as Logged[]
        }
      }, id)
    await expect
      .poll(async () => (await readLog(other)).filter((event) => event.type === 'turn/end').length, {
        timeout: 40_000,
        interval: 250,
      })
      .toBeGreaterThanOrEqual(1)
    await page.waitForTimeout(500) // a second runner, if there were one, would show by now
    const log = await readLog(page)
    const of = (type: string) => log.filter((event) => event.type === type)
    const turns = of('turn/start').map((event) => event.data.turn)
    expect(turns).toEqual([1])
    expect(of('turn/end').map((event) => event.data)).toEqual([{ turn: 1, reason: 'completed' }])
    expect(of('user/message').map((event) => event.data.text)).toEqual([
      'Run this once',
      'Steered from the other tab',
    ])
    const steps = of('step/start').map((event) => `${event.data.turn}.${event.data.step}`)
    expect(new Set(steps).size).toBe(steps.length)
    const assistants = of('assistant/start')
    expect(new Set(assistants.map((event) => event.data.messageId)).size).toBe(assistants.length)
    expect(assistants.length).toBe(steps.length)
    figures['two tabs, one runner: turns / steps'] = `${turns.length} / ${steps.length}`

    // Both tabs show the same rows: two prompts, one assistant row per step, nothing twice.
    for (const tab of [page, other]) {
      await tab.waitForSelector(`${lastAssistant}[data-turn="1"][data-state="complete"]`)
      const rows = () =>
        tab.$$eval('.transcript__rows > .row', (list) =>
          list.map((row) => `${(row as HTMLElement).dataset.role}:${(row as HTMLElement).dataset.turn}`),
        )
      await expect
        .poll(async () => (await rows()).filter((row) => row.startsWith('assistant:')).length)
        .toBe(assistants.length)
      expect((await rows()).filter((row) => row.startsWith('user:'))).toEqual(['user:1', 'user:1'])
      const keys = await tab.$$eval('.transcript__rows > [data-key]', (list) =>
        list.map((row) => (row as HTMLElement).dataset.key),
      )
      expect(new Set(keys).size).toBe(keys.length)
    }
    expect(await noticeText(page)).toBe('')
    expect(await noticeText(other)).toBe('')
  })

  test('offline: after one visit the app, its sessions and new inputs work with no network', async () => {
    const { page, browser } = await start('?wordDelayMs=10&toolRate=0')
    const id = await newSession(page)
    await send(page, 'Before going offline')
    await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 20_000 })
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready
    })
    await browser.context.setOffline(true)
    const reloaded = await page.reload()
    expect(reloaded?.fromServiceWorker()).toBe(true)
    await waitReady(page)
    expect(page.url()).toContain(id)
    await page.waitForSelector(rowWithText('Before going offline'))
    expect(await page.$$eval('.sessions__item', (items) => items.length)).toBeGreaterThan(0)
    await send(page, 'Written while offline')
    await page.waitForSelector(`${rowWithText('Written while offline')}:not([data-state="sending"])`)
    await page.waitForSelector(`${lastAssistant}[data-turn="2"][data-state="complete"]`, { timeout: 20_000 })
    expect(await noticeText(page)).toBe('')
  })
})
