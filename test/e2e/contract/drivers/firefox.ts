/** Debian's Firefox ESR through puppeteer-core over WebDriver BiDi (no geckodriver), with a profile of its own. */
import { existsSync } from 'node:fs'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { type Answer, type BrowserKind, type BrowserSession, type Tab, unwrap, waitContract } from './types'

const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr'

type ContractWindow = { contract?: { call(method: string, args: unknown): Promise<Answer<unknown>> } }

function tabOf(page: Page): Tab {
  const ready = () =>
    waitContract(() => page.evaluate(() => Boolean((window as ContractWindow).contract)), 'firefox')
  return {
    async call<T>(method: string, args?: unknown) {
      const answer = await page.evaluate(
        (m, a) => (window as ContractWindow).contract!.call(m, a),
        method,
        (args ?? null) as never,
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

export const firefoxKind: BrowserKind = {
  name: 'firefox',
  port: 47_312,
  missing: () =>
    existsSync(FIREFOX) ? undefined : `${FIREFOX} is not installed (apt-get install firefox-esr)`,
  async launch(profileDir) {
    let browser: Browser
    const start = async () => {
      browser = await puppeteer.launch({
        browser: 'firefox',
        executablePath: FIREFOX,
        headless: true,
        userDataDir: profileDir,
        protocolTimeout: 120_000,
        timeout: 60_000,
      })
    }
    await start()
    const session: BrowserSession = {
      async newTab(url) {
        const pages = await browser.pages()
        const blank = pages.find((page) => page.url() === 'about:blank')
        const tab = tabOf(blank ?? (await browser.newPage()))
        await tab.goto(url)
        return tab
      },
      async relaunch() {
        await browser.close()
        await start()
      },
      close: () => browser.close(),
    }
    return session
  },
}
