/**
 * A first search that must build most sessions' indexes reads the rows table once in key order
 * for all of them (src/engine/search/index.ts, `buildTogether`); on fake-indexeddb, through the
 * index module so both ways of building can be asked for on the same rows:
 *
 * - differential: built together, the indexes answer every query exactly as indexes built
 *   session by session (one at a time) do, hits, scores and snippets; and so do both built while
 *   the engine writes (small pages, none read ahead);
 * - a commit made while the table is being read is found by the next search.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import { createSearchIndex, type SearchIndexEvent } from '../../../src/engine/search/index'
import type { SessionEvent } from '../../../src/schema/events'
import { openDb } from '../../../src/store/db'
import { freshDbName } from '../../support/engines'
import { manualClock } from '../../support/manual-clock'
import { turnEvents } from '../../support/turns'

const engineOptions = (dbName: string) => ({ dbName, indexedDB, IDBKeyRange, broadcast: false })

const WORDS = ['ochre', 'umber', 'sienna', 'Café', 'crème', '東京都', '서울', 'retry', 'retries', 'x1']
const textArb = fc
  .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 5 })
  .map((words) => words.join(' '))
const turnArb = fc.record({
  prompt: textArb,
  answer: fc.option(textArb, { nil: undefined }),
  tool: fc.option(fc.tuple(textArb, textArb), { nil: undefined }),
})
/** Sessions of turns; the last turn of a session may be left streaming (its answer unsettled). */
const corpusArb = fc.array(
  fc.record({ turns: fc.array(turnArb, { minLength: 1, maxLength: 8 }), streaming: fc.boolean() }),
  { minLength: 2, maxLength: 4 },
)
type Corpus = typeof corpusArb extends fc.Arbitrary<infer T> ? T : never

const QUERIES = [...WORDS, 'ret', 'ochre umber', 'cafe', '京都', 'siena', 'grep']

async function seed(dbName: string, corpus: Corpus) {
  const engine = createEngine(engineOptions(dbName))
  for (const [s, session] of corpus.entries()) {
    const { id } = await engine.createSession({ title: `s${s}` })
    const events: SessionEvent[] = []
    for (const [i, turn] of session.turns.entries()) {
      events.push(
        ...turnEvents(i + 1, {
          prompt: turn.prompt,
          answer: turn.answer,
          tool: turn.tool && { name: 'grep', input: { q: turn.tool[0] }, output: turn.tool[1] },
        }).events,
      )
    }
    if (session.streaming) {
      // A turn whose answer is still being written: not indexed until it settles.
      const turn = session.turns.length + 1
      const open = turnEvents(turn, { prompt: 'umber', answer: 'sienna' }).events
      events.push(...open.filter((e) => !['assistant/end', 'step/end', 'turn/end'].includes(e.type)))
    }
    await engine.append(id, events)
  }
  await engine.close()
}

test('indexes built together from the rows table answer every query exactly as indexes built session by session do', async () => {
  await fc.assert(
    fc.asyncProperty(corpusArb, async (corpus) => {
      const dbName = freshDbName('search-together')
      await seed(dbName, corpus)
      const db = openDb(dbName, { indexedDB, IDBKeyRange })
      await db.search.clear()
      const answers = async (options: {
        buildTogetherShare: number
        syncConcurrency: number
        writing?: boolean
      }) => {
        const { writing, ...rest } = options
        const events: SearchIndexEvent[] = []
        const index = createSearchIndex({
          db,
          buildPage: 3,
          onEvent: (e) => events.push(e),
          // A manual clock stands still: a write noted once keeps every page of the build small.
          ...(writing ? { writePage: 2, clock: manualClock() } : {}),
          ...rest,
        })
        if (writing) index.noteWrite()
        try {
          const out = []
          for (const query of QUERIES) {
            for (const includeInactive of [false, true])
              out.push(await index.search(query, { limit: 50, includeInactive }))
          }
          const reads = events.filter((e) => e.kind === 'rebuilt').map((e) => e.read)
          // Rows indexed per page, session by session (a build together shares its pages out).
          const steps = events
            .filter((e) => e.kind === 'indexing' || e.kind === 'rebuilt')
            .map((e, i, all) => {
              const before = all.slice(0, i).findLast((p) => p.sessionId === e.sessionId)
              return e.rows - (before?.rows ?? 0)
            })
          return { out, reads, steps }
        } finally {
          await index.close()
          await db.search.clear()
        }
      }
      try {
        const together = await answers({ buildTogetherShare: 0, syncConcurrency: 3 })
        const bySession = await answers({ buildTogetherShare: 2, syncConcurrency: 1 })
        const togetherWriting = await answers({ buildTogetherShare: 0, syncConcurrency: 3, writing: true })
        const bySessionWriting = await answers({ buildTogetherShare: 2, syncConcurrency: 1, writing: true })
        expect(together.reads).toEqual(corpus.map(() => 'table'))
        expect(bySession.reads).toEqual(corpus.map(() => 'session'))
        expect(togetherWriting.reads).toEqual(corpus.map(() => 'table'))
        expect(bySessionWriting.reads).toEqual(corpus.map(() => 'session'))
        expect(Math.max(...bySession.steps)).toBeLessThanOrEqual(3)
        expect(Math.max(...bySessionWriting.steps)).toBeLessThanOrEqual(2)
        expect(together.out).toEqual(bySession.out)
        expect(togetherWriting.out).toEqual(bySession.out)
        expect(bySessionWriting.out).toEqual(bySession.out)
        expect(together.out.flat().length).toBeGreaterThan(0)
      } finally {
        db.close()
      }
    }),
    { seed: 24027, numRuns: 8 },
  )
})

test('a commit made while the rows table is being read for a build together is found by the next search', async () => {
  const dbName = freshDbName('search-together-write')
  const seeding = createEngine(engineOptions(dbName))
  const ids: string[] = []
  for (let s = 0; s < 3; s++) {
    const { id } = await seeding.createSession({ title: `s${s}` })
    ids.push(id)
    await seeding.append(
      id,
      Array.from(
        { length: 10 },
        (_, i) => turnEvents(i + 1, { prompt: `ochre ${s} ${i}`, answer: 'ok' }).events,
      ).flat(),
    )
  }
  await seeding.close()
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  await db.search.clear()
  const engine = createEngine(engineOptions(dbName))
  const seen: SearchIndexEvent[] = []
  // 60 rows in pages of 5: the build yields between pages.
  const index = createSearchIndex({ db, buildPage: 5, persistDelay: 0, onEvent: (e) => seen.push(e) })
  try {
    const search = index.search('ochre', { limit: 100 })
    while (!seen.some((e) => e.kind === 'indexing')) await new Promise((resolve) => setTimeout(resolve, 2))
    await engine.append(ids[1]!, turnEvents(11, { prompt: 'sepia', answer: 'ok' }).events)
    expect((await search).length).toBe(30)
    expect(seen.filter((e) => e.kind === 'rebuilt').map((e) => e.read)).toEqual(['table', 'table', 'table'])
    // Rows committed during the read are either read by it or caught up by the next sync.
    const found = await index.search('sepia')
    expect(found.map((h) => h.sessionId)).toEqual([ids[1]])
  } finally {
    await index.close()
    db.close()
    await engine.close()
  }
})
