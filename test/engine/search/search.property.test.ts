/**
 * Search against a naive reference, on generated sessions (fast-check): whatever the way the
 * rows were written (streamed in batches cut anywhere, searched in between so the loaded index
 * follows commits, the engine reopened so the stored index is loaded and caught up),
 *
 * 1. every row a plain scan finds the query in (as an exact substring starting at a word, after
 *    folding case and accents) is a hit, and
 * 2. the index built that way answers exactly like one rebuilt from scratch from the rows.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import type { SearchIndexEvent } from '../../../src/engine/search/index'
import type { Engine } from '../../../src/engine/types'
import type { SessionEvent } from '../../../src/schema/events'
import type { SessionMessage } from '../../../src/schema/messages'
import type { SearchHit } from '../../../src/schema/search'
import { openDb } from '../../../src/store/db'
import { freshDbName } from '../../support/engines'
import { turnEvents } from '../../support/turns'

const WORDS = [
  'alpha',
  'alphabet',
  'beta',
  'Café',
  'cafe',
  'crème',
  'naïve',
  'Größe',
  'retry',
  'retries',
  'migration',
  'x1',
  '東京都',
  '京都',
  '検索',
  '서울',
  'δέλτα',
  'Ünïcödé',
  'tool_call',
]
const SEPARATORS = [' ', ' ', ', ', '. ', '\n', ' (', ') ']

const textArb = fc
  .array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...SEPARATORS)), { minLength: 1, maxLength: 6 })
  .map((pairs) =>
    pairs
      .map(([w, s]) => w + s)
      .join('')
      .trim(),
  )

const turnArb = fc.record({
  prompt: textArb,
  answer: textArb,
  reasoning: fc.option(textArb, { nil: undefined }),
  tool: fc.option(fc.record({ input: textArb, output: textArb }), { nil: undefined }),
  /** Where the turn's events are cut into appends, and whether to search between them. */
  cuts: fc.array(fc.nat({ max: 12 }), { maxLength: 3 }),
  searchBetween: fc.boolean(),
  reopenAfter: fc.boolean(),
})

const sessionsArb = fc.array(fc.array(turnArb, { minLength: 1, maxLength: 5 }), {
  minLength: 1,
  maxLength: 2,
})

/** Reference folding: lower case and the accents NFD splits off, nothing else. */
const fold = (s: string) =>
  s
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .normalize('NFC')
    .toLowerCase()
    .replace(/ß/g, 'ss')
const isWordChar = (c: string) => /[\p{L}\p{N}]/u.test(c)
const isCjk = (c: string) =>
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(c)

/** Does `query` occur in `text` starting at a word (or at any CJK character)? */
function occursAtWord(text: string, query: string): boolean {
  const t = fold(text)
  const q = fold(query)
  for (let at = t.indexOf(q); at >= 0; at = t.indexOf(q, at + 1)) {
    const before = at === 0 ? ' ' : t[at - 1]!
    if (!isWordChar(before) || isCjk(t[at]!)) return true
  }
  return false
}

/** Each part's text on its own (a match never spans two parts). */
function partTexts(row: SessionMessage): string[] {
  return row.parts.flatMap((p) =>
    p.type === 'tool'
      ? [p.name, JSON.stringify(p.input), ...(p.output === undefined ? [] : [JSON.stringify(p.output)])]
      : 'text' in p
        ? [p.text]
        : [p.name],
  )
}

/** Queries cut from the rows' own text at word starts, plus a few that match nothing. */
function queriesFrom(rows: readonly SessionMessage[], picks: readonly [number, number, number][]): string[] {
  const texts = rows.flatMap(partTexts).filter((t) => t.length > 0)
  const queries = new Set(['zzzz', 'nothing here'])
  for (const [a, b, c] of picks) {
    const text = texts[a % texts.length]!
    const starts = [...text.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m.index)
    const start = starts[b % starts.length]!
    const q = text.slice(start, start + 2 + (c % 14))
    if (/[\p{L}\p{N}]/u.test(q)) queries.add(q)
  }
  return [...queries]
}

const options = (dbName: string, events: SearchIndexEvent[] = []) => ({
  dbName,
  indexedDB,
  IDBKeyRange,
  broadcast: false,
  onSearchIndex: (e: SearchIndexEvent) => events.push(e),
})

async function allRows(engine: Engine, sessionIds: readonly string[]): Promise<SessionMessage[]> {
  const rows: SessionMessage[] = []
  for (const id of sessionIds) rows.push(...(await engine.page(id, { limit: 1000 })).messages)
  return rows
}

const answerOf = (hits: readonly SearchHit[]) =>
  hits.map((h) => `${h.sessionId}/${h.messageId}/${h.seq}/${h.snippet}/${JSON.stringify(h.ranges)}`).sort()

test('every exact-substring hit of a naive scan is found, and the incrementally kept index answers like a rebuilt one', async () => {
  await fc.assert(
    fc.asyncProperty(
      sessionsArb,
      fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { minLength: 4, maxLength: 10 }),
      async (sessions, picks) => {
        const dbName = freshDbName('search-prop')
        let engine = createEngine(options(dbName))
        const sessionIds: string[] = []
        try {
          for (const turns of sessions) {
            const { id } = await engine.createSession()
            sessionIds.push(id)
            for (const [i, turn] of turns.entries()) {
              const { events } = turnEvents(i + 1, {
                prompt: turn.prompt,
                answer: turn.answer,
                reasoning: turn.reasoning,
                tool: turn.tool && {
                  name: 'lookup',
                  input: { q: turn.tool.input },
                  output: turn.tool.output,
                },
              })
              const cuts = [...new Set(turn.cuts.map((c) => c % events.length))].sort((a, b) => a - b)
              let from = 0
              for (const cut of [...cuts, events.length]) {
                if (cut <= from) continue
                await engine.append(id, events.slice(from, cut) as SessionEvent[])
                from = cut
                if (turn.searchBetween) await engine.search(turn.prompt.slice(0, 3))
              }
              if (turn.reopenAfter) {
                await engine.close()
                engine = createEngine(options(dbName))
              }
            }
          }
          const rows = await allRows(engine, sessionIds)
          const queries = queriesFrom(rows, picks)
          const incremental = new Map<string, string[]>()
          for (const query of queries) {
            const hits = await engine.search(query, { limit: 500 })
            const found = new Set(hits.map((h) => h.messageId))
            const expected = rows.filter((row) => partTexts(row).some((t) => occursAtWord(t, query)))
            for (const row of expected) expect(found, `${query} in ${row.id}`).toContain(row.id)
            incremental.set(query, answerOf(hits))
          }
          await engine.close()

          // Drop the stored index: the next engine must rebuild, and answer the same.
          const db = openDb(dbName, { indexedDB, IDBKeyRange })
          await db.search.clear()
          db.close()
          const events: SearchIndexEvent[] = []
          engine = createEngine(options(dbName, events))
          for (const query of queries) {
            expect(answerOf(await engine.search(query, { limit: 500 })), query).toEqual(
              incremental.get(query),
            )
          }
          expect(events.filter((e) => e.kind === 'rebuilt')).toHaveLength(sessionIds.length)
        } finally {
          await engine.close()
        }
      },
    ),
    { numRuns: 20, seed: 15015 },
  )
}, 400_000)
