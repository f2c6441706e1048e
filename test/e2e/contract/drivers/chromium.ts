/** Debian's Chromium through playwright-core, on a persistent profile (incognito keeps IndexedDB in memory). */
import { existsSync } from 'node:fs'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { CHROMIUM, CHROMIUM_ARGS } from '../../../support/chromium.mjs'
import { type Answer, type BrowserKind, type BrowserSession, type Tab, unwrap, waitContract } from './types'

type ContractWindow = { contract?: { call(method: string, args: unknown): Promise<Answer<unknown>> } }

function tabOf(page: Page): Tab {
  const ready = () =>
    waitContract(() => page.evaluate(() => Boolean((window as ContractWindow).contract)), 'chromium')
  return {
    async call<T>(method: string, args?: unknown) {
      const answer = await page.evaluate(
        ([m, a]) => (window as ContractWindow).contract!.call(m as string, a),
        [method, args ?? null] as const,
      )
      return unwrap(method, answer as Answer<T>)
    },
    async goto(url) {
      await page.goto(url)
      await ready()
    },
    async reload() {
      await page.reload()
      await ready()
    },
    close: () => page.close(),
  }
}

export const chromiumKind: BrowserKind = {
  name: 'chromium',
  port: 47_311,
  missing: () => (existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is not installed`),
  async launch(profileDir) {
    let context: BrowserContext
    const start = async () => {
      context = await chromium.launchPersistentContext(profileDir, {
        executablePath: CHROMIUM,
        headless: true,
        args: [...CHROMIUM_ARGS],
        timeout: 30_000,
      })
    }
    await start()
    const session: BrowserSession = {
      async newTab(url) {
        const blank = context.pages().find((page) => page.url() === 'about:blank')
        const tab = tabOf(blank ?? (await context.newPage()))
        await tab.goto(url)
        return tab
      },
      async relaunch() {
        await context.close()
        await start()
      },
      close: () => context.close(),
    }
    return session
  },
}
