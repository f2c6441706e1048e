// The AI SDK and assistant-ui adapters in Chromium, with the real libraries, on the README
// examples (test/adapters/*-example.tsx) over a worker running the seeded scripted provider.
// The page is a static Vite build made here (test/adapters/page).
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { build } from 'vite'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startServer } from '../../demo/serve.mjs'
import { type Browser, launchBrowser, screenshot } from './harness'

const PAGE = fileURLToPath(new URL('../adapters/page/', import.meta.url))

interface Ui {
  name: 'ai-sdk' | 'assistant-ui'
  /** Rendered messages (elements with data-id and data-role). */
  messages: string
  queued: string
  input: string
  send: string
  /** Sends the composer's text to the queue while a turn runs. */
  queue: string
  stop: string
}

const UIS: Ui[] = [
  {
    name: 'ai-sdk',
    messages: '.chat article[data-id]',
    queued: '.chat .queued li',
    input: '.chat input',
    send: '.chat button[type=submit]',
    queue: '.chat button[type=submit]',
    stop: '.chat button:text-is("Stop")',
  },
  {
    name: 'assistant-ui',
    messages: '.thread [data-role][data-id]',
    queued: '.thread .queued',
    input: '.thread textarea',
    send: '.thread button:text-is("Send")',
    queue: '.thread button.queue',
    stop: '.thread button:text-is("Stop")',
  },
]

interface RowInfo {
  key: string
  kind: string
  /** The turn of a transcript row; 0 for an input still in the inbox. */
  turn: number
  role: string
  status: string
  text: string
}
interface Shown {
  id: string
  role: string
  text: string
  status?: string
  reason?: string
}

async function rows(page: Page): Promise<RowInfo[]> {
  return page.evaluate(() =>
    window.sessionlineView!.getSnapshot().rows.map((row) =>
      row.kind === 'message'
        ? {
            key: row.key,
            kind: row.kind,
            turn: row.message.turn,
            role: row.message.role,
            status: row.message.status,
            text: row.message.parts.map((part) => (part.type === 'text' ? part.text : '')).join(''),
          }
        : {
            key: row.key,
            kind: row.kind,
            turn: 0,
            role: 'user',
            status: row.input.state,
            text: row.input.text,
          },
    ),
  )
}

async function queuedIds(page: Page): Promise<string[]> {
  return page.evaluate(() => window.sessionlineView!.getSnapshot().queued.map((input) => input.id))
}

async function shown(page: Page, ui: Ui): Promise<Shown[]> {
  return page.$$eval(ui.messages, (elements) =>
    elements.map((element) => {
      const data = (element as HTMLElement).dataset
      const item: Shown = { id: data.id!, role: data.role!, text: element.textContent ?? '' }
      if (data.status) item.status = data.status
      if (data.reason) item.reason = data.reason
      return item
    }),
  )
}

/** Waits until the view has `answers` settled assistant rows, no open row and nothing queued. */
async function settled(page: Page, answers: number): Promise<void> {
  await page.waitForFunction(
    (count) => {
      const snapshot = window.sessionlineView!.getSnapshot()
      const assistants = snapshot.rows.filter(
        (row) =>
          row.kind === 'message' && row.message.role === 'assistant' && row.message.status !== 'streaming',
      )
      const open = snapshot.rows.some((row) => row.kind === 'input')
      return assistants.length === count && !open && snapshot.queued.length === 0
    },
    answers,
    { timeout: 60_000 },
  )
}

/** Waits until the newest assistant row streams and has at least `chars` characters. */
async function streamingWith(page: Page, chars: number): Promise<RowInfo> {
  await page.waitForFunction(
    (count) => {
      const row = window.sessionlineView!.getSnapshot().rows.at(-1)
      if (row?.kind !== 'message' || row.message.role !== 'assistant') return false
      const text = row.message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
      return row.message.status === 'streaming' && text.length >= count
    },
    chars,
    { timeout: 30_000 },
  )
  return (await rows(page)).at(-1)!
}

