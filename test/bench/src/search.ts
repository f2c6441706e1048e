/**
 * (8) full-text search and (9) landing far back, with stable ids for the report:
 *
 * - `search-build`: commits keep the index live, so the build is timed on a fresh engine over the
 *   seeded corpus (`searchRows` rows) with the stored index dropped: the first search builds every
 *   session's index from its rows, while tail pages are read and timed (the build yields); against
 *   raw Dexie reading those rows (the floor any build pays).
 * - `search-p95`: p95 of warm queries (multi-word, prefix, one misspelt) in the worker, against
 *   a naive substring scan of the same rows held in memory.
 * - `search-index-bytes`: the stored index beside the rows' own size (JSON characters).
 * - `jump-turn-1` (page side): a fresh view of the long session lands on turn 1 with `jumpTo`,
 *   against the contiguous path (`loadThrough`); the note says how many rows each renders.
 * - `search-hit-landed` (page side): search, then `jumpTo` the oldest hit until its row is in
 *   the snapshot, against the same search followed by `loadThrough`.
 */

import { seedTurn } from '../../../demo/seed'
import type { SessionlineClient, TimelineSnapshot } from '../../../src/client/types'
import { fieldsOf, SEARCH_FIELDS } from '../../../src/engine/search/documents'
import { BUILD_PAGE, type SearchIndexEvent } from '../../../src/engine/search/index'
import { SessionPostings, Vocabulary } from '../../../src/engine/search/postings'
import { indexTerms } from '../../../src/engine/search/terms'
import type { Engine } from '../../../src/engine/types'
import { createEngine } from '../../../src/index'
import type { SessionMessage } from '../../../src/schema/messages'
import { openDb, type SessionlineDb } from '../../../src/store/db'
import { rowsInKeyOrder, rowsToIndex } from '../../../src/store/search'
import type { BenchConfig } from './config'
import type { BenchEnv } from './env'
import { openRaw } from './raw'
import { type Comparison, compare, figure, median } from './stats'

export const SEARCH_DB = 'bench-search'

export const QUERIES = [
  'retry policy',
  'cache key',
  'migration',
  'flaky recon',
  'keyboard rail',
  'provider stalls',
  'offline banner',
  'trimming tool outputs',
  'read_file',
  'behaviuor', // misspelt
  'inbox states',
  'cold start',
]

function p95(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!
}

/** A figure whose headline (`median`) is the p95 of `values`. */
function p95Figure(values: readonly number[]) {
  const f = figure(values, 1)
  return { ...f, median: Math.round(p95(values) * 1000) / 1000, perOp: Math.round(p95(values) * 1000) / 1000 }
}

/** A fresh database `dbName` of demo-seeded sessions of `seedTurns` turns, `searchRows` rows in all. */
export async function seedCorpus(
  env: BenchEnv,
  cfg: BenchConfig,
  dbName: string,
  events: SearchIndexEvent[] = [],
) {
  await openRaw(dbName, env.dexie).delete()
  const engine = createEngine({ ...env.engine, dbName, onSearchIndex: (e) => events.push(e) })
  let rows = 0
  for (let s = 0; rows < cfg.searchRows; s++) {
    const { id } = await engine.createSession({ title: `corpus ${s}` })
    let batch = []
    for (let turn = 1; turn <= cfg.seedTurns && rows < cfg.searchRows; turn++) {
      const turnEvents = seedTurn(id, turn)
      batch.push(...turnEvents)
      rows += turnEvents.filter((e) => e.type === 'user/message' || e.type === 'assistant/start').length
      if (batch.length >= 9000) {
        await engine.append(id, batch)
        batch = []
      }
    }
    if (batch.length > 0) await engine.append(id, batch)
  }
  return { engine, rows }
}

async function waitFor(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** Characters of strings and bytes of typed arrays in a stored value (what IndexedDB holds). */
function storedSize(value: unknown): number {
  if (ArrayBuffer.isView(value)) return value.byteLength
  if (typeof value === 'string') return value.length
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + storedSize(v), 0)
  if (value && typeof value === 'object') {
    return Object.entries(value).reduce((n, [k, v]) => n + k.length + storedSize(v), 0)
  }
  return String(value).length
}

