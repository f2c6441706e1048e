// @ts-check
/**
 * (13) `cross-tab-latency` and `second-tab-open`, with a dedicated worker per tab and
 * with one shared worker (docs/decisions/0035). Several pages of one Chromium: tab A commits a turn,
 * tab B's view shows it (from A's send to B's snapshot); then, with A and B open, a third tab opens
 * the session (from its `connect` to its view ready), closed and opened again.
 */

/** @param {number[]} xs @param {number} q */
const quantile = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
}
const round = (/** @type {number} */ x) => Math.round(x * 100) / 100

/** @param {number[]} xs */
const summary = (xs) => ({
  n: xs.length,
  median: round(quantile(xs, 0.5)),
  p95: round(quantile(xs, 0.95)),
  all: xs.map(round),
})

/**
 * @param {import('playwright-core').BrowserContext} context
 * @param {string} origin
 * @param {{ commits: number, opens: number, seedTurns: number }} sizes
 */
export async function runTabs(context, origin, sizes) {
  /** @type {Record<string, unknown>[]} */
  const rows = []
  for (const mode of /** @type {const} */ (['dedicated', 'shared'])) {
    const dbName = `bench-tabs-${mode}`
    const id = 's-tabs'
    /** @type {(page: import('playwright-core').Page, method: string, args?: unknown) => Promise<any>} */
    const call = (page, method, args) =>
      page.evaluate(
        ([m, a]) => /** @type {any} */ (window).benchTab[m](a),
        /** @type {const} */ ([method, args]),
      )
    const tab = async () => {
      const page = await context.newPage()
      await page.goto(`${origin}/tabs.html`, { timeout: 30_000 })
      await page.waitForFunction(() => /** @type {any} */ (window).benchTab !== undefined, null, {
        timeout: 30_000,
      })
      return page
    }
    const a = await tab()
    await call(a, 'open', { mode, dbName, id, seedTurns: sizes.seedTurns })
    const b = await tab()
    await call(b, 'open', { mode, dbName, id })
    const delays = []
    const afterAnswer = []
    for (let i = 0; i < sizes.commits; i++) {
      const { headSeq, sentAt, answeredAt } = await call(a, 'commit', { turn: sizes.seedTurns + 1 + i })
      const seenAt = await call(b, 'seen', { headSeq, ms: 10_000 })
      delays.push(seenAt - sentAt)
      afterAnswer.push(seenAt - answeredAt)
    }
    const opens = []
    for (let i = 0; i < sizes.opens; i++) {
      const c = await tab()
      opens.push((await call(c, 'open', { mode, dbName, id })).openMs)
      await call(c, 'close')
      await c.close()
    }
    for (const page of [a, b]) {
      await call(page, 'close')
      await page.close()
    }
    rows.push({
      mode,
      crossTabMs: summary(delays),
      afterAnswerMs: summary(afterAnswer),
      secondTabOpenMs: summary(opens),
    })
  }
  return rows
}

/** @typedef {{ median: number, p95: number, n: number }} Summary */
/** @param {{ mode: string, crossTabMs: Summary, afterAnswerMs: Summary, secondTabOpenMs: Summary }[]} rows */
export function tabsTable(rows) {
  const lines = [
    '| # | two tabs on one session | dedicated worker per tab | one shared worker | shared / dedicated |',
    '|---|---|---:|---:|---:|',
  ]
  const [dedicated, shared] = [
    rows.find((r) => r.mode === 'dedicated'),
    rows.find((r) => r.mode === 'shared'),
  ]
  if (!dedicated || !shared) return ''
  const line = (
    /** @type {string} */ id,
    /** @type {string} */ name,
    /** @type {'crossTabMs' | 'afterAnswerMs' | 'secondTabOpenMs'} */ key,
  ) => {
    const [d, s] = [dedicated[key], shared[key]]
    lines.push(
      `| ${id} | ${name} (n=${d.n}) | ${d.median} ms (p95 ${d.p95}) | ${s.median} ms (p95 ${s.p95}) | ${d.median > 0 && s.median > 0 ? `${round(s.median / d.median)}×` : 'n/a'} |`,
    )
  }
  line('cross-tab-latency', "a commit sent in tab A to tab B's snapshot", 'crossTabMs')
  line(
    'cross-tab-after-answer',
    "the same, from A's answer (the commit durable) to B's snapshot",
    'afterAnswerMs',
  )
  line(
    'second-tab-open',
    "a second tab's cold open: connect to view ready, two tabs already open",
    'secondTabOpenMs',
  )
  return lines.join('\n')
}
