// @vitest-environment happy-dom
/**
 * `useSessionView` rendered for real: react-dom's client renderer in a happy-dom document, over a
 * real engine on fake-indexeddb reached through Comlink (the client harness). Render counts are
 * how a test tells "re-rendered" from "skipped"; `act` flushes React's work at each step.
 */
import { act, createElement, type ReactNode } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { renderToString } from 'react-dom/server'
import { afterEach, beforeAll, expect, test, vi } from 'vitest'
import { type AttachmentUrls, attachmentUrls } from '../../src/client/attachment-urls'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import { useAttachmentUrl, useSessionView } from '../../src/react'
import { openPage, type Page, ready, seedTurns, until } from './harness'

beforeAll(() => {
  // tells React that `act` is in charge of flushing, so it does not warn about unwrapped updates
  ;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true
})

let page: Page | undefined
let mounted: { root: Root; container: HTMLElement } | undefined
afterEach(async () => {
  if (mounted !== undefined) act(() => mounted?.root.unmount())
  mounted?.container.remove()
  mounted = undefined
  await page?.close()
  page = undefined
  vi.restoreAllMocks()
})

function mount(element: ReactNode): HTMLElement {
  const container = document.createElement('div')
  document.body.append(container)
  const root = createRoot(container)
  mounted = { root, container }
  act(() => root.render(element))
  return container
}

/** Renders of each component, by name. */
type Renders = Record<string, number>
const bump = (renders: Renders, name: string) => {
  renders[name] = (renders[name] ?? 0) + 1
}

const rowText = (row: TimelineSnapshot['rows'][number]) =>
  row.kind === 'message'
    ? `${row.message.role}:${row.message.id}`
    : row.kind === 'input'
      ? `${row.input.state}:${row.input.text}`
      : `gap:${row.fromSeq}-${row.toSeq}`

function Rows({ view, renders }: { view: SessionView; renders: Renders }) {
  bump(renders, 'rows')
  const rows = useSessionView(view, (s) => s.rows)
  return createElement(
    'ol',
    { id: 'rows' },
    rows.map((row) => createElement('li', { key: row.key, 'data-key': row.key }, rowText(row))),
  )
}

function Tray({ view, renders }: { view: SessionView; renders: Renders }) {
  bump(renders, 'tray')
  const queued = useSessionView(view, (s) => s.queued)
  return createElement(
    'ul',
    { id: 'tray' },
    queued.map((input) => createElement('li', { key: input.id }, `${input.state}:${input.text}`)),
  )
}

/** Its selector builds a new object on every call. */
function Counts({ view, renders }: { view: SessionView; renders: Renders }) {
  bump(renders, 'counts')
  const counts = useSessionView(view, (s) => ({ rows: s.rows.length, queued: s.queued.length }))
  return createElement('p', { id: 'counts' }, `${counts.rows}/${counts.queued}`)
}

const texts = (container: HTMLElement, selector: string) =>
  [...container.querySelectorAll(selector)].map((node) => node.textContent)

async function openReady(turns = 0) {
  page = await openPage()
  const { id } = await page.client.createSession()
  if (turns > 0) await seedTurns(page.engine, id, turns)
  const view = page.client.open(id)
  await ready(view)
  return { view, id, engine: page.engine }
}

test('a component re-renders when its part changes and not when another part does', async () => {
  const { view } = await openReady(1)
  const renders: Renders = {}
  const container = mount(
    createElement(
      'div',
      null,
      createElement(Rows, { view, renders }),
      createElement(Tray, { view, renders }),
    ),
  )
  expect(texts(container, '#rows li')).toEqual(['user:u-1', 'assistant:a-1'])
  const before = { ...renders }

  // a steer changes `rows` only: the tray's selected part keeps its identity
  await act(async () => {
    await view.admit('steer me', { id: 's-1' })
  })
  expect(texts(container, '#rows li')).toEqual(['user:u-1', 'assistant:a-1', 'pending:steer me'])
  expect(renders.rows).toBeGreaterThan(before.rows)
  expect(renders.tray).toBe(before.tray)

  // a queued input changes `queued` only: now the rows stay put
  const afterSteer = { ...renders }
  await act(async () => {
    await view.admit('later', { delivery: 'queue', id: 'q-1' })
  })
  expect(texts(container, '#tray li')).toEqual(['pending:later'])
  expect(renders.tray).toBeGreaterThan(afterSteer.tray)
  expect(renders.rows).toBe(afterSteer.rows)
})

