/**
 * The first screen read on the page (`connect({dbName})`, docs/decisions/0038): shown before the
 * worker answers anything, equal to what the worker's read shows after it, and handed over
 * without a row leaving the screen or moving. Where the page cannot answer as the worker would,
 * it shows nothing and the worker's read is the first.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test } from 'vitest'
import type { TimelineRow, TimelineSnapshot } from '../../src/client/types'
import { openDb } from '../../src/store/db'
import { firstScreenReader } from '../../src/store/first-screen'
import { SCHEMA_VERSIONS } from '../../src/store/migrations'
import { freshDbName } from '../support/engines'
import { openPage, type Page, record, seedTurns, turnEvents, until } from './harness'

const pages: Page[] = []
afterEach(async () => {
  for (const page of pages.splice(0)) await page.close()
})

async function pageWith(turns: number): Promise<Page> {
  const page = await openPage({ firstScreen: true })
  pages.push(page)
  await page.engine.createSession({ id: 's' })
  await seedTurns(page.engine, 's', turns)
  return page
}

const keys = (s: TimelineSnapshot) => s.rows.map((row: TimelineRow) => row.key)
const messageCount = (s: TimelineSnapshot) => s.rows.filter((row) => row.kind === 'message').length
/** The worker's read has landed: it brings the outline, which the page's read leaves to it. */
const fromWorker = (s: TimelineSnapshot) => s.status === 'ready' && s.outline.length > 0

/** Every key of `before` is in `after`, in the same order: nothing left the screen or moved. */
function onlyAdds(before: TimelineSnapshot, after: TimelineSnapshot): void {
  const later = keys(after)
  const at = keys(before).map((key) => later.indexOf(key))
  expect(at.every((i) => i >= 0)).toBe(true)
  expect([...at].sort((a, b) => a - b)).toEqual(at)
}

describe('the first screen read on the page', () => {
  test('shows the tail and the inbox before the worker answers, as the worker then shows them', async () => {
    const page = await pageWith(40)
    await page.engine.admit('s', { id: 'steer-1', text: 'and then?' })
    await page.engine.admit('s', { id: 'queued-1', text: 'later', delivery: 'queue' })
    await page.client.listSessions() // the connection is up
    page.hold(true)
    const view = page.client.open('s')
    const seen = record(view)
    const first = await until(view, (s) => s.status === 'ready')
    // Nothing reached the worker: the page read this.
    expect(page.calls.get('watch') ?? 0).toBe(0)
    expect(messageCount(first)).toBe(50)
    expect(first.rows.at(-1)).toMatchObject({ kind: 'input', input: { id: 'steer-1', state: 'pending' } })
    expect(first.queued.map((input) => input.id)).toEqual(['queued-1'])
    expect(first.outline).toEqual([])

    page.hold(false)
    const handed = await until(view, fromWorker)
    expect(handed.rows).toEqual(first.rows)
    // The same row objects: a row's renderer sees no change at the hand-over.
    const messages = (s: TimelineSnapshot) => s.rows.filter((row) => row.kind === 'message')
    expect(messages(handed).every((row, i) => row === messages(first)[i])).toBe(true)
    expect(handed.queued).toEqual(first.queued)
    expect([handed.baseSeq, handed.headSeq, handed.hasOlder]).toEqual([
      first.baseSeq,
      first.headSeq,
      first.hasOlder,
    ])
    for (const later of seen.slice(seen.indexOf(first))) onlyAdds(first, later)
  })

  test('a loadThrough in the opening task is answered on the page, and done once it is shown', async () => {
    const page = await pageWith(30)
    await page.client.listSessions()
    page.hold(true)
    const view = page.client.open('s')
    await view.loadThrough(1) // the worker has not answered: the page's read covers seq 1
    const first = view.getSnapshot()
    expect([first.status, messageCount(first), first.hasOlder, first.loadingOlder]).toEqual([
      'ready',
      60,
      false,
      false,
    ])
    page.hold(false)
    const handed = await until(view, fromWorker)
    expect(handed.rows).toEqual(first.rows)
  })

  test('a loadThrough past the first screen waits for the worker, then loads below it', async () => {
    const page = await pageWith(40)
    await page.client.listSessions()
    page.hold(true)
    const view = page.client.open('s')
    const first = await until(view, (s) => s.status === 'ready')
    expect(first.baseSeq).toBeGreaterThan(1)
    const loaded = view.loadThrough(1)
    page.hold(false)
    await loaded
    const all = view.getSnapshot()
    expect([messageCount(all), all.hasOlder]).toEqual([80, false])
    onlyAdds(first, all)
  })

  test('a commit between the two reads only adds to what the page showed', async () => {
    const page = await pageWith(30)
    await page.client.listSessions()
    page.hold(true)
    const view = page.client.open('s')
    const seen = record(view)
    const first = await until(view, (s) => s.status === 'ready')
    await page.engine.append('s', turnEvents(31))
    page.hold(false)
    const handed = await until(view, (s) => fromWorker(s) && keys(s).includes('a-31'))
    expect(messageCount(handed)).toBe(52)
    for (const later of seen.slice(seen.indexOf(first))) onlyAdds(first, later)
  })

  test('an admit made while the page reads shows once, then as the worker stored it', async () => {
    const page = await pageWith(3)
    await page.client.listSessions()
    page.hold(true)
    const view = page.client.open('s')
    const admitted = view.admit('typed at once', { id: 'early' })
    const first = await until(view, (s) => s.status === 'ready')
    expect(first.rows.filter((row) => row.key === 'early')).toHaveLength(1)
    page.hold(false)
    await admitted
    const handed = await until(view, fromWorker)
    expect(handed.rows.filter((row) => row.key === 'early')).toMatchObject([{ input: { state: 'pending' } }])
  })

  test('a session the database does not hold is left to the worker, which says not_found', async () => {
    const page = await pageWith(1)
    const view = page.client.open('missing')
    const seen = record(view)
    const end = await until(view, (s) => s.status !== 'loading')
    expect(end.status).toBe('error')
    expect(end.error?.code).toBe('not_found')
    expect(seen.some((s) => s.status === 'ready')).toBe(false)
  })
})

