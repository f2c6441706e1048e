/**
 * Full-text search through the engine, in process and through Comlink, on fake-indexeddb:
 * what is searchable, how it matches (prefix, typos, diacritics, CJK), how it ranks, and how
 * the index follows streaming, deletes, re-imports, other engines and a reload.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import { INDEX_VERSION, type SearchIndexEvent } from '../../../src/engine/search/index'
import type { Engine } from '../../../src/engine/types'
import { isSessionlineError } from '../../../src/schema/errors'
import { openDb } from '../../../src/store/db'
import { engineKinds, freshDbName } from '../../support/engines'
import { turnEvents } from '../../support/turns'

async function sessionWith(engine: Engine, turns: Parameters<typeof turnEvents>[1][]) {
  const { id } = await engine.createSession({ title: 'search' })
  const ids: { userId: string; answerId: string }[] = []
  const events = turns.flatMap((text, i) => {
    const turn = turnEvents(i + 1, text)
    ids.push(turn)
    return turn.events
  })
  await engine.append(id, events)
  return { sessionId: id, ids }
}

/** A Pi file whose first question was abandoned for another: one inactive user row. */
const PI_BRANCHED = [
  { type: 'session', version: 3, id: 'search-branch', timestamp: '2026-02-03T08:00:00.000Z', cwd: '/w' },
  {
    type: 'message',
    id: 'u1',
    parentId: null,
    timestamp: '2026-02-03T08:00:01.000Z',
    message: { role: 'user', content: 'abandoned zeppelin question', timestamp: 1770105601000 },
  },
  {
    type: 'message',
    id: 'u2',
    parentId: null,
    timestamp: '2026-02-03T08:00:02.000Z',
    message: { role: 'user', content: 'kept question about harbours', timestamp: 1770105602000 },
  },
]
  .map((line) => JSON.stringify(line))
  .join('\n')

