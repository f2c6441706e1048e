import { createElement } from 'react'
import { renderToString } from 'react-dom/server'
import { afterEach, expect, test, vi } from 'vitest'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import { useSessionView } from '../../src/react'
import { openPage, type Page, ready, seedTurns } from './harness'

let page: Page | undefined
afterEach(async () => {
  await page?.close()
  page = undefined
  vi.restoreAllMocks()
})

function Timeline({ view }: { view: SessionView }) {
  const rows = useSessionView(view, (s) => s.rows)
  const { status, rail } = useSessionView(view)
  // a selector that builds a new object every call: safe, its result is kept per snapshot
  const counts = useSessionView(view, (s) => ({ rows: s.rows.length, queued: s.queued.length }))
  return createElement(
    'ol',
    { 'data-status': status, 'data-rail': rail.length, 'data-counts': `${counts.rows}/${counts.queued}` },
    rows.map((row) =>
      createElement(
        'li',
        { key: row.key },
        row.kind === 'message' ? row.message.role : `pending:${row.input.text}`,
      ),
    ),
  )
}

test('useSessionView renders the snapshot and the parts a selector picks', async () => {
  page = await openPage()
  const { id } = await page.client.createSession()
  await seedTurns(page.engine, id, 2)
  const view = page.client.open(id)
  const errors = vi.spyOn(console, 'error')
  expect(renderToString(createElement(Timeline, { view }))).toContain('data-status="loading"')
  await ready(view)
  void view.admit('one more thing')
  const html = renderToString(createElement(Timeline, { view }))
  expect(html).toContain('data-status="ready"')
  expect(html).toContain('data-rail="2"')
  expect(html).toContain('data-counts="5/0"')
  expect(html.match(/<li>/g)).toHaveLength(5)
  expect(html).toContain('<li>pending:one more thing</li>')
  expect(errors).not.toHaveBeenCalled()
})

test('the view it subscribes to notifies on change and keeps the snapshot between changes', async () => {
  page = await openPage()
  const { id } = await page.client.createSession()
  const view = page.client.open(id)
  const before = await ready(view)
  const seen: TimelineSnapshot[] = []
  const stop = view.subscribe(() => seen.push(view.getSnapshot()))
  expect(view.getSnapshot()).toBe(before)
  const admitted = view.admit('ping')
  expect(seen).toHaveLength(1)
  expect(seen[0]).not.toBe(before)
  expect(view.getSnapshot()).toBe(seen[0])
  await admitted
  stop()
  const count = seen.length
  await view.admit('pong')
  expect(seen).toHaveLength(count)
})
