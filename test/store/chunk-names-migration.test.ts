/**
 * Schema version 6 renames the chunk rows of cached fold state so they sort by index
 * (`turnOutline#entries#2` → `turnOutline#entries#00000002`): a cold open then reads the outline's
 * last chunks beside the fold heads. test/store/fixtures/v5-database.json holds every row a
 * version 5 database held as the last release before the change wrote it (its README says how);
 * loaded into fake-indexeddb and opened by today's engine, it must serve what that release served,
 * from the renamed rows, without replaying any log.
 */
import { readFileSync } from 'node:fs'
import { indexedDB } from 'fake-indexeddb'
import { afterEach, expect, test } from 'vitest'
import type { ProjectionRow } from '../../src/store/db'
import { SCHEMA_VERSION, SCHEMA_VERSIONS } from '../../src/store/migrations'
import { freshDbName, inProcessEngine, type TestEngine } from '../support/engines'
import {
  FROZEN_TABLES,
  type FrozenDatabase,
  frozenRows,
  loadFrozenDatabase,
  parseFrozenDatabase,
  v5DatabaseUrl,
} from '../support/frozen-database'
import { createReadCountingFactory } from '../support/read-counting-factory'
import { storedTables } from '../support/stored-tables'

const fixture: FrozenDatabase = parseFrozenDatabase(JSON.parse(readFileSync(v5DatabaseUrl, 'utf8')))
const projectionRows = () => frozenRows(fixture, 'projections') as unknown as ProjectionRow[]
const key = (row: ProjectionRow) => `${row.sessionId} ${row.name}`

const opened: TestEngine[] = []
afterEach(async () => {
  for (const engine of opened.splice(0)) await engine.close()
})

test('the fixture is a version 5 database whose outline chunks are named as that release named them', () => {
  expect(SCHEMA_VERSIONS.find((v) => v.version === 5)).toEqual(fixture.writtenBy.schema)
  expect(fixture.writtenBy.layout.version).toBe(50)
  // Hand-checked against fixtures/README.md: `long` has 600 turns, three chunks of 256, 256 and 88;
  // `short` one chunk of 3; `empty` a head row with no chunk.
  const chunks = projectionRows().filter((row) => row.name.includes('#'))
  expect(chunks.map(key).sort()).toEqual([
    'long turnOutline#entries#0',
    'long turnOutline#entries#1',
    'long turnOutline#entries#2',
    'short turnOutline#entries#0',
  ])
  expect(chunks.map((row) => (row.state as unknown[]).length)).toEqual([256, 256, 88, 3])
})

test('opening it renames every chunk row and changes nothing else', async () => {
  const dbName = freshDbName('v5')
  await loadFrozenDatabase(fixture, indexedDB, dbName)
  const engine = await inProcessEngine({ dbName })
  opened.push(engine)
  await engine.engine.listSessions()
  const after = await storedTables(dbName)
  expect(after.verno).toBe(SCHEMA_VERSION)
  for (const table of FROZEN_TABLES.filter((t) => t !== 'projections'))
    expect(after.tables[table], table).toEqual(frozenRows(fixture, table))
  // The same rows, each chunk under its new name, nothing lost, nothing added.
  const renamed = (name: string) =>
    name.replace(/#(\d+)$/, (_, index: string) => `#${index.padStart(8, '0')}`)
  const expected = projectionRows()
    .map((row) => ({ ...row, name: renamed(row.name) }))
    .sort((a, b) => key(a).localeCompare(key(b)))
  const projections = (after.tables.projections as ProjectionRow[]).sort((a, b) =>
    key(a).localeCompare(key(b)),
  )
  expect(projections).toEqual(expected)
  expect(projections.filter((row) => row.name.includes('#')).map(key)).toEqual([
    'long turnOutline#entries#00000000',
    'long turnOutline#entries#00000001',
    'long turnOutline#entries#00000002',
    'short turnOutline#entries#00000000',
  ])
})

test('today’s engine serves every session as that release did, reading the renamed chunks and no log', async () => {
  const dbName = freshDbName('v5')
  await loadFrozenDatabase(fixture, indexedDB, dbName)
  // Upgraded by a first engine; a second one then opens cold, its reads counted.
  const first = await inProcessEngine({ dbName })
  await first.engine.listSessions()
  await first.close()
  const reads = createReadCountingFactory(indexedDB)
  const cold = await inProcessEngine({ dbName, indexedDB: reads.factory })
  opened.push(cold)
  const { engine } = cold
  const long = fixture.served.bySession.long!
  const slice = await engine.outline('long')
  // The newest 200 of 600 entries, from the last two chunks the cold open read beside the heads.
  expect(slice).toMatchObject({ total: 600, start: 400 })
  expect(slice.entries).toEqual(long.turnOutline.slice(400))
  expect(reads.records('events')).toBe(0) // the cached folds were used: nothing was replayed
  expect(reads.records('projections')).toBe(4 + 2) // four fold heads and two chunks
  // The whole outline reads the first chunk too, by its new name.
  expect(await engine.projection('long', 'turnOutline')).toEqual(long.turnOutline)
  expect(reads.records('events')).toBe(0)

  expect(await engine.listSessions()).toEqual(fixture.served.sessions)
  for (const id of ['empty', 'short', 'long']) {
    const served = fixture.served.bySession[id]!
    expect(await engine.getSession(id), id).toEqual(served.info)
    const page = await engine.page(id, { limit: 1000 })
    expect({ ...page, messages: undefined, ids: page.messages.map((m) => m.id) }, id).toEqual({
      ...served.page,
      messages: undefined,
    })
    expect(await engine.pending(id), id).toEqual(served.pending)
    expect(await engine.projection(id, 'turnOutline'), id).toEqual(served.turnOutline)
    expect(await engine.projection(id, 'usage'), id).toEqual(served.usage)
  }
  // And it goes on: a turn appended to `long` lands in its last chunk, under the new names.
  await engine.append('long', [
    { type: 'turn/start', data: { turn: 601 } },
    {
      type: 'user/message',
      data: { inputId: 'l-in-601', text: 'Question 601', delivery: 'steer', source: 'user' },
    },
    { type: 'turn/end', data: { turn: 601, reason: 'completed' } },
  ])
  const grown = await engine.outline('long')
  expect(grown.total).toBe(601)
  expect(grown.entries.at(-1)).toMatchObject({ turn: 601, prompt: 'Question 601' })
  const after = await storedTables(dbName)
  const chunks = (after.tables.projections as ProjectionRow[]).filter(
    (row) => row.sessionId === 'long' && row.name.includes('#'),
  )
  expect(chunks.map((row) => [row.name, (row.state as unknown[]).length])).toEqual([
    ['turnOutline#entries#00000000', 256],
    ['turnOutline#entries#00000001', 256],
    ['turnOutline#entries#00000002', 89],
  ])
})
