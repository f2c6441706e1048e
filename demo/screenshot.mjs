// The README's picture of the playground (`npm run demo:screenshot`, after `npm run demo:build`):
// the built demo in Debian's Chromium, an 88-turn seeded session, one steer answered and one input
// queued behind it, written to docs/playground.png.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { CHROMIUM, CHROMIUM_ARGS } from '../test/support/chromium.mjs'
import { startServer } from './serve.mjs'

const OUT = fileURLToPath(new URL('../docs/playground.png', import.meta.url))
const server = await startServer()
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sessionline-shot-'))
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  args: [...CHROMIUM_ARGS],
  viewport: { width: 1280, height: 800 },
})
try {
  const page = context.pages()[0] ?? (await context.newPage())
  await page.goto(server.url)
  await page.click('[data-seed="88"]')
  await page.getByText('Wrote 88 turns').waitFor()
  const composer = page.locator('textarea').first()
  await composer.fill('Summarise what we did in the last turn, as a short list')
  await composer.press('Enter')
  await page.getByText('Every input gets a durable').waitFor()
  await composer.fill('And add a table of the files touched')
  await composer.press('Control+Enter')
  await page.waitForTimeout(1000)
  await page.screenshot({ path: OUT })
  console.log(`wrote ${path.relative(process.cwd(), OUT)}`)
} finally {
  await context.close()
  await server.close()
  fs.rmSync(profile, { recursive: true, force: true })
}