const sum = (events: readonly SearchIndexEvent[], key: 'ms' | 'readMs' | 'indexMs') =>
  events.reduce((n, e) => n + (e[key] ?? 0), 0)

/**
 * Where a build's time goes, each phase timed alone over the same rows: reading them as a build
 * of many sessions reads them (pages of the rows table in key order; and, for comparison, page
 * by page one session after the other through the `[sessionId+seq]` index), folding and cutting their text
 * into terms, and the postings built from those terms (a whole index build minus the terms).
 */
async function buildPhases(db: SessionlineDb, sessionIds: readonly string[], all: readonly SessionMessage[]) {
  const t0 = performance.now()
  for (const id of sessionIds) {
    let from: number | undefined = 1
    while (from !== undefined) from = (await rowsToIndex(db, id, from, BUILD_PAGE)).nextSeq
  }
  const bySessionMs = performance.now() - t0
  const tk = performance.now()
  let after: string | undefined
  for (let first = true; first || after !== undefined; first = false) {
    after = (await rowsInKeyOrder(db, after, BUILD_PAGE, first)).nextAfter
  }
  const readMs = performance.now() - tk
  const t1 = performance.now()
  let terms = 0
  for (const row of all) {
    const fields = fieldsOf(row)
    for (const field of SEARCH_FIELDS) terms += indexTerms(fields[field]).length
  }
  const termsMs = performance.now() - t1
  const bySession = new Map<string, SessionMessage[]>()
  for (const row of all) {
    const list = bySession.get(row.sessionId) ?? []
    list.push(row)
    bySession.set(row.sessionId, list)
  }
  const vocabulary = new Vocabulary()
  const t2 = performance.now()
  for (const [id, rows] of bySession) {
    const postings = new SessionPostings(id, vocabulary)
    for (const row of rows) postings.add(row)
  }
  const indexMs = performance.now() - t2
  return { bySessionMs, readMs, termsMs, postingsMs: indexMs - termsMs, terms }
}