describe('the page reader', () => {
  const request = { sessionId: 's', tail: 50, includeInactive: false }
  const options = { indexedDB, IDBKeyRange }

  test('never creates a database', async () => {
    const name = freshDbName('absent')
    const reader = firstScreenReader(name, options)
    expect(await reader.read(request)).toBeUndefined()
    reader.close()
    expect((await indexedDB.databases()).map((db) => db.name)).not.toContain(name)
  })

  test('answers nothing from a database of another schema version', async () => {
    const name = freshDbName('old')
    const old = openDb(name, options, SCHEMA_VERSIONS.slice(0, 2))
    await old.open()
    old.close()
    const reader = firstScreenReader(name, options)
    expect(await reader.read(request)).toBeUndefined()
    reader.close()
  })

  test('answers nothing for rows the engine would rebuild first', async () => {
    const page = await pageWith(2)
    const db = openDb(page.dbName, options)
    // As another version of the engine would store it: every write to a session bumps its `rev`.
    await db.transaction('rw', db.sessions, db.projections, async () => {
      await db.projections.update(['s', 'transcript'], { version: 1 })
      await db.sessions.update('s', (row) => {
        row.rev += 1
      })
    })
    db.close()
    const reader = firstScreenReader(page.dbName, options)
    expect(await reader.read(request)).toBeUndefined()
    reader.close()
  })

  test('lets go of the database when another connection deletes it', async () => {
    const page = await pageWith(2)
    const reader = firstScreenReader(page.dbName, options)
    expect(await reader.read(request)).toBeDefined()
    await page.engine.close()
    await new Promise<void>((resolve, reject) => {
      const deleting = indexedDB.deleteDatabase(page.dbName)
      deleting.onsuccess = () => resolve()
      deleting.onerror = () => reject(deleting.error)
      deleting.onblocked = () => reject(new Error('blocked by the page reader'))
    })
    expect(await reader.read(request)).toBeUndefined()
    reader.close()
  })
})