/** The UI shows exactly the view's rows, in the view's order, once each. */
async function expectShownEqualsView(page: Page, ui: Ui): Promise<void> {
  await expect
    .poll(async () => (await shown(page, ui)).map((message) => message.id), { timeout: 10_000 })
    .toEqual((await rows(page)).map((row) => row.key))
  const ids = (await shown(page, ui)).map((message) => message.id)
  expect(new Set(ids).size).toBe(ids.length)
}

async function type(page: Page, ui: Ui, text: string, button: string): Promise<void> {
  await page.fill(ui.input, text)
  await page.click(button)
}

/** Records every value of the chat's status and every length of the newest assistant text. */
async function recordChat(page: Page): Promise<void> {
  await page.evaluate(() => {
    const chat = document.querySelector<HTMLElement>('.chat')!
    const record = { statuses: [chat.dataset.status!], lengths: [] as number[] }
    ;(window as unknown as { record: typeof record }).record = record
    new MutationObserver(() => {
      const status = chat.dataset.status!
      if (record.statuses.at(-1) !== status) record.statuses.push(status)
      const last = [...chat.querySelectorAll('article[data-role="assistant"]')].at(-1)
      const length = last?.textContent?.length ?? 0
      if (last && record.lengths.at(-1) !== length) record.lengths.push(length)
    }).observe(chat, { subtree: true, childList: true, characterData: true, attributes: true })
  })
}

async function recorded(page: Page): Promise<{ statuses: string[]; lengths: number[] }> {
  return page.evaluate(
    () => (window as unknown as { record: { statuses: string[]; lengths: number[] } }).record,
  )
}

/** Records every assistant message the thread shows while it runs, with its id and status. */
async function recordThread(page: Page): Promise<void> {
  await page.evaluate(() => {
    const thread = document.querySelector<HTMLElement>('.thread')!
    const seen: { id: string; status: string }[] = []
    ;(window as unknown as { seen: typeof seen }).seen = seen
    new MutationObserver(() => {
      for (const element of thread.querySelectorAll<HTMLElement>('[data-role="assistant"]')) {
        const item = { id: element.dataset.id!, status: element.dataset.status ?? '' }
        if (!seen.some((s) => s.id === item.id && s.status === item.status)) seen.push(item)
      }
    }).observe(thread, { subtree: true, childList: true, attributes: true })
  })
}

let server: { url: string; close(): Promise<unknown> } | undefined
let browser: Browser | undefined
/** Console warnings and errors of every page (React's duplicate-key warning is an error). */
let logged: string[] = []

beforeAll(async () => {
  await build({ configFile: fileURLToPath(new URL('vite.config.ts', `file://${PAGE}`)), logLevel: 'warn' })
  server = await startServer({ root: `${PAGE}dist` })
}, 120_000)

afterAll(async () => {
  await server?.close()
})

afterEach(async (context) => {
  const current = browser
  browser = undefined
  if (!current) return
  try {
    if (context.task.result?.state === 'fail') {
      const name = context.task.name.split(':')[0]!.replace(/\W+/g, '-')
      for (const [index, page] of current.context.pages().entries())
        await screenshot(page, `failed-adapters-${name}-${index}`).catch(() => undefined)
      console.error('browser log:', logged, current.errors)
    } else {
      expect(logged.filter((line) => /duplicate|same key/i.test(line))).toEqual([])
      expect(current.errors).toEqual([])
    }
  } finally {
    logged = []
    await current.close()
  }
})

/** A fresh browser on the page of `ui`, streaming a word every `delay` ms. */
async function start(ui: Ui, delay: number, hash = ''): Promise<{ page: Page; url: string }> {
  browser = await launchBrowser()
  browser.context.on('page', (page) =>
    page.on('console', (message) => {
      if (message.type() === 'warning' || message.type() === 'error') logged.push(message.text())
    }),
  )
  const url = `${server!.url}?adapter=${ui.name}&delay=${delay}${hash}`
  const page = await browser.open(url)
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error') logged.push(message.text())
  })
  return { page, url: page.url() }
}

/** The next turns stream fast (the running one keeps its provider). */
async function speedUp(page: Page): Promise<void> {
  await page.evaluate(() =>
    window.sessionlineClient!.configure({
      provider: { kind: 'scripted', seed: 7, toolRate: 0, wordDelayMs: 10 },
    }),
  )
}

