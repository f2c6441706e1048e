/**
 * What an imported session is after it lands: read-only (it has no log to continue, and a
 * re-import replaces its rows), and its cached folds survive a fold version change, since they
 * are derived from its rows rather than replayed (docs/decisions/0005).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import { MAX_KEY, MIN_KEY, openDb } from '../../src/store/db'
import { listJsonl, ownFixtures, sharedTranscripts } from './fixture-paths'

let count = 0
const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close()
})

function engineOn(dbName: string) {
  const engine = createEngine({
    dbName,
    indexedDB,
    IDBKeyRange,
    broadcast: false,
    now: () => 1_800_000_000_000,
  })
  engines.push(engine)
  return engine
}

/** Everything stored for a session, to compare before and after a refused write. */
async function snapshotOf(dbName: string, sessionId: string) {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  const between = [
    [sessionId, MIN_KEY],
    [sessionId, MAX_KEY],
  ] as const
  try {
    return {
      session: await db.sessions.get(sessionId),
      events: await db.events
        .where('[sessionId+seq]')
        .between(...between)
        .toArray(),
      inputs: await db.inputs
        .where('[sessionId+seq]')
        .between(...between)
        .toArray(),
      messages: await db.messages
        .where('[sessionId+seq]')
        .between(...between)
        .toArray(),
      projections: await db.projections
        .where('[sessionId+name]')
        .between(...between)
        .toArray(),
    }
  } finally {
    db.close()
  }
}

const piTree = path.join(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl')
const files = [piTree, ...listJsonl(sharedTranscripts)]

describe('an imported session', () => {
  test.each(files.map((file) => [path.basename(file), file]))(
    'refuses input and events and writes nothing: %s',
    async (_name, file) => {
      const dbName = `imported-read-only-${++count}`
      const engine = engineOn(dbName)
      const info = await engine.importTranscript({
        text: readFileSync(file, 'utf8'),
        name: path.basename(file),
      })
      const before = await snapshotOf(dbName, info.id)
      const attempts: [string, () => Promise<unknown>][] = [
        ['admit', () => engine.admit(info.id, { text: 'continue from here' })],
        ['promote settled', () => engine.promote(info.id, 'settled')],
        ['promote checkpoint', () => engine.promote(info.id, 'checkpoint')],
        ['append', () => engine.append(info.id, [{ type: 'turn/start', data: { turn: 999 } }])],
      ]
      for (const [what, attempt] of attempts) {
        const error = await attempt().then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(isSessionlineError(error) && error.code, what).toBe('invalid_state')
        expect(String((error as Error).message), what).toMatch(/imported sessions are read-only/)
      }
      expect(await snapshotOf(dbName, info.id)).toEqual(before)
    },
  )

  test('keeps its outline and usage when a fold version changes (derived from rows, not replayed)', async () => {
    const dbName = `imported-rebuild-${++count}`
    const first = engineOn(dbName)
    const info = await first.importTranscript({ text: readFileSync(piTree, 'utf8'), name: 'tree.jsonl' })
    const outline = await first.projection(info.id, 'turnOutline')
    const usage = await first.projection(info.id, 'usage')
    const page = await first.page(info.id, { includeInactive: true })
    expect(outline.length).toBeGreaterThan(0)
    expect(usage.input + usage.output).toBeGreaterThan(0)
    await first.close()
    engines.splice(engines.indexOf(first), 1)

    // As after an upgrade that bumped every fold's version: the cache no longer counts.
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    for (const name of ['transcript', 'turnOutline', 'usage']) {
      await db.projections.update([info.id, name], { version: 0, state: { stale: true } })
    }
    db.close()

    const second = engineOn(dbName)
    expect(await second.projection(info.id, 'turnOutline')).toEqual(outline)
    expect(await second.projection(info.id, 'usage')).toEqual(usage)
    expect(await second.page(info.id, { includeInactive: true })).toEqual(page)
    const stored = await snapshotOf(dbName, info.id)
    expect(stored.projections.every((row) => row.version > 0)).toBe(true)
  })
})
