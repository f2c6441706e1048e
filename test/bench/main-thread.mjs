/**
 * (15) `main-thread`: what the page's main thread goes through while the playground works, as a
 * user feels it. A recorder installed before any script of the page (`RECORDER`) keeps every
 * long task Chromium reports (`PerformanceObserver` 'longtask': a task over 50 ms) and the
 * longest gap between two animation frames; a figure is the longest task, the total blocking
 * time (the sum of each long task's time beyond 50 ms) and that frame gap, over one workload.
 *
 * `main-thread-stream` runs the built playground (demo/) with its OpenAI-compatible provider
 * pointed at a server of ours on 127.0.0.1 that streams a markdown answer (headings, lists,
 * code, tables) at a fixed rate as server-sent events, and stops by itself once the answer is
 * sent (or after `limitMs`, whichever comes first).
 */
import { execFileSync } from 'node:child_process'
import http from 'node:http'
import path from 'node:path'

/** Installed with `addInitScript`: runs in every page before its own scripts. */
export const RECORDER = `(() => {
  const tasks = []
  let gap = 0
  let last = 0
  const frame = (now) => {
    if (last) gap = Math.max(gap, now - last)
    last = now
    requestAnimationFrame(frame)
  }
  requestAnimationFrame(frame)
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) tasks.push({ start: entry.startTime, duration: entry.duration })
  }).observe({ type: 'longtask', buffered: true })
  window.__mainThread = {
    reset() { tasks.length = 0; gap = 0; last = 0 },
    read() {
      let longest = 0, blocking = 0
      for (const t of tasks) { longest = Math.max(longest, t.duration); blocking += Math.max(0, t.duration - 50) }
      return { longTasks: tasks.length, longestMs: longest, tbtMs: blocking, longestFrameGapMs: gap }
    },
  }
})()`

/**
 * A markdown answer of about `bytes` characters, the same every run: sections of a heading, a
 * paragraph, a list, a fenced code block and a table, as a model's long answer has them.
 */
export function markdownAnswer(bytes) {
  const parts = []
  let size = 0
  for (let i = 1; size < bytes; i++) {
    const section = [
      `## Section ${i}: what the step does`,
      '',
      `The worker owns the log; the page only renders. Step ${i} reads the **tail**, folds the new events and publishes one snapshot, so the cost of a delta stays with the delta and not with the answer (see \`step${i}\`).`,
      '',
      `- item ${i}.1 keeps the receipt durable`,
      `- item ${i}.2 folds the events in order`,
      `  - nested ${i}.2.1 with *emphasis*`,
      `- item ${i}.3 publishes once per frame`,
      '',
      '```ts',
      `export function step${i}(events: readonly Event[]): number {`,
      '  let n = 0',
      '  for (const e of events) if (e.type === "assistant/delta") n += e.text.length',
      '  return n',
      '}',
      '```',
      '',
      '| step | events | rows |',
      '| ---- | -----: | ---: |',
      `| ${i} | ${i * 14} | ${i * 3} |`,
      `| ${i + 1} | ${(i + 1) * 14} | ${(i + 1) * 3} |`,
      '',
      '',
    ].join('\n')
    parts.push(section)
    size += section.length
  }
  return parts.join('').slice(0, bytes)
}

/**
 * An OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 that streams `text` at `charsPerSecond`
 * (a chunk every `tickMs`), then ends. Any request after `limitMs` from the first gets a 503, and
 * an answer still streaming then is cut, so the server never outlives its step by much.
 */