const LONG_PROMPT = 'Please walk me through how the inbox, the log and the projections fit together here'

describe('ai-sdk adapter (useSessionlineChat over the real ai and @ai-sdk/react)', () => {
  const ui = UIS[0]!

  it('ai-sdk: deltas arrive live, status goes submitted → streaming → ready, and message ids equal the row ids', async () => {
    const { page } = await start(ui, 30)
    await recordChat(page)
    await type(page, ui, 'hello there', ui.send)
    await settled(page, 1)
    await expect.poll(async () => (await recorded(page)).statuses.at(-1)).toBe('ready')
    const { statuses, lengths } = await recorded(page)
    expect(statuses).toEqual(['ready', 'submitted', 'streaming', 'ready'])
    // Live: the answer's text grew on screen in several steps, never shrinking.
    expect(lengths.length).toBeGreaterThanOrEqual(4)
    expect([...lengths].sort((a, b) => a - b)).toEqual(lengths)
    const view = await rows(page)
    expect(view.map((row) => [row.role, row.status])).toEqual([
      ['user', 'complete'],
      ['assistant', 'complete'],
    ])
    await expectShownEqualsView(page, ui)
    await expect
      .poll(async () => (await shown(page, ui)).map((message) => message.text))
      .toEqual(view.map((row) => row.text))
  })

  it('ai-sdk: a reload mid-stream resumes the running answer from its start, once, under its row id', async () => {
    // Tab A runs the turn; tab B follows it, is reloaded mid-stream and picks the answer up again.
    const { page: a, url } = await start(ui, 120)
    const b = await browser!.open(url)
    await type(a, ui, LONG_PROMPT, ui.send)
    const before = await streamingWith(b, 20)
    await b.reload()
    await b.waitForSelector('html[data-ready="true"]')
    await recordChat(b)
    const resumedAt = await rows(b)
    await settled(b, 1)
    await expect.poll(async () => (await recorded(b)).statuses.at(-1)).toBe('ready')
    const after = (await rows(b)).at(-1)!
    expect(after.key).toBe(before.key)
    expect(after.text.startsWith(before.text)).toBe(true)
    if (resumedAt.at(-1)?.status === 'streaming') {
      // It was still running when B came back: B resumed it and showed it grow.
      expect((await recorded(b)).statuses).toContain('streaming')
      expect((await recorded(b)).lengths.length).toBeGreaterThan(1)
    }
    for (const page of [a, b]) {
      await expectShownEqualsView(page, ui)
      await expect
        .poll(async () => (await shown(page, ui)).filter((message) => message.role === 'assistant'))
        .toEqual([{ id: before.key, role: 'assistant', text: after.text }])
    }
  })

  it('ai-sdk: reloading the tab that runs the turn keeps the partial answer once, ended as interrupted', async () => {
    // A slow answer (a word per 300 ms), so the reload lands while it streams.
    const { page } = await start(ui, 300)
    await type(page, ui, LONG_PROMPT, ui.send)
    const before = await streamingWith(page, 20)
    await page.reload()
    await page.waitForSelector('html[data-ready="true"]')
    await page.waitForFunction(() => window.sessionlineView!.getSnapshot().rows.at(-1)?.kind === 'message')
    await expect.poll(async () => (await rows(page)).at(-1)!.status, { timeout: 20_000 }).toBe('interrupted')
    const after = (await rows(page)).at(-1)!
    expect(after.key).toBe(before.key)
    expect(after.text.length).toBeGreaterThan(0)
    await expectShownEqualsView(page, ui)
    await expect.poll(async () => (await shown(page, ui)).at(-1)!.text).toBe(after.text)
    await expect.poll(() => page.getAttribute('.chat', 'data-status')).toBe('ready')
  })

  it('ai-sdk: stop interrupts the turn and keeps the partial text', async () => {
    // A slow answer (a word per 300 ms), so Stop lands while it streams.
    const { page } = await start(ui, 300)
    await type(page, ui, LONG_PROMPT, ui.send)
    await streamingWith(page, 20)
    await page.waitForSelector(`${ui.stop}:enabled`)
    await page.click(ui.stop)
    await expect.poll(async () => (await rows(page)).at(-1)!.status, { timeout: 20_000 }).toBe('interrupted')
    await expect.poll(() => page.getAttribute('.chat', 'data-status')).toBe('ready')
    const stopped = (await rows(page)).at(-1)!
    expect(stopped.text.length).toBeGreaterThanOrEqual(20)
    await expectShownEqualsView(page, ui)
    await expect.poll(async () => (await shown(page, ui)).at(-1)!.text).toBe(stopped.text)
    expect(await page.isDisabled(ui.stop)).toBe(true)
  })

  it('ai-sdk: inputs sent while a turn runs wait in queued, not in messages, and run in the view order, also after a reload', async () => {
    // A slow first answer (a word per 400 ms, some ten seconds) keeps its turn running while two
    // more are queued; the turns after it stream fast.
    const { page } = await start(ui, 400)
    await type(page, ui, 'first question', ui.send)
    await streamingWith(page, 5)
    await type(page, ui, 'second question', ui.queue)
    await type(page, ui, 'third question', ui.queue)
    await expect
      .poll(() => page.$$eval(ui.queued, (items) => items.map((item) => item.textContent)))
      .toEqual(['second question', 'third question'])
    const waiting = await queuedIds(page)
    expect(
      await page.$$eval(ui.queued, (items) => items.map((item) => (item as HTMLElement).dataset.id)),
    ).toEqual(waiting)
    const ids = (await shown(page, ui)).map((message) => message.id)
    for (const id of waiting) expect(ids).not.toContain(id)
    await speedUp(page)
    await settled(page, 3)
    await expect.poll(() => page.getAttribute('.chat', 'data-status')).toBe('ready')
    const view = await rows(page)
    expect(view.filter((row) => row.role === 'user').map((row) => row.text)).toEqual([
      'first question',
      'second question',
      'third question',
    ])
    expect(
      view
        .filter((row) => row.role === 'user')
        .map((row) => row.key)
        .slice(1),
    ).toEqual(waiting)
    await expectShownEqualsView(page, ui)
    await page.reload()
    await page.waitForSelector('html[data-ready="true"]')
    await settled(page, 3)
    expect((await rows(page)).map((row) => row.key)).toEqual(view.map((row) => row.key))
    await expectShownEqualsView(page, ui)
  })
})

