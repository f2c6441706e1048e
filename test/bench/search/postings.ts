/**
 * The search index in Node, without storage: builds one index per demo-seeded session (the
 * corpus of the worker bench: `rows` rows in sessions of `turnsPerSession` turns) and times the
 * build and the worker bench's queries (one untimed round first), for our postings
 * (src/engine/search/postings.ts) and for MiniSearch used as decision 0015 first used it
 * (segments of 4,000 rows, the same tokenizer, fields, boosts, prefix/typo rules and AND), so
 * the two compare in one process on the same rows. Profile with `node --cpu-prof --import tsx`.
 *
 * Run: npx tsx test/bench/search/postings.ts [rows] [turnsPerSession] [rounds]   (prints JSON)
 */
import MiniSearch, { type SearchResult } from 'minisearch'
import { seedTurn } from '../../../demo/seed'
import {
  documentOf,
  FIELD_BOOST,
  SEARCH_FIELDS,
  type SearchDocument,
} from '../../../src/engine/search/documents'
import { SEGMENT_DOCS, SessionPostings, TopK, Vocabulary } from '../../../src/engine/search/postings'
import { compileQuery } from '../../../src/engine/search/query'
import { indexTerms, queryTerms } from '../../../src/engine/search/terms'
import type { SessionMessage } from '../../../src/schema/messages'
import { Stamper } from '../src/fixtures'
import { QUERIES } from '../src/search'

const rows = Number(process.argv[2] ?? 100_000)
const turnsPerSession = Number(process.argv[3] ?? 10_000)
const rounds = Number(process.argv[4] ?? 10)

function corpus(): SessionMessage[][] {
  const sessions: SessionMessage[][] = []
  let total = 0
  for (let s = 0; total < rows; s++) {
    const id = `corpus-${s}`
    const stamper = new Stamper(id, 1)
    const out = new Map<string, SessionMessage>()
    for (let turn = 1; turn <= turnsPerSession && total < rows; turn++) {
      const { rows: changed } = stamper.stamp(seedTurn(id, turn), 0)
      for (const row of changed) {
        if (!out.has(row.id)) total++
        out.set(row.id, row)
      }
    }
    sessions.push([...out.values()])
  }
  return sessions
}

interface Side {
  build(sessions: SessionMessage[][]): void
  query(text: string): number
}

function postingsSide(): Side {
  const vocabulary = new Vocabulary()
  let indexes: SessionPostings[] = []
  return {
    build(sessions) {
      indexes = sessions.map((list) => {
        const index = new SessionPostings(list[0]!.sessionId, vocabulary)
        for (const row of list) index.add(row)
        return index
      })
    },
    query(text) {
      const expansions = compileQuery(text).map((w) => vocabulary.expand(w))
      const top = new TopK(20)
      for (const index of indexes) index.search(expansions, top, false)
      const best = top.sorted()
      for (const c of best) SessionPostings.matchedTerms(expansions, c)
      return best.length
    },
  }
}

const CJK_START = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

function miniSearchSide(): Side {
  const identity = (term: string) => term
  const options = {
    fields: [...SEARCH_FIELDS],
    storeFields: ['sessionId', 'seq', 'turn', 'role', 'visibility'],
    tokenize: (text: string) => indexTerms(text),
    processTerm: identity,
    autoVacuum: false,
    searchOptions: { tokenize: (query: string) => queryTerms(query), processTerm: identity },
  }
  let segments: MiniSearch<SearchDocument>[] = []
  return {
    build(sessions) {
      segments = []
      for (const list of sessions) {
        for (let i = 0; i < list.length; i += SEGMENT_DOCS) {
          const mini = new MiniSearch<SearchDocument>(options)
          mini.addAll(list.slice(i, i + SEGMENT_DOCS).map(documentOf))
          segments.push(mini)
        }
      }
    },
    query(text) {
      const found: SearchResult[] = []
      const searchOptions = {
        prefix: (term: string, i: number, terms: string[]) =>
          i === terms.length - 1 || term.length > 1 || CJK_START.test(term),
        fuzzy: (term: string) => (term.length >= 5 && !CJK_START.test(term) ? 0.2 : false),
        combineWith: 'AND' as const,
        boost: { ...FIELD_BOOST },
        filter: (result: SearchResult) => result.visibility === 'visible',
      }
      for (const mini of segments) found.push(...mini.search(text, searchOptions))
      found.sort((a, b) => b.score - a.score || a.seq - b.seq)
      return found.slice(0, 20).length
    },
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

function measure(side: Side, sessions: SessionMessage[][]) {
  const t0 = performance.now()
  side.build(sessions)
  const buildMs = performance.now() - t0
  for (const query of QUERIES) side.query(query) // warm-up round, untimed
  const times: number[] = []
  const hits: Record<string, number> = {}
  for (let round = 0; round < rounds; round++) {
    for (const query of QUERIES) {
      const a = performance.now()
      hits[query] = side.query(query)
      times.push(performance.now() - a)
    }
  }
  times.sort((a, b) => a - b)
  return {
    buildMs: Math.round(buildMs),
    p50: Number(percentile(times, 0.5).toFixed(2)),
    p95: Number(percentile(times, 0.95).toFixed(2)),
    max: Number(times.at(-1)!.toFixed(2)),
    hits,
  }
}

const sessions = corpus()
const only = process.env.SIDE
console.log(
  JSON.stringify({
    rows: sessions.reduce((n, s) => n + s.length, 0),
    sessions: sessions.length,
    ...(only !== 'minisearch' && { postings: measure(postingsSide(), sessions) }),
    ...(only !== 'postings' && { minisearch: measure(miniSearchSide(), sessions) }),
  }),
)