/** Runs in the worker: (8). */
export async function runSearch(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const events: SearchIndexEvent[] = []
  env.log(`(8) seeding a search corpus of ${cfg.searchRows} rows`)
  const seeded = await seedCorpus(env, cfg, SEARCH_DB, events)
  const { rows } = seeded
  // Commits keep the index live: closing writes what the seeding built. The build is timed on
  // a fresh engine over the same rows with the stored index dropped.
  await seeded.engine.close()
  // The engine's own schema: raw Dexie's declares no `search` table.
  const raw = openDb(SEARCH_DB, env.engine)

  /** The first search on a fresh engine with the stored index dropped: it builds every index. */
  async function timeBuild(rep: number) {
    await raw.search.clear()
    events.length = 0
    const engine = createEngine({ ...env.engine, dbName: SEARCH_DB, onSearchIndex: (e) => events.push(e) })
    env.log(
      `(8) index build ${rep + 1} of ${cfg.searchBuildReps} (the first search), with tail reads issued meanwhile`,
    )
    const sessions = await engine.listSessions()
    const t0 = performance.now()
    let building = true
    const built$ = engine.search('retry').finally(() => {
      building = false
    })
    // Other calls during the build: a tail page, one after the other, timed each.
    const duringBuild: number[] = []
    while (building) {
      const a = performance.now()
      await engine.page(sessions[0]!.id, { limit: 50 })
      duringBuild.push(performance.now() - a)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await built$
    const ms = performance.now() - t0
    const built = events.filter((e) => e.kind === 'rebuilt')
    // The index is written after the build: waited for, so that no read or build runs into it.
    await waitFor(() => events.filter((e) => e.kind === 'persisted').length >= built.length)
    return {
      engine,
      sessions,
      ms,
      duringBuild,
      built,
      persisted: events.filter((e) => e.kind === 'persisted'),
    }
  }

  // Builds and raw reads alternate which goes first, so a drift in the machine's load favours
  // neither side; every build but the last closes its engine (the index is written by then).
  const buildTimes: number[] = []
  const readTimes: number[] = []
  let all: SessionMessage[] = []
  const timeRead = async () => {
    const t0 = performance.now()
    all = await raw.messages.toArray()
    readTimes.push(performance.now() - t0)
  }
  let last: Awaited<ReturnType<typeof timeBuild>> | undefined
  try {
    for (let rep = 0; rep < cfg.searchBuildReps; rep++) {
      if (last) await last.engine.close()
      if (rep % 2 === 1) await timeRead()
      last = await timeBuild(rep)
      buildTimes.push(last.ms)
      if (rep % 2 === 0) await timeRead()
    }
    const { engine, sessions, duringBuild, built, persisted } = last!
    const buildMs = median(buildTimes)
    const per100k = (ms: number) => (ms * 100_000) / rows
    const slowestPage = Math.max(0, ...duringBuild)

    env.log('(8) the build phases, each alone')
    const phases = await buildPhases(
      raw,
      sessions.map((s) => s.id),
      all,
    )
    const s1 = (ms: number) => `${(ms / 1000).toFixed(2)} s`
    const phaseNote =
      `in the build: waiting for rows ${s1(sum(built, 'readMs'))}, indexing ${s1(sum(built, 'indexMs'))}; ` +
      `alone: reading in key order ${s1(phases.readMs)} (by session ${s1(phases.bySessionMs)}), terms ${s1(phases.termsMs)} (${(phases.terms / 1e6).toFixed(1)} M), ` +
      `postings ${s1(phases.postingsMs)}; the write after it ${s1(sum(persisted, 'ms'))}`
    env.log(`(8) ${phaseNote}`)
    env.log('(8) warm queries')
    const texts = all.map((row) =>
      row.parts
        .map((p) =>
          p.type === 'tool'
            ? `${JSON.stringify(p.input)} ${JSON.stringify(p.output ?? '')}`
            : 'text' in p
              ? p.text
              : '',
        )
        .join('\n')
        .toLowerCase(),
    )
    const searchTimes: number[] = []
    const scanTimes: number[] = []
    // One untimed round first, as every benchmark here has a warm-up repetition.
    for (const query of QUERIES) await engine.search(query, { limit: 20 })
    for (let i = 0; i < cfg.searchQueries; i++) {
      const query = QUERIES[i % QUERIES.length]!
      const a = performance.now()
      await engine.search(query, { limit: 20 })
      searchTimes.push(performance.now() - a)
      const b = performance.now()
      const needle = query.toLowerCase()
      let found = 0
      for (const text of texts) if (text.includes(needle)) found++
      scanTimes.push(performance.now() - b)
      if (found < 0) throw new Error('unreachable')
    }
    await engine.close() // writes the index
    const parts = await raw.search.toArray()
    const indexBytes = parts.reduce((n, p) => n + storedSize(p.data), 0)
    const dataBytes = all.reduce((n, row) => n + JSON.stringify(row).length, 0)
    return [
      compare(
        {
          id: 'search-build',
          name: `search index build, ${rows.toLocaleString('en-US')} rows (first search)`,
          op: 'build',
          note: `${Math.round(per100k(buildMs))} ms per 100,000 rows, median of ${buildTimes.length} builds (target ≤ 2,000 ms); ${built.length} session indexes; in the last build ${duringBuild.length} tail pages read, slowest ${slowestPage.toFixed(1)} ms; ${phaseNote}; raw: reading the rows`,
        },
        figure(buildTimes, 1),
        figure(readTimes, 1),
      ),
      compare(
        {
          id: 'search-p95',
          name: `search query p95 in the worker, ${rows.toLocaleString('en-US')} rows`,
          op: 'query (p95)',
          note: `median ${median(searchTimes).toFixed(2)} ms; target p95 ≤ 30 ms; raw: naive substring scan of the rows in memory`,
        },
        p95Figure(searchTimes),
        p95Figure(scanTimes),
      ),
      compare(
        {
          id: 'search-index-bytes',
          name: 'stored search index beside the rows it indexes',
          op: 'MB (bytes of typed arrays, characters of the rest; rows as JSON)',
          unit: 'MB',
          note: `index ${(indexBytes / 1e6).toFixed(1)} MB, rows ${(dataBytes / 1e6).toFixed(1)} MB`,
        },
        figure([indexBytes / 1e6], 1),
        figure([dataBytes / 1e6], 1),
      ),
    ]
  } finally {
    await last?.engine.close()
    raw.close()
  }
}

const hasRow = (s: TimelineSnapshot, id: string) =>
  s.rows.some((r) => r.kind === 'message' && r.message.id === id)

async function settle(view: ReturnType<SessionlineClient['open']>) {
  await new Promise<void>((resolve) => {
    const check = () => {
      if (view.getSnapshot().status === 'loading') return
      stop()
      resolve()
    }
    const stop = view.subscribe(check)
    check()
  })
}

/** Runs on the page, against the long session through `connect`: (9). */
export async function runJumps(
  client: SessionlineClient,
  sessionId: string,
  cfg: BenchConfig,
): Promise<Comparison[]> {
  const outline = await client.projection(sessionId, 'turnOutline')
  const first = outline[0]!
  const firstRow = (await client.page(sessionId, { afterSeq: 0, limit: 1 })).messages[0]!
  const times = {
    jump: [] as number[],
    through: [] as number[],
    hitJump: [] as number[],
    hitThrough: [] as number[],
  }
  const rendered = { jump: 0, through: 0 }
  // A query for the words of turn 3's prompt; the index is built once, outside the timing.
  const early = (await client.page(sessionId, { afterSeq: 0, limit: 12 })).messages
  const sample = early.find((m) => m.turn === 3 && m.role === 'user') ?? early.at(-1)!
  const sampleText = sample.parts.map((p) => ('text' in p ? p.text : '')).join(' ')
  const query = sampleText.split(/\s+/).slice(0, 4).join(' ')
  await client.search(query, { sessionId, limit: 50 })
  for (let rep = -1; rep < cfg.jumpReps; rep++) {
    for (const how of rep % 2 === 0 ? (['jump', 'through'] as const) : (['through', 'jump'] as const)) {
      const view = client.open(sessionId)
      await settle(view)
      const t0 = performance.now()
      if (how === 'jump') await view.jumpTo(first.seq)
      else await view.loadThrough(first.seq)
      const ms = performance.now() - t0
      const snap = view.getSnapshot()
      if (!hasRow(snap, firstRow.id)) throw new Error(`${how}: turn 1 did not land`)
      if (rep >= 0) times[how].push(ms)
      rendered[how] = snap.rows.length
      view.dispose()
    }
    for (const how of ['hitJump', 'hitThrough'] as const) {
      const view = client.open(sessionId)
      await settle(view)
      const t0 = performance.now()
      const found = await client.search(query, { sessionId, limit: 50 })
      const target = found.find((h) => h.messageId === sample.id) ?? found.sort((a, b) => a.seq - b.seq)[0]
      if (!target) throw new Error(`no hit for ${query}`)
      if (how === 'hitJump') await view.jumpTo(target.seq)
      else await view.loadThrough(target.seq)
      const ms = performance.now() - t0
      if (!hasRow(view.getSnapshot(), target.messageId)) throw new Error(`${how}: the hit did not land`)
      if (rep >= 0) times[how].push(ms)
      view.dispose()
    }
  }
  const out = [
    compare(
      {
        id: 'jump-turn-1',
        name: `land on turn 1 of ${outline.length.toLocaleString('en-US')} turns from a fresh view`,
        op: 'jump',
        note: `jumpTo renders ${rendered.jump} rows (target ≤ 150 ms, ≤ 400 rows); raw: loadThrough, ${rendered.through} rows`,
      },
      figure(times.jump, 1),
      figure(times.through, 1),
    ),
  ]
  if (times.hitJump.length > 0) {
    out.push(
      compare(
        {
          id: 'search-hit-landed',
          name: "search turn 3's words, then land on its row from a fresh view",
          op: 'hit → landed',
          note: 'target ≤ 200 ms; raw: the same search, then loadThrough',
        },
        figure(times.hitJump, 1),
        figure(times.hitThrough, 1),
      ),
    )
  }
  return out
}

export type { Engine }