test('the optimistic row is on screen before admit resolves, and keeps its element when promoted', async () => {
  const { view, id } = await openReady()
  const renders: Renders = {}
  const container = mount(createElement(Rows, { view, renders }))
  expect(texts(container, '#rows li')).toEqual([])

  let settled = false
  let admitted: Promise<unknown> = Promise.resolve()
  // a synchronous act: React commits before any message can come back from the worker
  act(() => {
    admitted = view.admit('hello', { id: 'in-1' }).finally(() => {
      settled = true
    })
  })
  expect(settled).toBe(false)
  expect(texts(container, '#rows li')).toEqual(['sending:hello'])
  const element = container.querySelector('[data-key="in-1"]')

  await act(async () => {
    await admitted
  })
  expect(texts(container, '#rows li')).toEqual(['pending:hello'])

  // promotion swaps the row for the transcript row under the same key: React keeps the element
  await act(async () => {
    await page?.client.promote(id, 'settled')
    await until(view, (s) => s.rows.some((row) => row.kind === 'message'))
  })
  expect(texts(container, '#rows li')).toEqual(['user:in-1'])
  expect(container.querySelector('[data-key="in-1"]')).toBe(element)
})

test('unmounting unsubscribes from the view', async () => {
  const { view } = await openReady()
  let listening = 0
  // the same view, with its subscriptions counted
  const counted: SessionView = Object.create(view, {
    subscribe: {
      value: (listener: () => void) => {
        listening++
        const stop = view.subscribe(listener)
        return () => {
          listening--
          stop()
        }
      },
    },
  })
  const renders: Renders = {}
  mount(createElement(Rows, { view: counted, renders }))
  expect(listening).toBe(1)

  act(() => mounted?.root.unmount())
  mounted = undefined
  expect(listening).toBe(0)
  const rendered = renders.rows
  await view.admit('after unmount')
  expect(renders.rows).toBe(rendered)
})

test('a selector that builds a new object each call renders once per change, without warnings', async () => {
  const { view } = await openReady(2)
  const errors = vi.spyOn(console, 'error')
  const renders: Renders = {}
  const container = mount(createElement(Counts, { view, renders }))
  expect(container.querySelector('#counts')?.textContent).toBe('4/0')
  const before = renders.counts
  const snapshots: TimelineSnapshot[] = []
  const stop = view.subscribe(() => snapshots.push(view.getSnapshot()))
  await act(async () => {
    await view.admit('one more', { delivery: 'queue' })
  })
  stop()
  expect(container.querySelector('#counts')?.textContent).toBe('4/1')
  // at most one render per published snapshot (no render loop from the fresh object)
  expect(renders.counts - before).toBeGreaterThan(0)
  expect(renders.counts - before).toBeLessThanOrEqual(snapshots.length)
  expect(errors).not.toHaveBeenCalled()
})

test('server rendering uses the current snapshot', async () => {
  const { view } = await openReady(2)
  const renders: Renders = {}
  const html = renderToString(createElement(Rows, { view, renders }))
  expect(html.match(/<li /g)).toHaveLength(4)
  expect(html).toContain('assistant:a-2')
})

function Picture({ urls, id }: { urls: AttachmentUrls; id: string }) {
  const src = useAttachmentUrl(urls, id)
  return src === undefined
    ? createElement('span', { id: 'pic' }, 'loading')
    : createElement('img', { id: 'pic', src })
}

test('useAttachmentUrl shows the URL once made and lets it go when the cache is disposed', async () => {
  const { view, id, engine } = await openReady()
  const bytes = new Uint8Array([137, 80, 78, 71, 9])
  const receipt = await engine.admit(id, {
    text: 'look',
    attachments: [{ name: 'a.png', mediaType: 'image/png', data: bytes.buffer }],
  })
  const attachmentId = receipt.attachments![0]!.attachmentId
  await until(view, (s) => s.rows.some((r) => r.key === receipt.id))
  // happy-dom's Blob is not Node's, which URL.createObjectURL wants: the URL's making is stood in for.
  let made = 0
  vi.spyOn(URL, 'createObjectURL').mockImplementation(() => `blob:test/${++made}`)
  vi.spyOn(URL, 'revokeObjectURL').mockImplementation(() => undefined)
  const urls = attachmentUrls(view, page!.client)
  const container = mount(createElement(Picture, { urls, id: attachmentId }))
  expect(container.querySelector('#pic')?.textContent).toBe('loading')
  await act(
    () =>
      new Promise<void>((resolve) => {
        const stop = urls.subscribe(() => {
          stop()
          resolve()
        })
      }),
  )
  const src = container.querySelector('img')?.getAttribute('src')
  expect(src).toBe(urls.get(attachmentId))
  expect(src).toBe('blob:test/1')
  act(() => urls.dispose())
  expect(URL.revokeObjectURL).toHaveBeenCalledWith('blob:test/1')
  expect(container.querySelector('#pic')?.textContent).toBe('loading')
  view.dispose()
})
