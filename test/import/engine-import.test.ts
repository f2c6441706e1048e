/**
 * Importing through the engine into IndexedDB (fake-indexeddb): the round trip never changes
 * `assembleSessionDetail`, re-imports update in place, failures write nothing, folders report
 * per file.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine, SessionChange } from '../../src/engine/types'
import { assembleSessionDetail, parseTranscript, recordsToRows } from '../../src/import/index'
import { isSessionlineError } from '../../src/schema/errors'
import type { FileImportReport } from '../../src/schema/import'
import type { SessionMessage } from '../../src/schema/messages'
import { MAX_KEY, MIN_KEY, openDb } from '../../src/store/db'
import { comlinkEngine } from '../support/engines'
import { listJsonl, ownFixtures, sharedTranscripts } from './fixture-paths'
import { buildPiFile, PI_TREE_RUNS, piScriptArb } from './pi-trees'

let dbCount = 0
const open: { engine: Engine; dbName: string }[] = []
afterEach(async () => {
  for (const { engine } of open.splice(0)) await engine.close()
})

function newEngine(now = () => 1_800_000_000_000) {
  const dbName = `import-test-${++dbCount}`
  const engine = createEngine({ dbName, indexedDB, IDBKeyRange, broadcast: false, now })
  open.push({ engine, dbName })
  return { engine, dbName }
}

/** Every stored row of a session, hidden ones included, straight from the table. */
async function storedRows(dbName: string, sessionId: string): Promise<SessionMessage[]> {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    return await db.messages
      .where('[sessionId+seq]')
      .between([sessionId, MIN_KEY], [sessionId, MAX_KEY])
      .toArray()
  } finally {
    db.close()
  }
}

async function sessionCount(dbName: string) {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    return { sessions: await db.sessions.count(), messages: await db.messages.count() }
  } finally {
    db.close()
  }
}

const fixtureFiles = [
  ...listJsonl(sharedTranscripts),
  ...listJsonl(path.join(ownFixtures, 'pi')),
  ...listJsonl(path.join(ownFixtures, 'written')),
]

async function expectRoundTrip(engine: Engine, dbName: string, text: string, name: string) {
  const { records } = parseTranscript(text)
  const info = await engine.importTranscript({ text, name })
  const rows = await storedRows(dbName, info.id)
  for (const includeInactive of [false, true]) {
    const fresh = assembleSessionDetail(records, { includeInactive })
    expect(assembleSessionDetail(rows, { includeInactive })).toEqual(fresh)
    // the public reads agree with the detail
    const page = await engine.page(info.id, { limit: 1000, includeInactive })
    expect(page.messages).toEqual(fresh.messages)
  }
  const detail = assembleSessionDetail(records)
  // the stored outline holds superseded turns too (marked inactive); readers filter them
  expect(await engine.projection(info.id, 'turnOutline')).toEqual(
    assembleSessionDetail(records, { includeInactive: true }).outline,
  )
  expect(await engine.projection(info.id, 'usage')).toEqual(detail.usage)
  return info
}

describe('round trip through IndexedDB', () => {
  test.each(fixtureFiles.map((file) => [path.basename(file), file]))('%s', async (name, file) => {
    const { engine, dbName } = newEngine()
    const info = await expectRoundTrip(engine, dbName, readFileSync(file, 'utf8'), name)
    const { session } = recordsToRows(parseTranscript(readFileSync(file, 'utf8')).records)
    expect(info).toMatchObject({ source: session.provider, title: session.title })
    expect(info.origin).toMatchObject({ provider: session.provider, key: info.id, name })
  })

  test(`on every generated Pi tree (the ${PI_TREE_RUNS.numRuns} the oracle checks)`, async () => {
    const { engine, dbName } = newEngine()
    await fc.assert(
      fc.asyncProperty(piScriptArb, async (script) => {
        const { text } = buildPiFile(script)
        await expectRoundTrip(engine, dbName, text, 'generated.jsonl')
      }),
      PI_TREE_RUNS,
    )
  }, 120_000)
})