describe.each(engineKinds)('search %s', (_, makeEngine) => {
  test('finds a word in prompts, answers, reasoning, tool input and tool output, tool output ranked below text', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const { sessionId, ids } = await sessionWith(engine, [
        { prompt: 'please fix the turbine', answer: 'done' },
        { prompt: 'next', answer: 'the turbine spins again' },
        { prompt: 'why', reasoning: 'the turbine was stuck', answer: 'it was stuck' },
        {
          prompt: 'check',
          tool: { name: 'read_file', input: { path: 'turbine.md' }, output: 'ok' },
          answer: 'read',
        },
        {
          prompt: 'logs',
          tool: { name: 'tail', input: { n: 1 }, output: { line: 'turbine overheated' } },
          answer: 'seen',
        },
      ])
      const hits = await engine.search('turbine', { limit: 50 })
      expect(new Set(hits.map((h) => h.messageId))).toEqual(
        new Set([ids[0]!.userId, ids[1]!.answerId, ids[2]!.answerId, ids[3]!.answerId, ids[4]!.answerId]),
      )
      expect(hits.every((h) => h.sessionId === sessionId)).toBe(true)
      // The tool-output hit is the weakest of the five.
      expect(hits.at(-1)?.messageId).toBe(ids[4]!.answerId)
      const prompt = hits.find((h) => h.messageId === ids[0]!.userId)!
      expect(prompt).toMatchObject({ role: 'user', turn: 1, snippet: 'please fix the turbine' })
      expect(prompt.ranges).toEqual([[15, 22]])
      expect(prompt.snippet.slice(15, 22)).toBe('turbine')
    } finally {
      await close()
    }
  })

  test('matches prefixes and single typos of longer words, and every word of the query (AND)', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const { ids } = await sessionWith(engine, [
        { prompt: 'write the migration for the index', answer: 'ok' },
        { prompt: 'migration only', answer: 'ok' },
      ])
      expect((await engine.search('migr')).map((h) => h.messageId).sort()).toEqual(
        [ids[0]!.userId, ids[1]!.userId].sort(),
      )
      expect((await engine.search('migraton')).length).toBe(2)
      expect((await engine.search('migration index')).map((h) => h.messageId)).toEqual([ids[0]!.userId])
      expect(await engine.search('zzz migration')).toEqual([])
      expect(await engine.search('  ,;  ')).toEqual([])
    } finally {
      await close()
    }
  })

  test('folds case and diacritics both ways and highlights the original spelling', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const { ids } = await sessionWith(engine, [
        { prompt: 'Le Café est fermé', answer: 'Größe prüfen' },
        { prompt: 'a plain cafe', answer: 'ok' },
      ])
      const cafe = await engine.search('CAFÉ')
      expect(cafe.map((h) => h.messageId).sort()).toEqual([ids[0]!.userId, ids[1]!.userId].sort())
      const accented = cafe.find((h) => h.messageId === ids[0]!.userId)!
      expect(accented.ranges.map(([a, b]) => accented.snippet.slice(a, b))).toEqual(['Café'])
      expect((await engine.search('ferme')).map((h) => h.messageId)).toEqual([ids[0]!.userId])
      expect((await engine.search('grosse')).map((h) => h.messageId)).toEqual([ids[0]!.answerId])
    } finally {
      await close()
    }
  })

  test('finds Chinese, Japanese and Korean text by any run of its characters', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const { ids } = await sessionWith(engine, [
        { prompt: '東京都庁の検索インデックスを再構築しました', answer: 'ok' },
        { prompt: '서울에서 검색 속도를 측정했습니다', answer: 'ok' },
        { prompt: '京都の寺', answer: 'ok' },
      ])
      const tokyo = await engine.search('東京都')
      expect(tokyo.map((h) => h.messageId)).toEqual([ids[0]!.userId])
      expect(tokyo[0]!.ranges.map(([a, b]) => tokyo[0]!.snippet.slice(a, b))).toEqual(['東京都'])
      expect((await engine.search('京都')).map((h) => h.messageId).sort()).toEqual(
        [ids[0]!.userId, ids[2]!.userId].sort(),
      )
      expect((await engine.search('庁')).map((h) => h.messageId)).toEqual([ids[0]!.userId])
      expect((await engine.search('インデックス')).map((h) => h.messageId)).toEqual([ids[0]!.userId])
      expect((await engine.search('검색')).map((h) => h.messageId)).toEqual([ids[1]!.userId])
      expect(await engine.search('大阪')).toEqual([])
    } finally {
      await close()
    }
  })

  test('a streaming row is found once it settles, not before', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const { id } = await engine.createSession()
      await engine.append(id, [
        { type: 'turn/start', data: { turn: 1 } },
        {
          type: 'user/message',
          data: { inputId: 'stream-u', text: 'go', delivery: 'steer', source: 'user' },
        },
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'stream-a', turn: 1, step: 1 } },
      ])
      expect(await engine.search('go')).toHaveLength(1) // the index is loaded and follows commits now
      await engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'stream-a', text: 'walrus ' } }])
      expect(await engine.search('walrus')).toEqual([])
      await engine.append(id, [
        { type: 'assistant/delta', data: { messageId: 'stream-a', text: 'and narwhal' } },
        { type: 'assistant/end', data: { messageId: 'stream-a', finish: 'stop' } },
      ])
      const hits = await engine.search('walrus narwhal')
      expect(hits.map((h) => [h.messageId, h.snippet])).toEqual([['stream-a', 'walrus and narwhal']])
    } finally {
      await close()
    }
  })

  test('limits to one session and to `limit` hits; refuses bad input with invalid_input', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const a = await sessionWith(engine, [{ prompt: 'shared lantern', answer: 'lantern lit' }])
      const b = await sessionWith(engine, [{ prompt: 'another lantern', answer: 'ok' }])
      expect(await engine.search('lantern', { limit: 50 })).toHaveLength(3)
      expect(await engine.search('lantern', { limit: 2 })).toHaveLength(2)
      const onlyB = await engine.search('lantern', { sessionId: b.sessionId })
      expect(onlyB.map((h) => h.messageId)).toEqual([b.ids[0]!.userId])
      expect(await engine.search('lantern', { sessionId: 'no-such-session' })).toEqual([])
      void a
      for (const bad of [
        () => engine.search(42 as unknown as string),
        () => engine.search('x', { limit: 0 }),
        () => engine.search('x', { other: 1 } as never),
      ]) {
        const error = await bad().catch((e: unknown) => e)
        expect(isSessionlineError(error) && error.code).toBe('invalid_input')
      }
    } finally {
      await close()
    }
  })

  test('inactive rows of an imported session only with includeInactive', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const session = await engine.importTranscript({ text: PI_BRANCHED, name: 'b.jsonl' })
      expect(await engine.search('zeppelin')).toEqual([])
      const inactive = await engine.search('zeppelin', { includeInactive: true })
      expect(inactive).toHaveLength(1)
      expect(inactive[0]!.sessionId).toBe(session.id)
      expect((await engine.search('harbours')).map((h) => h.sessionId)).toEqual([session.id])
    } finally {
      await close()
    }
  })

  test('a deleted session and the old rows of a re-imported one leave no hits', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const native = await sessionWith(engine, [{ prompt: 'obsidian', answer: 'ok' }])
      const first = PI_BRANCHED
      const session = await engine.importTranscript({ text: first, name: 'b.jsonl' })
      expect(await engine.search('obsidian')).toHaveLength(1)
      expect(await engine.search('harbours')).toHaveLength(1)
      await engine.deleteSession(native.sessionId)
      expect(await engine.search('obsidian')).toEqual([])
      await engine.importTranscript({ text: first.replace('harbours', 'lighthouses'), name: 'b.jsonl' })
      expect(await engine.search('harbours')).toEqual([])
      expect((await engine.search('lighthouses')).map((h) => h.sessionId)).toEqual([session.id])
      await engine.deleteSession(session.id)
      expect(await engine.search('lighthouses', { includeInactive: true })).toEqual([])
      expect(await engine.search('question', { includeInactive: true })).toEqual([])
    } finally {
      await close()
    }
  })
})