describe('assistant-ui adapter (useSessionlineRuntime over the real @assistant-ui/react)', () => {
  const ui = UIS[1]!

  it('assistant-ui: the optimistic assistant placeholder shows, deltas arrive live, and message ids equal the row ids', async () => {
    const { page } = await start(ui, 30)
    await recordThread(page)
    await type(page, ui, 'hello there', ui.send)
    await settled(page, 1)
    const view = await rows(page)
    const answer = view.at(-1)!
    const seen = await page.evaluate(
      () => (window as unknown as { seen: { id: string; status: string }[] }).seen,
    )
    // Before the answer's row existed, the runtime showed its own running placeholder.
    expect(seen.some((item) => item.id !== answer.key && item.status === 'running')).toBe(true)
    expect(seen.filter((item) => item.id === answer.key).map((item) => item.status)).toEqual([
      'running',
      'complete',
    ])
    await expectShownEqualsView(page, ui)
    await expect
      .poll(async () => (await shown(page, ui)).map((message) => message.text))
      .toEqual(view.map((row) => row.text))
    expect(await page.isDisabled(ui.stop)).toBe(true)
  })

  it('assistant-ui: a reload mid-stream shows the running answer once, under its row id', async () => {
    const { page: a, url } = await start(ui, 120)
    const b = await browser!.open(url)
    await type(a, ui, LONG_PROMPT, ui.send)
    const before = await streamingWith(b, 20)
    await b.reload()
    await b.waitForSelector('html[data-ready="true"]')
    await settled(b, 1)
    const after = (await rows(b)).at(-1)!
    expect(after.key).toBe(before.key)
    expect(after.text.startsWith(before.text)).toBe(true)
    for (const page of [a, b]) {
      await expectShownEqualsView(page, ui)
      await expect
        .poll(async () => (await shown(page, ui)).filter((message) => message.role === 'assistant'))
        .toEqual([
          { id: before.key, role: 'assistant', text: after.text, status: 'complete', reason: 'stop' },
        ])
    }
  })

  it('assistant-ui: Stop (onCancel) interrupts the turn, keeps the partial text and shows it incomplete/cancelled', async () => {
    // A slow answer (a word per 300 ms), so Stop lands while it streams.
    const { page } = await start(ui, 300)
    await type(page, ui, LONG_PROMPT, ui.send)
    await streamingWith(page, 20)
    await page.waitForSelector(`${ui.stop}:enabled`)
    await page.click(ui.stop)
    await expect.poll(async () => (await rows(page)).at(-1)!.status, { timeout: 20_000 }).toBe('interrupted')
    const stopped = (await rows(page)).at(-1)!
    expect(stopped.text.length).toBeGreaterThanOrEqual(20)
    await expectShownEqualsView(page, ui)
    await expect
      .poll(async () => (await shown(page, ui)).at(-1))
      .toEqual({
        id: stopped.key,
        role: 'assistant',
        text: stopped.text,
        status: 'incomplete',
        reason: 'cancelled',
      })
  })

  it('assistant-ui: queued items show in the composer queue, not in the thread, and run in the view order, also after a reload', async () => {
    // A slow first answer (a word per 400 ms, some ten seconds) keeps its turn running while two
    // more are queued; the turns after it stream fast.
    const { page } = await start(ui, 400)
    await type(page, ui, 'first question', ui.send)
    await streamingWith(page, 5)
    await type(page, ui, 'second question', ui.queue)
    await type(page, ui, 'third question', ui.queue)
    await expect
      .poll(() => page.$$eval(ui.queued, (items) => items.map((item) => item.textContent)))
      .toEqual(['second question', 'third question'])
    const waiting = await queuedIds(page)
    expect(
      await page.$$eval(ui.queued, (items) => items.map((item) => (item as HTMLElement).dataset.id)),
    ).toEqual(waiting)
    const ids = (await shown(page, ui)).map((message) => message.id)
    for (const id of waiting) expect(ids).not.toContain(id)
    await speedUp(page)
    await settled(page, 3)
    const view = await rows(page)
    expect(
      view
        .filter((row) => row.role === 'user')
        .map((row) => row.key)
        .slice(1),
    ).toEqual(waiting)
    await expectShownEqualsView(page, ui)
    await expect.poll(() => page.$$eval(ui.queued, (items) => items.length)).toBe(0)
    await page.reload()
    await page.waitForSelector('html[data-ready="true"]')
    await settled(page, 3)
    expect((await rows(page)).map((row) => row.key)).toEqual(view.map((row) => row.key))
    await expectShownEqualsView(page, ui)
  })

  it('assistant-ui: a steer sent while the answer streams shows in the thread at once and joins the running turn', async () => {
    // A slow answer (a word per 200 ms), so the steer arrives while it streams.
    const { page } = await start(ui, 200)
    await type(page, ui, 'first question', ui.send)
    const first = await streamingWith(page, 5)
    await type(page, ui, 'and one more thing', ui.send)
    // The steer is in the thread right away, after the streaming answer (and before the
    // runtime's placeholder for the answer to come), not in the queue.
    await expect
      .poll(async () => {
        const messages = await shown(page, ui)
        const at = messages.findIndex((message) => message.id === first.key)
        return messages.slice(at + 1).find((message) => message.role === 'user')?.text
      })
      .toBe('and one more thing')
    expect(await page.$$eval(ui.queued, (items) => items.length)).toBe(0)
    await settled(page, 2)
    const view = await rows(page)
    expect(view.map((row) => row.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
    expect(view[1]!.key).toBe(first.key)
    // One turn: the steer joined it at the boundary after the first answer.
    expect(view.map((row) => row.turn)).toEqual([1, 1, 1, 1])
    await expectShownEqualsView(page, ui)
  })
})
