/**
 * One-off comparison of full-text libraries on our rows (docs/decisions/0015): MiniSearch,
 * FlexSearch and Orama, each fed the same 100,000 documents made from the seeded turns (the
 * text of prompts, answers, tool input and output) with our tokenizer and folding, measured
 * for build time, query latency (p50/p95 over prefix and fuzzy queries), serialized size and
 * reload time, plus whether each answers the diacritics and CJK probes.
 *
 * Run: npx tsx test/bench/search/libraries.ts   (Node; prints one JSON object)
 */
import { create, insertMultiple, load, search as oramaSearch, save } from '@orama/orama'
import FlexSearch from 'flexsearch'
import MiniSearch from 'minisearch'
import { seedTurn } from '../../../demo/seed'
import { indexTerms, queryTerms } from '../../../src/engine/search/terms'

interface Doc extends Record<string, string> {
  id: string
  text: string
  tool: string
}

const ROWS = 100_000
const EXTRA = [
  'Le café de la gare a rouvert; la crème brûlée était déjà prête.',
  '東京都庁の検索インデックスを再構築しました。',
  'Überprüfe die Größe des Caches, bevor du ihn löschst.',
  '서울에서 검색 속도를 측정했습니다.',
]

function corpus(): Doc[] {
  const docs: Doc[] = []
  for (let turn = 1; docs.length < ROWS; turn++) {
    let user = ''
    const answers = new Map<string, { text: string; tool: string }>()
    for (const e of seedTurn('bench', turn)) {
      if (e.type === 'user/message') user = e.data.text
      if (e.type === 'assistant/start') answers.set(e.data.messageId, { text: '', tool: '' })
      if (e.type === 'assistant/delta') answers.get(e.data.messageId)!.text += e.data.text ?? ''
      if (e.type === 'tool/call') answers.get(e.data.messageId)!.tool += JSON.stringify(e.data.input)
      if (e.type === 'tool/result') {
        for (const a of answers.values()) if (a.tool !== '') a.tool += ` ${JSON.stringify(e.data.output)}`
      }
    }
    const extra = turn % 17 === 0 ? ` ${EXTRA[turn % EXTRA.length]}` : ''
    docs.push({ id: `u${turn}`, text: user + extra, tool: '' })
    for (const [id, a] of answers) docs.push({ id, text: a.text, tool: a.tool })
  }
  return docs.slice(0, ROWS)
}

const QUERIES = [
  'retry',
  'cache key',
  'migration index',
  'flaky recon',
  'keyboard rail',
  'provider stalls',
  'offline banner',
  'trimming tool',
  'read_file',
  'turn 4321',
  'behaviour',
  'clearer',
  'inbox states',
  'worker answers',
  'paged transcript',
  'uploads',
  'search_docs',
  'lines',
]
const FUZZY = ['migraton', 'behavoir', 'keybord', 'transcirpt']

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function timeQueries(run: (q: string) => number, queries: readonly string[]) {
  const times: number[] = []
  for (let round = 0; round < 5; round++) {
    for (const q of queries) {
      const t0 = performance.now()
      run(q)
      times.push(performance.now() - t0)
    }
  }
  return { p50: +percentile(times, 50).toFixed(2), p95: +percentile(times, 95).toFixed(2) }
}

async function main() {
  const docs = corpus()
  const dataBytes = docs.reduce((n, d) => n + d.text.length + d.tool.length, 0)
  const results: Record<string, unknown> = { rows: docs.length, textChars: dataBytes }

  // --- MiniSearch -------------------------------------------------------------------------
  {
    const options = {
      fields: ['text', 'tool'],
      tokenize: indexTerms,
      processTerm: (t: string) => t,
      searchOptions: { tokenize: (q: string) => queryTerms(q), processTerm: (t: string) => t },
    }
    const t0 = performance.now()
    const mini = new MiniSearch<Doc>(options)
    mini.addAll(docs)
    const build = performance.now() - t0
    const json = JSON.stringify(mini)
    const t1 = performance.now()
    MiniSearch.loadJSON(json, options)
    const reload = performance.now() - t1
    const q = (query: string) =>
      mini.search(query, {
        prefix: true,
        fuzzy: (term) => (term.length >= 4 ? 0.2 : 0),
        combineWith: 'AND',
        boost: { text: 2 },
      }).length
    results.minisearch = {
      buildMs: Math.round(build),
      bytes: json.length,
      reloadMs: Math.round(reload),
      prefixFuzzy: timeQueries(q, QUERIES),
      fuzzyTypos: { ...timeQueries(q, FUZZY), hits: FUZZY.map(q) },
      cafe: q('cafe'),
      cjk: q('東京'),
      cjkOne: q('庁'),
      grosse: q('grosse'),
      korean: q('검색'),
    }
  }

  // --- FlexSearch -------------------------------------------------------------------------
  {
    const t0 = performance.now()
    const flex = new FlexSearch.Document({
      document: { id: 'id', index: ['text', 'tool'] },
      tokenize: 'forward',
      encode: (text: string) => indexTerms(text),
    })
    for (const d of docs) flex.add({ ...d })
    const build = performance.now() - t0
    const chunks: string[] = []
    await flex.export((key: string | number, data: unknown) => {
      chunks.push(String(key), typeof data === 'string' ? data : JSON.stringify(data))
    })
    const bytes = chunks.reduce((n, c) => n + c.length, 0)
    const q = (query: string) => {
      const found = flex.search(query, { limit: 1000 }) as unknown as { result: unknown[] }[]
      return found.reduce((n, f) => n + f.result.length, 0)
    }
    results.flexsearch = {
      buildMs: Math.round(build),
      bytes,
      prefixFuzzy: timeQueries(q, QUERIES),
      fuzzyTypos: { ...timeQueries(q, FUZZY), hits: FUZZY.map(q) },
      cafe: q('cafe'),
      cjk: q('東京'),
      cjkOne: q('庁'),
      grosse: q('grosse'),
      korean: q('검색'),
      note: 'no edit-distance fuzzy: typos only through phonetic encoders, which fold CJK away',
    }
  }

  // --- Orama ------------------------------------------------------------------------------
  {
    const tokenizer = {
      language: 'english',
      normalizationCache: new Map<string, string>(),
      tokenize: (raw: string) => indexTerms(raw),
    }
    const t0 = performance.now()
    const orama = create({ schema: { text: 'string', tool: 'string' } as const, components: { tokenizer } })
    await insertMultiple(orama, docs, 5000)
    const build = performance.now() - t0
    const json = JSON.stringify(save(orama))
    const t1 = performance.now()
    const again = create({ schema: { text: 'string', tool: 'string' } as const, components: { tokenizer } })
    load(again, JSON.parse(json))
    const reload = performance.now() - t1
    const q = (query: string) => {
      const found = oramaSearch(orama, { term: query, tolerance: 1, limit: 1000 }) as { count: number }
      return found.count
    }
    results.orama = {
      buildMs: Math.round(build),
      bytes: json.length,
      reloadMs: Math.round(reload),
      prefixFuzzy: timeQueries(q, QUERIES),
      fuzzyTypos: { ...timeQueries(q, FUZZY), hits: FUZZY.map(q) },
      cafe: q('cafe'),
      cjk: q('東京'),
      cjkOne: q('庁'),
      grosse: q('grosse'),
      korean: q('검색'),
    }
  }
  console.log(JSON.stringify(results, null, 2))
}

await main()
