/**
 * A build reads its next page while it indexes this one (src/engine/search/paging.ts,
 * `pipelined`): the next page's read must have gone out to storage before this page is indexed,
 * or storage sits idle while the worker indexes. Dexie issues a transaction's requests from a
 * microtask, so asking for the page is not enough; counted here on fake-indexeddb's requests, for
 * both ways of building (session by session, and together from the rows table).
 */
import { IDBKeyRange } from 'fake-indexeddb'
import { expect, test } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import { createSearchIndex } from '../../../src/engine/search/index'
import { openDb } from '../../../src/store/db'
import { freshDbName } from '../../support/engines'
import { createReadCountingFactory } from '../../support/read-counting-factory'
import { turnEvents } from '../../support/turns'

async function seeded(sessions: number, turns: number) {
  const reads = createReadCountingFactory()
  const dbName = freshDbName('search-read-ahead')
  const engine = createEngine({ dbName, indexedDB: reads.factory, IDBKeyRange, broadcast: false })
  for (let s = 0; s < sessions; s++) {
    const { id } = await engine.createSession({ title: `s${s}` })
    await engine.append(
      id,
      Array.from(
        { length: turns },
        (_, i) => turnEvents(i + 1, { prompt: `ochre ${i}`, answer: 'ok' }).events,
      ).flat(),
    )
  }
  await engine.close()
  const db = openDb(dbName, { indexedDB: reads.factory, IDBKeyRange })
  await db.search.clear()
  return { db, reads }
}

for (const [way, sessions, buildTogetherShare] of [
  ['session by session', 1, 2],
  ['together from the rows table', 3, 0],
] as const) {
  test(`a build ${way} has asked storage for the next page before it indexes this one`, async () => {
    const { db, reads } = await seeded(sessions, 10)
    // Requests on `messages` issued when each page's indexing was told, by page.
    const issuedAt = new Map<number, number>()
    let page = 0
    let inBurst = false
    const index = createSearchIndex({
      db,
      buildPage: 4,
      buildTogetherShare,
      syncConcurrency: 1,
      onEvent: (e) => {
        // A build together tells every session a page touched, all at once: one page, one count.
        if (e.kind !== 'indexing' || inBurst) return
        inBurst = true
        queueMicrotask(() => {
          inBurst = false
        })
        issuedAt.set(++page, reads.requests('messages'))
      },
    })
    try {
      reads.reset()
      expect((await index.search('ochre', { limit: 100 })).length).toBe(10 * sessions)
      expect(issuedAt.size).toBeGreaterThan(2)
      // Page k indexed: pages 1…k were read and page k + 1's read is already out.
      for (const [k, requests] of issuedAt) expect(requests, `page ${k}`).toBe(k + 1)
    } finally {
      await index.close()
      db.close()
    }
  })
}
