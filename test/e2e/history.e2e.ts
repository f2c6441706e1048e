/**
 * The playground's history controls in Chromium against the built demo (decision 0033): edit a
 * sent prompt and resend it, step between the branches, regenerate an answer, rewind a prompt
 * into the composer, compact with a typed summary and expand what it replaced, compact with a
 * summary the model writes (and stop one while it writes), continue in a
 * new session, and reorder and steer the queue, all with the keyboard where a person would.
 */
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { demoSuite, newSession, rowWithText, screenshot, send } from './harness'

const { start } = demoSuite()
const rows = '.transcript__rows > .row'
const PI_FIXTURE = fileURLToPath(
  new URL('../import/fixtures/pi/tree-v3-branch-compaction.jsonl', import.meta.url),
)

/** Sends `text` and waits until its turn's answer is complete. */
async function exchange(page: Page, text: string): Promise<void> {
  const answers = await page.locator(`${rows}[data-role="assistant"][data-state="complete"]`).count()
  await send(page, text)
  await page.waitForFunction(
    ([selector, count]) => document.querySelectorAll(selector as string).length > (count as number),
    [`${rows}[data-role="assistant"][data-state="complete"]`, answers] as const,
    { timeout: 20_000 },
  )
  // The composer's Stop goes idle once the turn is over.
  await page.waitForSelector('#stop:disabled')
}

const shownTexts = (page: Page) =>
  page.$$eval(`${rows}[data-role="user"] .part--text`, (nodes) => nodes.map((n) => n.textContent))

