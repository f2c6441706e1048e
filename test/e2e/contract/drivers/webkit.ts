/**
 * WebKitGTK through WebKitWebDriver (WebDriver classic, selenium-webdriver) under an Xvfb of its
 * own: there is no headless mode, and without a display the session request hangs, so every
 * start has a deadline. The browser is `webkit-browser.py` (python3-gi), whose IndexedDB lives
 * on disk; without python3-gi, stock MiniBrowser, whose IndexedDB survives a reload only.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Builder, type WebDriver } from 'selenium-webdriver'
import { type Answer, type BrowserKind, type BrowserSession, type Tab, unwrap, waitContract } from './types'

const DRIVER = '/usr/bin/WebKitWebDriver'
const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser'
const RECIPE = fileURLToPath(new URL('./webkit-browser.py', import.meta.url))

/** Whether the on-disk browser can run (system python with WebKit2 4.1 bindings). */
export function persistentWebKit(): boolean {
  try {
    execFileSync('/usr/bin/python3', ['-c', "import gi; gi.require_version('WebKit2', '4.1')"], {
      stdio: 'ignore',
    })
    return true
  } catch {
    return false
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

/** Starts Xvfb on the first free display it finds (`-displayfd`) and answers that display. */
async function startXvfb(): Promise<{ display: string; process: ChildProcess }> {
  const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
  })
  const display = await withDeadline(
    new Promise<string>((resolve, reject) => {
      let text = ''
      xvfb.stdio[3]!.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        if (text.includes('\n')) resolve(`:${text.trim()}`)
      })
      xvfb.once('exit', (code) => reject(new Error(`Xvfb exited with ${code}`)))
    }),
    10_000,
    'Xvfb',
  )
  return { display, process: xvfb }
}

/** Every WebDriver command goes to the current window: calls to two tabs take turns. */
function serial() {
  let last: Promise<unknown> = Promise.resolve()
  return <T>(run: () => Promise<T>): Promise<T> => {
    const next = last.then(run, run)
    last = next.catch(() => undefined)
    return next
  }
}

const CALL = `
  const [method, args, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]]
  window.contract.call(method, args).then(done, (error) => done({ ok: false, error: String(error) }))
`

/**
 * The WebKit kind, with `features` (WebKit feature identifiers, e.g. `FileSystem`) turned on in
 * the on-disk browser beyond WebKitGTK's defaults; stock MiniBrowser gets none of them.
 */
export function webkitKindWith(features: readonly string[]): BrowserKind {
  return { ...webkitKind, launch: (profileDir) => launchWebKit(profileDir, features) }
}

export const webkitKind: BrowserKind = {
  name: 'webkit',
  port: 47_313,
  missing() {
    for (const path of [DRIVER, MINIBROWSER])
      if (!existsSync(path)) return `${path} is missing (apt-get install webkit2gtk-driver)`
    try {
      execFileSync('sh', ['-c', 'command -v Xvfb'], { stdio: 'ignore' })
    } catch {
      return 'Xvfb is missing (apt-get install xvfb)'
    }
    return undefined
  },
  launch: (profileDir) => launchWebKit(profileDir, []),
}

async function launchWebKit(profileDir: string, features: readonly string[]): Promise<BrowserSession> {
  const persistent = persistentWebKit()
  const { display, process: xvfb } = await startXvfb()
  const port = await freePort()
  const driverProcess = spawn(DRIVER, [`--port=${port}`], {
    stdio: 'ignore',
    env: { ...process.env, DISPLAY: display },
  })
  const queue = serial()
  let driver: WebDriver
  const start = async () => {
    // The driver matches browserName against the name the browser gives its automation session.
    const capabilities = persistent
      ? {
          browserName: 'sessionline-contract',
          'webkitgtk:browserOptions': {
            binary: RECIPE,
            args: ['--automation', `--profile=${profileDir}`, ...features.map((f) => `--feature=${f}`)],
          },
        }
      : {
          browserName: 'MiniBrowser',
          'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
        }
    // The driver needs a moment to listen; a session request without a display hangs.
    const deadline = Date.now() + 30_000
    for (;;) {
      try {
        driver = await withDeadline(
          new Builder().usingServer(`http://127.0.0.1:${port}`).withCapabilities(capabilities).build(),
          20_000,
          'WebKitWebDriver',
        )
        break
      } catch (error) {
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    }
    await driver.manage().setTimeouts({ script: 180_000, pageLoad: 30_000 })
  }
  await start()
  let firstTabFree = true

  function tabOf(handle: string): Tab {
    const on = <T>(run: () => Promise<T>) =>
      queue(async () => {
        await driver.switchTo().window(handle)
        return run()
      })
    const ready = () =>
      waitContract(() => on(() => driver.executeScript<boolean>('return Boolean(window.contract)')), 'webkit')
    return {
      async call<T>(method: string, args?: unknown) {
        const answer = await on(() => driver.executeAsyncScript<Answer<T>>(CALL, method, args ?? null))
        return unwrap(method, answer)
      },
      async goto(url) {
        await on(() => driver.get(url))
        await ready()
      },
      async reload() {
        await on(() => driver.navigate().refresh())
        await ready()
      },
      close: () =>
        queue(async () => {
          await driver.switchTo().window(handle)
          const handles = await driver.getAllWindowHandles()
          if (handles.length === 1) {
            // Closing the last window ends the WebDriver session: leave the page instead
            // (its workers end as with a closed tab) and keep the window for the next tab.
            await driver.get('about:blank')
            firstTabFree = true
            return
          }
          await driver.close()
          const other = handles.find((h) => h !== handle)
          if (other) await driver.switchTo().window(other)
        }),
    }
  }

  const session: BrowserSession & { persistent: boolean } = {
    persistent,
    async newTab(url) {
      const handle = await queue(async () => {
        if (firstTabFree) {
          firstTabFree = false
          return driver.getWindowHandle()
        }
        await driver.switchTo().newWindow('tab')
        return driver.getWindowHandle()
      })
      const tab = tabOf(handle)
      await tab.goto(url)
      return tab
    },
    async relaunch() {
      await queue(() => driver.quit())
      firstTabFree = true
      await start()
    },
    async close() {
      await queue(() => withDeadline(driver.quit(), 15_000, 'quit')).catch(() => undefined)
      driverProcess.kill('SIGKILL')
      xvfb.kill('SIGKILL')
    },
  }
  return session
}
