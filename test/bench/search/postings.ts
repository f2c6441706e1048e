/**
 * The search index in Node, without storage: builds one session index per demo-seeded session
 * (the corpus of the worker bench, `searchRows` rows) and times the build and the bench's queries,
 * so the index can be profiled (`node --cpu-prof`) apart from IndexedDB.
 *
 * Run: npx tsx test/bench/search/postings.ts [rows] [turnsPerSession]
 */
import { seedTurn } from '../../../demo/seed'
import { SessionPostings, TopK, Vocabulary } from '../../../src/engine/search/postings'
import { compileQuery } from '../../../src/engine/search/query'
import type { SessionMessage } from '../../../src/schema/messages'
import { Stamper } from '../src/fixtures'
import { QUERIES } from '../src/search'

const rows = Number(process.argv[2] ?? 100_000)
const turnsPerSession = Number(process.argv[3] ?? 10_000)

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

const sessions = corpus()
const vocabulary = new Vocabulary()
const t0 = performance.now()
const indexes = sessions.map((list) => {
  const index = new SessionPostings(list[0]!.sessionId, vocabulary)
  for (const row of list) index.add(row)
  return index
})
const buildMs = performance.now() - t0
const times: number[] = []
const perQuery: Record<string, number[]> = {}
for (let round = 0; round < Number(process.env.ROUNDS ?? 10); round++) {
  for (const query of QUERIES) {
    const a = performance.now()
    const expansions = compileQuery(query).map((w) => vocabulary.expand(w))
    const top = new TopK(20)
    for (const index of indexes) index.search(expansions, top, false)
    const best = top.sorted()
    for (const c of best) SessionPostings.matchedTerms(expansions, c)
    times.push(performance.now() - a)
    perQuery[query] = [...(perQuery[query] ?? []), Math.round((performance.now() - a) * 10) / 10]
  }
}
times.sort((a, b) => a - b)
const t1 = performance.now()
let bytes = 0
for (const index of indexes) {
  for (const at of index.takeDirty()) {
    const s = index.store(at)
    bytes += s.docs.byteLength + s.tfs.byteLength + s.offsets.byteLength + s.lengths.byteLength
    bytes += JSON.stringify([s.ids, s.seq, s.turn, s.role, s.visibility, s.terms]).length
  }
}
const storeMs = performance.now() - t1
console.log(
  JSON.stringify({
    rows: sessions.reduce((n, s) => n + s.length, 0),
    sessions: sessions.length,
    buildMs: Math.round(buildMs),
    p50: times[Math.floor(times.length / 2)]!.toFixed(2),
    p95: times[Math.floor(times.length * 0.95)]!.toFixed(2),
    max: times.at(-1)!.toFixed(2),
    storeMs: Math.round(storeMs),
    storedMB: (bytes / 1e6).toFixed(1),
    perQuery,
  }),
)