describe('playground history', () => {
  test('edit and resend: Enter in the editor makes a second branch; the arrows and Regenerate step between branches', async () => {
    const { page } = await start('?wordDelayMs=5&toolRate=0')
    await newSession(page)
    await exchange(page, 'Plan a picnic')
    const prompt = page.locator(rowWithText('Plan a picnic'))
    await prompt.getByRole('button', { name: 'Edit this prompt' }).click()
    const editor = page.locator('.row__editor')
    expect(await editor.inputValue()).toBe('Plan a picnic')
    await editor.fill('Plan a picnic by the lake')
    await editor.press('Enter')
    const edited = page.locator(rowWithText('Plan a picnic by the lake'))
    await expect
      .poll(() => edited.locator('.branch-picker__label').textContent(), { timeout: 15_000 })
      .toBe('2 / 2')
    await page.waitForSelector(`${rows}[data-role="assistant"][data-state="complete"]`)
    expect(await shownTexts(page)).toEqual(['Plan a picnic by the lake'])

    // Keyboard: focus the previous-branch arrow and press Enter.
    await edited.getByRole('button', { name: 'Previous branch' }).focus()
    await page.keyboard.press('Enter')
    await expect.poll(() => shownTexts(page), { timeout: 10_000 }).toEqual(['Plan a picnic'])
    expect(
      await page.locator(rowWithText('Plan a picnic')).locator('.branch-picker__label').textContent(),
    ).toBe('1 / 2')

    // Regenerate the shown answer: a sibling answer, "2 / 2" on the assistant row.
    await page.waitForSelector('#stop:disabled')
    await page
      .locator(`${rows}[data-role="assistant"]`)
      .last()
      .getByRole('button', { name: 'Regenerate this answer' })
      .click()
    await expect
      .poll(
        () =>
          page
            .locator(`${rows}[data-role="assistant"][data-state="complete"] .branch-picker__label`)
            .allTextContents(),
        { timeout: 15_000 },
      )
      .toEqual(['2 / 2'])
    expect(await shownTexts(page)).toEqual(['Plan a picnic'])
    await screenshot(page, 'history-branches')
  })

  test('rewind: the prompt and its answer leave the transcript and its text is back in the composer', async () => {
    const { page } = await start('?wordDelayMs=5&toolRate=0')
    await newSession(page)
    await exchange(page, 'First question')
    await exchange(page, 'Second question')
    await page
      .locator(rowWithText('Second question'))
      .getByRole('button', { name: 'Rewind to before this prompt' })
      .click()
    await expect.poll(() => shownTexts(page), { timeout: 10_000 }).toEqual(['First question'])
    expect(await page.inputValue('#composer-input')).toBe('Second question')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('composer-input')
  })

  test('compact with a typed summary, expand what it replaced, then continue in a new session', async () => {
    const { page } = await start('?wordDelayMs=5&toolRate=0')
    const source = await newSession(page)
    await exchange(page, 'Tell me about tides')
    page.once('dialog', (dialog) => void dialog.accept('We discussed tides.'))
    await page.click('#compact-session')
    const summary = page.locator(`${rows}[data-role="summary"]`)
    await summary.waitFor({ timeout: 10_000 })
    expect(await summary.locator('.part--text').textContent()).toContain('We discussed tides.')
    expect(await shownTexts(page)).toEqual([])
    // The disclosure opens from the keyboard and lists the replaced rows.
    await summary.locator('summary').focus()
    await page.keyboard.press('Enter')
    await expect
      .poll(() => summary.locator('.replaced__row[data-role="user"] .replaced__text').allTextContents())
      .toEqual(['Tell me about tides'])

    await page.click('#fork-session')
    await page.waitForFunction((id) => !location.hash.endsWith(id as string), source)
    await expect.poll(() => page.textContent('#session-title')).toContain('(continued)')
    await page.locator(`${rows}[data-role="summary"]`).waitFor()
    // The new session is writable and carries on from the summary.
    await exchange(page, 'And the moon?')
    expect(await shownTexts(page)).toEqual(['And the moon?'])
    await screenshot(page, 'history-compact-fork')
  })

  test('compact with a summary the model writes; a second one stopped while it writes changes nothing', async () => {
    const { page } = await start('?wordDelayMs=40&toolRate=0')
    await newSession(page)
    await exchange(page, 'Tell me about tides')
    const summaries = page.locator(`${rows}[data-role="summary"]`)
    // An empty summary: the model writes it.
    page.once('dialog', (dialog) => void dialog.accept(''))
    await page.click('#compact-session')
    await summaries.first().waitFor({ timeout: 30_000 })
    expect((await summaries.first().locator('.part--text').textContent())?.trim()).not.toBe('')
    expect(await shownTexts(page)).toEqual([])
    await expect.poll(() => page.textContent('#compact-session')).toBe('Compact')

    // The button stops a summary while the model writes it: no second summary row, the turn stays.
    await exchange(page, 'And the moon?')
    page.once('dialog', (dialog) => void dialog.accept(''))
    await page.click('#compact-session')
    await expect.poll(() => page.textContent('#compact-session')).toBe('Stop compacting')
    await page.click('#compact-session')
    await expect
      .poll(() => page.textContent('#notice'), { timeout: 10_000 })
      .toBe('Compaction stopped: nothing changed.')
    expect(await page.textContent('#compact-session')).toBe('Compact')
    expect(await summaries.count()).toBe(1)
    expect(await shownTexts(page)).toEqual(['And the moon?'])
  })

  test('queue tray: ↑/↓ and Alt+arrows reorder, Steer moves an input out of the queue', async () => {
    const { page } = await start('?wordDelayMs=120&toolRate=0')
    await newSession(page)
    await send(page, 'Write a long story')
    await page.waitForSelector(`${rows}[data-role="assistant"][data-state="streaming"]`, { timeout: 15_000 })
    for (const text of ['one', 'two', 'three']) await send(page, text, 'queue')
    const tray = page.locator('#queue-tray')
    const order = () => tray.locator('.tray__text').allTextContents()
    await expect.poll(order).toEqual(['one', 'two', 'three'])
    await tray.locator('.tray__item', { hasText: 'three' }).getByRole('button', { name: 'Move up' }).click()
    await expect.poll(order).toEqual(['one', 'three', 'two'])
    await tray.locator('.tray__item', { hasText: 'one' }).getByRole('button', { name: 'Move down' }).focus()
    await page.keyboard.press('Alt+ArrowDown')
    await expect.poll(order).toEqual(['three', 'one', 'two'])
    await tray
      .locator('.tray__item', { hasText: 'two' })
      .dragTo(tray.locator('.tray__item', { hasText: 'three' }), {
        targetPosition: { x: 5, y: 2 },
      })
    // Where it lands is the engine's rule (its old place or the end); the tray shows it queued.
    await expect.poll(async () => (await order()).sort()).toEqual(['one', 'three', 'two'])
    await tray
      .locator('.tray__item', { hasText: 'one' })
      .getByRole('button', { name: /Send as a steer/ })
      .click()
    await expect.poll(order).toEqual(['two', 'three'])
    await screenshot(page, 'history-tray')
  })

  test('an imported session is read-only until continued in a new session, which takes prompts', async () => {
    const { page } = await start('?wordDelayMs=5&toolRate=0')
    await page.setInputFiles('#import-file', PI_FIXTURE)
    await page.waitForSelector('#import-status:has-text("Imported")')
    const imported = new URL(page.url()).hash
    expect(await page.isDisabled('#composer-input')).toBe(true)
    expect(await page.isDisabled('#compact-session')).toBe(true)
    await page.locator('#fork-session').focus()
    await page.keyboard.press('Enter')
    await page.waitForFunction((hash) => location.hash !== hash, imported)
    await page.waitForSelector('#composer-input:not([disabled])')
    expect(await page.isDisabled('#compact-session')).toBe(false)
    expect(await page.locator(rows).count()).toBeGreaterThan(0)
    await exchange(page, 'Carry on from here')
    expect((await shownTexts(page)).at(-1)).toBe('Carry on from here')
  })
})