describe('search index persistence', () => {
  const options = (dbName: string, events: SearchIndexEvent[]) => ({
    dbName,
    indexedDB,
    IDBKeyRange,
    broadcast: false,
    onSearchIndex: (event: SearchIndexEvent) => events.push(event),
  })

  test('a fresh engine loads the stored index instead of rebuilding it, and catches up only what is new', async () => {
    const dbName = freshDbName('search-persist')
    const first: SearchIndexEvent[] = []
    const a = createEngine(options(dbName, first))
    const { sessionId } = await sessionWith(a, [
      { prompt: 'cobalt', answer: 'blue' },
      { prompt: 'umber', answer: 'brown' },
    ])
    const before = await a.search('cobalt')
    expect(first.filter((e) => e.kind === 'rebuilt')).toHaveLength(1)
    await a.close() // writes the index

    const second: SearchIndexEvent[] = []
    const b = createEngine(options(dbName, second))
    try {
      expect(await b.search('cobalt')).toEqual(before)
      expect(second.map((e) => e.kind)).toEqual(['loaded'])
      await b.append(sessionId, turnEvents(3, { prompt: 'vermilion', answer: 'red' }).events)
      expect(await b.search('vermilion')).toHaveLength(1)
      expect(second.filter((e) => e.kind === 'rebuilt')).toEqual([])
    } finally {
      await b.close()
    }

    const third: SearchIndexEvent[] = []
    const c = createEngine(options(dbName, third))
    try {
      // Appended by a third engine while this one has the index loaded: caught up, not rebuilt.
      expect(await c.search('umber')).toHaveLength(1)
      const other = createEngine(options(dbName, []))
      await other.append(sessionId, turnEvents(4, { prompt: 'ochre', answer: 'yellow' }).events)
      await other.close()
      expect(await c.search('ochre')).toHaveLength(1)
      expect(third.map((e) => e.kind).filter((k) => k !== 'persisted')).toEqual(['loaded', 'caught-up'])
      expect(third.find((e) => e.kind === 'caught-up')?.rows).toBe(2)
    } finally {
      await c.close()
    }
  })

  test('an index stored under another version is rebuilt from the rows', async () => {
    const dbName = freshDbName('search-version')
    const a = createEngine(options(dbName, []))
    await sessionWith(a, [{ prompt: 'saffron', answer: 'ok' }])
    await a.search('saffron')
    await a.close()
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    const parts = await db.search.toArray()
    expect(parts.length).toBeGreaterThan(1)
    await db.search.bulkPut(parts.map((p) => ({ ...p, version: INDEX_VERSION + 1 })))
    db.close()
    const events: SearchIndexEvent[] = []
    const b = createEngine(options(dbName, events))
    try {
      expect(await b.search('saffron')).toHaveLength(1)
      expect(events[0]?.kind).toBe('rebuilt')
    } finally {
      await b.close()
    }
  })
})
