/**
 * The search index follows every session the engine writes, searched or not, and builds in
 * pages that leave room for other calls; on fake-indexeddb, through the public API of the
 * engine (and of the index module, where a small build page is needed to see the pages).
 */

import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import { createSearchIndex, type SearchIndexEvent } from '../../../src/engine/search/index'
import { type Candidate, TopK } from '../../../src/engine/search/postings'
import { openDb } from '../../../src/store/db'
import { freshDbName } from '../../support/engines'
import { turnEvents } from '../../support/turns'

const options = (dbName: string, events: SearchIndexEvent[]) => ({
  dbName,
  indexedDB,
  IDBKeyRange,
  broadcast: false,
  onSearchIndex: (event: SearchIndexEvent) => events.push(event),
})

/** Resolves once `events` holds an event `match` accepts (the index reports every step it takes). */
function eventually(events: SearchIndexEvent[], match: (e: SearchIndexEvent) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (events.some(match) ? resolve() : setTimeout(check, 5))
    check()
  })
}

test('a session written but never searched is indexed from its commits: its first search builds nothing', async () => {
  const dbName = freshDbName('search-live')
  const events: SearchIndexEvent[] = []
  const engine = createEngine(options(dbName, events))
  try {
    const { id } = await engine.createSession({ title: 'live' })
    await engine.append(id, turnEvents(1, { prompt: 'periwinkle', answer: 'ok' }).events)
    // The commit schedules a background sync of the unloaded index: a build of what is there.
    await eventually(events, (e) => e.kind === 'rebuilt' && e.sessionId === id)
    await engine.append(id, turnEvents(2, { prompt: 'chartreuse', answer: 'ok' }).events)
    const before = events.length
    expect((await engine.search('chartreuse')).map((h) => h.sessionId)).toEqual([id])
    expect((await engine.search('periwinkle')).map((h) => h.sessionId)).toEqual([id])
    // The second commit went straight into the loaded index: the searches read no rows.
    expect(events.slice(before).filter((e) => e.kind !== 'persisted')).toEqual([])
  } finally {
    await engine.close()
  }
})

test('after a restart, the first commit loads and catches up the stored index in the background, and a search then finds the new rows without reading any', async () => {
  const dbName = freshDbName('search-live-restart')
  const first = createEngine(options(dbName, []))
  const { id } = await first.createSession({ title: 'live' })
  await first.append(id, turnEvents(1, { prompt: 'cobalt', answer: 'ok' }).events)
  expect(await first.search('cobalt')).toHaveLength(1)
  await first.close() // writes the index

  const events: SearchIndexEvent[] = []
  const second = createEngine(options(dbName, events))
  try {
    await second.append(id, turnEvents(2, { prompt: 'viridian', answer: 'ok' }).events)
    await eventually(events, (e) => e.kind === 'caught-up')
    expect(events.map((e) => e.kind).filter((k) => k !== 'persisted')).toEqual(['loaded', 'caught-up'])
    await second.append(id, turnEvents(3, { prompt: 'carmine', answer: 'ok' }).events)
    const before = events.length
    expect(await second.search('viridian')).toHaveLength(1)
    expect(await second.search('carmine')).toHaveLength(1)
    expect(await second.search('cobalt')).toHaveLength(1)
    expect(events.slice(before).filter((e) => e.kind !== 'persisted')).toEqual([])
  } finally {
    await second.close()
  }
})

test('a build reads and indexes its rows a page at a time, and a write made between two pages completes before the build ends and is found by the next search', async () => {
  const dbName = freshDbName('search-pages')
  const seeding = createEngine(options(dbName, []))
  const { id } = await seeding.createSession({ title: 'pages' })
  // Many pages, so that the write (one append) lands well within the build however a loaded
  // machine interleaves the two: with 40 turns (8 pages) the build could end first, and the test
  // failed on a busy CI run. Here the write lands by page 5 of 40, also under load.
  const turns = Array.from({ length: 200 }, (_, i) =>
    turnEvents(i + 1, { prompt: `ochre ${i}`, answer: 'ok' }),
  )
  await seeding.append(
    id,
    turns.flatMap((t) => t.events),
  )
  await seeding.close()
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  // The seeding engine stored the index it kept; this build starts from the rows alone.
  await db.search.clear()
  const engine = createEngine(options(dbName, []))
  const seen: SearchIndexEvent[] = []
  // 400 rows in pages of 10: the build yields 39 times.
  const index = createSearchIndex({ db, buildPage: 10, persistDelay: 0, onEvent: (e) => seen.push(e) })
  try {
    const pages = () => seen.filter((e) => e.kind === 'indexing').length
    const search = index.search('ochre', { limit: 500 })
    await eventually(seen, (e) => e.kind === 'indexing')
    await engine.append(id, turnEvents(201, { prompt: 'sepia', answer: 'ok' }).events)
    const pagesWhenWritten = pages()
    expect((await search).length).toBe(200)
    const done = seen.find((e) => e.kind === 'rebuilt')!
    expect(done.rows).toBeGreaterThanOrEqual(400)
    // The write did not wait for the build: it completed while pages were still being read
    // (at least 39 yields for 400 rows, more if the build also read the rows written meanwhile).
    expect(pages()).toBeGreaterThanOrEqual(39)
    expect(pagesWhenWritten).toBeLessThan(pages())
    expect(await index.search('sepia')).toHaveLength(1)
  } finally {
    await index.close()
    db.close()
    await engine.close()
  }
})

test('the top-k heap keeps exactly the best `limit` candidates in order (score, then session, then seq), as a full sort does', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.constantFrom('a', 'b', 'c'), fc.nat(50)), {
        maxLength: 200,
      }),
      fc.integer({ min: 1, max: 30 }),
      (entries, limit) => {
        const unique = [...new Map(entries.map((e) => [`${e[1]}/${e[2]}`, e])).values()]
        const candidates = unique.map(
          ([score, sessionId, seq]) => ({ score, sessionId, seq, id: `${sessionId}/${seq}` }) as Candidate,
        )
        const top = new TopK(limit)
        for (const c of candidates) if (top.admits(c.score, c.sessionId, c.seq)) top.push(c)
        const expected = [...candidates]
          .sort((a, b) => b.score - a.score || a.sessionId.localeCompare(b.sessionId) || a.seq - b.seq)
          .slice(0, limit)
        expect(top.sorted().map((c) => c.id)).toEqual(expected.map((c) => c.id))
      },
    ),
    { seed: 15016, numRuns: 300 },
  )
})

test('an imported session is indexed in the background after the import: its first search builds nothing', async () => {
  const dbName = freshDbName('search-import')
  const events: SearchIndexEvent[] = []
  const engine = createEngine(options(dbName, events))
  const pi = [
    { type: 'session', version: 3, id: 'live-import', timestamp: '2026-02-03T08:00:00.000Z', cwd: '/w' },
    {
      type: 'message',
      id: 'u1',
      parentId: null,
      timestamp: '2026-02-03T08:00:01.000Z',
      message: { role: 'user', content: 'a question about lighthouses', timestamp: 1770105601000 },
    },
  ]
    .map((line) => JSON.stringify(line))
    .join('\n')
  try {
    const session = await engine.importTranscript({ text: pi, name: 'live.jsonl' })
    await eventually(events, (e) => e.kind === 'rebuilt' && e.sessionId === session.id)
    const before = events.length
    expect((await engine.search('lighthouses')).map((h) => h.sessionId)).toEqual([session.id])
    expect(events.slice(before).filter((e) => e.kind !== 'persisted')).toEqual([])
  } finally {
    await engine.close()
  }
})