export function startSseServer({ text, charsPerSecond, tickMs = 50, limitMs }) {
  /** @type {Set<NodeJS.Timeout>} */
  const timers = new Set()
  const cors = {
    'access-control-allow-origin': '*',
    'access-control-allow-headers': 'content-type, authorization',
    'access-control-allow-methods': 'POST, OPTIONS',
  }
  let first = 0
  const server = http.createServer((req, res) => {
    if (req.method === 'OPTIONS') return void res.writeHead(204, cors).end()
    first ||= Date.now()
    if (!req.url?.endsWith('/chat/completions') || Date.now() - first > limitMs)
      return void res.writeHead(req.url?.endsWith('/chat/completions') ? 503 : 404, cors).end()
    req.resume()
    res.writeHead(200, { ...cors, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const chunk = Math.max(1, Math.round((charsPerSecond * tickMs) / 1000))
    const started = Date.now()
    let at = 0
    const event = (payload) => res.write(`data: ${JSON.stringify(payload)}\n\n`)
    const base = { id: 'bench', object: 'chat.completion.chunk', created: 0, model: 'bench' }
    const tick = setInterval(() => {
      if (at < text.length && Date.now() - started < limitMs) {
        event({
          ...base,
          choices: [{ index: 0, delta: { content: text.slice(at, at + chunk) }, finish_reason: null }],
        })
        at += chunk
        return
      }
      event({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
      res.end('data: [DONE]\n\n')
      clearInterval(tick)
      timers.delete(tick)
    }, tickMs)
    timers.add(tick)
    res.on('close', () => {
      clearInterval(tick)
      timers.delete(tick)
    })
  })
  return new Promise((resolve, reject) => {
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      resolve({
        baseUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1`,
        close: () =>
          new Promise((done) => {
            for (const t of timers) clearInterval(t)
            server.closeAllConnections()
            server.close(() => done(undefined))
          }),
      })
    })
  })
}

const single = (value) => {
  const v = Math.round(value * 1000) / 1000
  return { reps: 1, opsPerRep: 1, median: v, perOp: v, min: v, max: v, all: [v] }
}

/**
 * A main-thread figure as a report row: `value` (the longest task, ms) against nothing (`raw` is
 * the total blocking time, shown beside it; there is no ratio), the 50 ms target judged in the note.
 */
export function mainThreadRow(id, name, op, reading, extra = '') {
  const met = reading.longestMs <= 50
  return {
    id,
    name,
    op,
    unit: 'ms',
    sessionline: single(reading.longestMs),
    raw: single(reading.tbtMs),
    ratio: null,
    value: Math.round(reading.longestMs * 10) / 10,
    tbtMs: Math.round(reading.tbtMs * 10) / 10,
    longTasks: reading.longTasks,
    longestFrameGapMs: Math.round(reading.longestFrameGapMs * 10) / 10,
    note:
      `longest task ${reading.longestMs.toFixed(0)} ms (target ≤ 50 ms: ${met ? 'met' : 'MISSED'}); ` +
      `total blocking ${reading.tbtMs.toFixed(0)} ms (the "raw" column); ${reading.longTasks} long tasks; ` +
      `longest frame gap ${reading.longestFrameGapMs.toFixed(0)} ms${extra ? `; ${extra}` : ''}`,
  }
}

/**
 * Builds the playground into `outDir`, serves it, and streams the answer into it once.
 * @param {{ context: import('playwright-core').BrowserContext, root: string, outDir: string,
 *   vite: string, log: (m: string) => void, answerBytes: number, charsPerSecond: number,
 *   startServer: (o: { root: string }) => Promise<{ url: string, close: () => Promise<unknown> }> }} o
 */
export async function runPlaygroundStream(o) {
  o.log('building the playground (vite)')
  execFileSync(
    process.execPath,
    [
      o.vite,
      'build',
      '--config',
      path.join(o.root, 'demo/vite.config.ts'),
      '--outDir',
      o.outDir,
      '--logLevel',
      'warn',
    ],
    { cwd: o.root, stdio: 'inherit', timeout: 180_000 },
  )
  const text = markdownAnswer(o.answerBytes)
  const expectedMs = (text.length / o.charsPerSecond) * 1000
  const sse = await startSseServer({ text, charsPerSecond: o.charsPerSecond, limitMs: expectedMs + 60_000 })
  const site = await o.startServer({ root: o.outDir })
  const page = await o.context.newPage()
  try {
    await page.addInitScript(RECORDER)
    await page.addInitScript(
      ([key, config]) => localStorage.setItem(key, config),
      ['sessionline-demo:provider', JSON.stringify({ kind: 'openai', baseUrl: sse.baseUrl, model: 'bench' })],
    )
    await page.goto(site.url, { timeout: 30_000 })
    await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 })
    const before = page.url()
    await page.click('#new-session')
    await page.waitForFunction((url) => location.href !== url && /#\/session\//.test(location.hash), before)
    await page.waitForSelector('.transcript__empty:not([hidden])')
    await page.fill('#composer-input', 'Write the long answer.')
    await page.evaluate(() => window.__mainThread.reset())
    const t0 = Date.now()
    await page.press('#composer-input', 'Enter')
    const answer = '.transcript__rows > .row[data-role="assistant"]'
    await page.waitForSelector(answer, { timeout: 30_000 })
    await page.waitForFunction(
      (selector) =>
        ['complete', 'error', 'interrupted'].includes(
          document.querySelector(selector)?.getAttribute('data-state') ?? '',
        ),
      answer,
      { timeout: expectedMs + 90_000, polling: 500 },
    )
    const reading = await page.evaluate(() => window.__mainThread.read())
    const seconds = (Date.now() - t0) / 1000
    const state = await page.$eval(answer, (n) => n.getAttribute('data-state'))
    const shown = await page
      .$eval(`${answer} .part--markdown`, (n) => n.textContent?.length ?? 0)
      .catch(() => -1)
    return mainThreadRow(
      'main-thread-stream',
      `(15a) the playground streaming a ${Math.round(text.length / 1000)} KB markdown answer at ${o.charsPerSecond.toLocaleString('en')} characters/s`,
      'answer',
      reading,
      `${seconds.toFixed(0)} s from send to ${state}; ${shown.toLocaleString('en')} characters shown`,
    )
  } finally {
    await page.close().catch(() => {})
    await site.close()
    await sse.close()
  }
}

/** A main-thread ratio: sessionline's total blocking time against liveQuery's, ≤ 0.2×. */
function tbtRatio(id, name, sessionline, liveQuery) {
  const ratio = liveQuery.tbtMs < 0.001 ? null : Math.round((sessionline.tbtMs / liveQuery.tbtMs) * 100) / 100
  return {
    id,
    name,
    op: 'workload',
    unit: 'ms',
    sessionline: single(sessionline.tbtMs),
    raw: single(liveQuery.tbtMs),
    ratio,
    target: 0.2,
    note:
      `total blocking time; Dexie liveQuery in the "raw" column: longest task ${liveQuery.longestMs.toFixed(0)} ms, ` +
      `${liveQuery.longTasks} long tasks, longest frame gap ${liveQuery.longestFrameGapMs.toFixed(0)} ms` +
      (ratio === null ? ' (liveQuery blocked nothing: no ratio)' : ''),
  }
}

/**
 * The report rows of the page's workloads (src/main-thread.ts).
 * @param {import('./src/main-thread').MainThreadResult} r
 * @param {{ seedTurns: number }} config
 */
export function pageRows(r, config) {
  const turns = config.seedTurns.toLocaleString('en')
  const rows = r.search.rows.toLocaleString('en')
  return [
    mainThreadRow(
      'main-thread-cold-open',
      `(15b) cold open of a ${turns}-turn session and a jump to turn 1 (connect, first screen, jumpTo)`,
      'open + jump',
      r.coldOpen.sessionline,
      `${r.coldOpen.rows} rows in the view after the jump`,
    ),
    mainThreadRow(
      'main-thread-import',
      `(15c) importTranscript of a ${(r.import.bytes / 1e6).toFixed(1)} MB sessionline export, from the page`,
      'import',
      r.import.sessionline,
    ),
    mainThreadRow(
      'main-thread-search',
      `(15d) search as you type "${r.search.query}" over ${rows} rows, a key every 120 ms`,
      'typed query',
      r.search.sessionline,
    ),
    tbtRatio(
      'tbt-vs-livequery-cold-open',
      `(15b) total blocking time of the cold open vs liveQuery observing the ${r.coldOpen.liveRows.toLocaleString('en')}-row session`,
      r.coldOpen.sessionline,
      r.coldOpen.liveQuery,
    ),
    tbtRatio(
      'tbt-vs-livequery-search',
      `(15d) total blocking time of the search vs a liveQuery filter per key over ${rows} rows`,
      r.search.sessionline,
      r.search.liveQuery,
    ),
  ]
}
