import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer } from '../../demo/serve.mjs'
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.mjs'
import { type SyncServer, startSyncServer } from '../sync/server.mjs'

// `npm run sync-server` from a page on another origin, as the playground calls it: Chromium
// sends the CORS preflight for JSON and the Producer headers itself and enforces the answer,
// which a Node test cannot show. No demo build needed: the page is a blank one.

let browser: Browser | undefined
let page: { url: string; close(): Promise<void> } | undefined
let sync: SyncServer | undefined
let root: string | undefined

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sessionline-sync-page-'))
  await writeFile(join(root, 'index.html'), '<!doctype html><title>sync origin</title>')
  page = await startServer({ root })
  sync = await startSyncServer()
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS] })
})
afterAll(async () => {
  await browser?.close()
  await sync?.close()
  await page?.close()
  if (root) await rm(root, { recursive: true, force: true })
})

describe('the sync server from a browser page on another origin', () => {
  it('creates a stream, appends with Producer headers, retries as a duplicate and reads the offset', async () => {
    const tab = await browser!.newPage()
    await tab.goto(page!.url)
    const stream = `${sync!.streams}/from-a-page`
    expect(new URL(stream).origin).not.toBe(new URL(page!.url).origin)
    const got = await tab.evaluate(async (url) => {
      const json = { 'content-type': 'application/json' }
      const producer = (seq: number) => ({
        ...json,
        'producer-id': 'page',
        'producer-epoch': '0',
        'producer-seq': String(seq),
      })
      const created = await fetch(url, { method: 'PUT', headers: json })
      const body = JSON.stringify([{ seq: 1, type: 'user/message' }])
      const first = await fetch(url, { method: 'POST', headers: producer(0), body })
      const again = await fetch(url, { method: 'POST', headers: producer(0), body })
      const read = await fetch(`${url}?offset=-1`)
      return {
        origin: location.origin,
        created: created.status,
        first: first.status,
        firstEpoch: first.headers.get('producer-epoch'),
        again: again.status,
        read: read.status,
        offset: read.headers.get('stream-next-offset'),
        upToDate: read.headers.get('stream-up-to-date'),
        events: await read.json(),
      }
    }, stream)
    expect(got.origin).toBe(new URL(page!.url).origin)
    expect(got).toMatchObject({
      created: 201,
      first: 200,
      firstEpoch: '0',
      again: 204,
      read: 200,
      upToDate: 'true',
    })
    // The page can read the exposed headers the sync needs.
    expect(got.offset).toBeTruthy()
    expect(got.events).toEqual([{ seq: 1, type: 'user/message' }])
    await tab.close()
  })

  it('refuses a header the server does not allow: a conditional GET (the known conformance failure)', async () => {
    const tab = await browser!.newPage()
    await tab.goto(page!.url)
    const stream = `${sync!.streams}/from-a-page`
    const outcome = await tab.evaluate(async (url) => {
      try {
        const response = await fetch(`${url}?offset=-1`, { headers: { 'if-none-match': '"x"' } })
        return `answered ${response.status}`
      } catch (error) {
        return `refused: ${(error as Error).name}`
      }
    }, stream)
    expect(outcome).toBe('refused: TypeError')
    await tab.close()
  })
})