describe('importTranscript', () => {
  const treeText = readFileSync(path.join(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl'), 'utf8')

  test('importing the same file again updates the session in place', async () => {
    const { engine, dbName } = newEngine()
    const first = await engine.importTranscript({ text: treeText })
    const again = await engine.importTranscript({ text: treeText })
    expect(again.id).toBe(first.id)
    expect(await engine.listSessions()).toHaveLength(1)
    expect(await storedRows(dbName, first.id)).toHaveLength(10)
    // a longer version of the file (the tool appended) replaces the rows
    const grown = `${treeText}${JSON.stringify({ type: 'message', id: 'f1', parentId: 'd2', timestamp: '2026-02-01T10:06:00.000Z', message: { role: 'user', content: 'And the changelog' } })}\n`
    const updated = await engine.importTranscript({ text: grown })
    expect(updated.id).toBe(first.id)
    expect(updated.headSeq).toBe(11)
    expect((await engine.page(first.id)).messages.at(-1)?.parts).toEqual([
      { type: 'text', text: 'And the changelog' },
    ])
  })

  test('a Blob is read in chunks and gives the same session as the text', async () => {
    const a = newEngine()
    const b = newEngine()
    const fromText = await a.engine.importTranscript({ text: treeText })
    const fromBlob = await b.engine.importTranscript({ blob: new Blob([treeText]) })
    expect(fromBlob).toEqual(fromText)
    expect(await storedRows(b.dbName, fromBlob.id)).toEqual(await storedRows(a.dbName, fromText.id))
  })

  test('through Comlink, a Blob import gives the same session, and a refused file keeps its error code', async () => {
    const local = newEngine()
    const remote = await comlinkEngine({ now: () => 1_800_000_000_000 })
    try {
      const fromText = await local.engine.importTranscript({ text: treeText })
      const fromBlob = await remote.engine.importTranscript({
        blob: new Blob([treeText]),
        name: 'tree.jsonl',
      })
      expect(fromBlob).toEqual({ ...fromText, origin: { ...fromText.origin, name: 'tree.jsonl' } })
      expect(await storedRows(remote.dbName, fromBlob.id)).toEqual(
        await storedRows(local.dbName, fromText.id),
      )
      const v4 = readFileSync(path.join(ownFixtures, 'bad/pi-v4.jsonl'), 'utf8')
      const error = await remote.engine.importTranscript({ blob: new Blob([v4]) }).catch((e: unknown) => e)
      expect(isSessionlineError(error) && error.code).toBe('unsupported_format')
      expect(await remote.engine.listSessions()).toHaveLength(1)
    } finally {
      await remote.close()
    }
  })

  test('a watcher of the session is told to reload when it is imported again', async () => {
    const { engine } = newEngine()
    const info = await engine.importTranscript({ text: treeText })
    let told!: (change: SessionChange) => void
    const reset = new Promise<SessionChange>((resolve) => {
      told = resolve
    })
    const stop = await engine.watch(info.id, (change) => {
      if (change.reset === true) told(change)
    })
    const grown = treeText.replace('"Docs updated."', '"Docs updated again."')
    try {
      await engine.importTranscript({ text: grown })
      // The test times out if the reset never comes.
      expect(await reset).toMatchObject({ reset: true })
    } finally {
      stop()
    }
    const outline = await engine.projection(info.id, 'turnOutline')
    expect(outline.find((e) => e.visibility !== 'inactive')?.response).toBe('Docs updated again.')
  })

  test.each([
    ['a binary file', { blob: new Blob([new Uint8Array([0, 1, 2, 255, 0, 7])]) }, 'unsupported_format'],
    [
      'a Pi v4 file',
      { text: readFileSync(path.join(ownFixtures, 'bad/pi-v4.jsonl'), 'utf8') },
      'unsupported_format',
    ],
    [
      'a Pi cycle',
      { text: readFileSync(path.join(ownFixtures, 'bad/pi-cycle.jsonl'), 'utf8') },
      'invalid_input',
    ],
    [
      'a Pi file with a duplicate id',
      { text: readFileSync(path.join(ownFixtures, 'bad/pi-duplicate-ids.jsonl'), 'utf8') },
      'invalid_input',
    ],
    [
      'a Pi leaf naming no entry',
      { text: readFileSync(path.join(ownFixtures, 'bad/pi-dangling-leaf.jsonl'), 'utf8') },
      'invalid_input',
    ],
    [
      'a header-less file',
      { blob: new Blob([readFileSync(path.join(ownFixtures, 'bad/pi-headerless.jsonl'))]) },
      'unsupported_format',
    ],
    ['both text and blob', { text: 'x', blob: new Blob(['x']) }, 'invalid_input'],
    [
      'a 50 MB file of one line',
      { blob: new Blob([`{"type":"session","pad":"${'a'.repeat(50 * 1024 * 1024)}"}`]) },
      'unsupported_format',
    ],
  ])('%s fails with %s and writes nothing', async (_, request, code) => {
    const { engine, dbName } = newEngine()
    await engine.importTranscript({ text: treeText })
    const before = await sessionCount(dbName)
    const error = await engine.importTranscript(request).catch((e: unknown) => e)
    expect(isSessionlineError(error) && error.code).toBe(code)
    expect(await sessionCount(dbName)).toEqual(before)
  })

  test('an import never overwrites a native session with the same id', async () => {
    const { engine, dbName } = newEngine()
    await engine.createSession({ id: 'pi:fx-tree-v3', title: 'mine' })
    const before = await storedRows(dbName, 'pi:fx-tree-v3')
    const error = await engine.importTranscript({ text: treeText }).catch((e: unknown) => e)
    expect(isSessionlineError(error) && error.code).toBe('conflict')
    expect(await storedRows(dbName, 'pi:fx-tree-v3')).toEqual(before)
    expect((await engine.getSession('pi:fx-tree-v3'))?.title).toBe('mine')
  })
})

describe('importFiles', () => {
  const read = (...p: string[]) => readFileSync(path.join(...p))
  const showcase = 'claude/claude-code-log__minimal_showcase/55550000-0000-4000-8000-000000000001'
  const folder = () => [
    {
      path: '.pi/agent/sessions/--work-app--/2026-02-01T10-00-00_fx-tree-v3.jsonl',
      file: new Blob([read(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl')]),
    },
    {
      path: '.claude/projects/-tmp/s1.jsonl',
      file: new Blob([read(sharedTranscripts, 'claude/claude-code-log__dag_compact_after_rewind.jsonl')]),
    },
    {
      path: '.claude/projects/-tmp/s1/subagents/agent-showcol1.jsonl',
      file: new Blob([read(sharedTranscripts, showcase, 'subagents/agent-showcol1.jsonl')]),
    },
    {
      path: '.codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111.jsonl',
      file: new Blob([
        read(sharedTranscripts, 'codex/claude-code-log__rollout-2026-01-02T03-04-05-11111111.jsonl'),
      ]),
    },
    { path: 'misc/notes.txt', file: new Blob(['not a session']) },
    {
      path: 'misc/broken.jsonl',
      file: new Blob(['{"type":"session","version":3,"id":"x"}\n{"type":"leaf","targetId":"gone"}\n']),
    },
  ]

  test('discovers the session files of each layout, imports them and reports each with progress', async () => {
    const { engine } = newEngine()
    const progress: [number, number, string][] = []
    const reports = await engine.importFiles(folder(), ({ done, total, report }) => {
      progress.push([done, total, report.status])
    })
    const summary = (r: FileImportReport) => [r.path.split('/').at(-1), r.status, r.format ?? r.error?.code]
    expect(reports.map(summary)).toEqual([
      ['s1.jsonl', 'imported', 'claude'],
      ['agent-showcol1.jsonl', 'imported', 'claude'],
      ['rollout-2026-01-02T03-04-05-11111111.jsonl', 'imported', 'codex'],
      ['2026-02-01T10-00-00_fx-tree-v3.jsonl', 'imported', 'pi'],
      ['broken.jsonl', 'failed', 'invalid_input'],
    ])
    expect(progress.map(([done, total]) => [done, total])).toEqual([
      [1, 5],
      [2, 5],
      [3, 5],
      [4, 5],
      [5, 5],
    ])
    expect(
      reports.every((r) => r.status === 'failed' || /^[0-9a-f]{64}$/.test(r.fingerprint?.sha256 ?? '')),
    ).toBe(true)
    expect(await engine.listSessions()).toHaveLength(4)
    // the rollout's unknown line is reported, with its number
    expect(reports[2]).toMatchObject({
      skippedLines: 1,
      skipped: [{ reason: 'unknown_type', count: 1, lines: [14] }],
    })
  })

  test('a second import skips unchanged files and updates changed ones', async () => {
    const { engine } = newEngine()
    await engine.importFiles(folder())
    const changed = folder()
    changed[1]!.file = new Blob([
      read(sharedTranscripts, 'claude/claude-code-log__dag_compact_after_rewind.jsonl'),
      `${JSON.stringify({ type: 'user', uuid: 'later', parentUuid: 'p1a', sessionId: 's1', timestamp: '2025-07-01T11:00:00.000Z', message: { role: 'user', content: 'one more' } })}\n`,
    ])
    const reports = await engine.importFiles(changed)
    expect(reports.map((r) => r.status)).toEqual(['updated', 'unchanged', 'unchanged', 'unchanged', 'failed'])
    expect(await engine.listSessions()).toHaveLength(4)
    expect((await engine.getSession('claude:s1'))?.headSeq).toBe(12)
  })
})
