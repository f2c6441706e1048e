/**
 * An import owns only its own rows (docs/architecture.md §10): rows are added, never put over a row of
 * another session, and an id an input of any session owns is refused as well. A collision is a
 * `conflict` for that file and writes nothing; a re-import replaces the rows of its own session
 * and nothing else.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { parseTranscript, recordsToRows } from '../../src/import/index'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import { freshDbName } from '../support/engines'
import { ownFixtures } from './fixture-paths'

const treeText = readFileSync(path.join(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl'), 'utf8')
const treeRows = recordsToRows(parseTranscript(treeText).records)
const importedId = treeRows.sessionId
/** One imported row's id, and the id of the visible row the test claims first. */
const claimed = treeRows.rows.find((r) => r.visibility === 'visible')!.id

const open: Engine[] = []
afterEach(async () => {
  for (const engine of open.splice(0)) await engine.close()
})
function newEngine(): Engine {
  const engine = createEngine({
    dbName: freshDbName('import-owner'),
    indexedDB,
    IDBKeyRange,
    broadcast: false,
  })
  open.push(engine)
  return engine
}

async function codeOf(promise: Promise<unknown>): Promise<string | false> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  return isSessionlineError(error) && error.code
}

const allRows = async (engine: Engine, sessionId: string) =>
  (await engine.loadThrough(sessionId, { seq: 0, includeInactive: true })).messages

/** A native session `mine` whose first row (promoted input) or first pending input has `id`. */
async function nativeOwner(engine: Engine, id: string, as: 'row' | 'input' | 'assistant row') {
  await engine.createSession({ id: 'mine' })
  if (as === 'input') {
    await engine.admit('mine', { id, text: 'mine, pending' })
    return
  }
  if (as === 'row') {
    await engine.admit('mine', { id, text: 'mine' })
    await engine.promote('mine', 'settled')
    return
  }
  await engine.admit('mine', { id: 'prompt', text: 'mine' })
  await engine.promote('mine', 'settled')
  const events: SessionEvent[] = [
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'assistant/start', data: { messageId: id, turn: 1, step: 1 } },
    { type: 'assistant/end', data: { messageId: id, finish: 'stop' } },
    { type: 'step/end', data: { turn: 1, step: 1 } },
  ]
  await engine.append('mine', events)
}

describe('an import never takes over another session’s ids', () => {
  test.each(['row', 'assistant row', 'input'] as const)(
    'importTranscript is a conflict when a native %s has one of its row ids, and writes nothing',
    async (as) => {
      const engine = newEngine()
      await nativeOwner(engine, claimed, as)
      const before = { rows: await allRows(engine, 'mine'), pending: await engine.pending('mine') }
      expect(await codeOf(engine.importTranscript({ text: treeText }))).toBe('conflict')
      expect(await engine.getSession(importedId)).toBeUndefined()
      expect({ rows: await allRows(engine, 'mine'), pending: await engine.pending('mine') }).toEqual(before)
      expect((await engine.listSessions()).map((s) => s.id)).toEqual(['mine'])
    },
  )

  test('a re-import that collides keeps the earlier import whole, and the native row where it was', async () => {
    const engine = newEngine()
    await engine.importTranscript({ text: treeText })
    const imported = await allRows(engine, importedId)
    // The native write cannot take the id while the import holds it…
    await engine.createSession({ id: 'mine' })
    expect(await codeOf(engine.admit('mine', { id: claimed, text: 'mine' }))).toBe('conflict')
    // …and a re-import replaces its own rows only: the same rows come back, nobody else's go.
    await engine.admit('mine', { id: 'other', text: 'mine' })
    await engine.promote('mine', 'settled')
    const native = await allRows(engine, 'mine')
    expect((await engine.importTranscript({ text: treeText })).id).toBe(importedId)
    expect(await allRows(engine, importedId)).toEqual(imported)
    expect(await allRows(engine, 'mine')).toEqual(native)
  })

  test('importFiles reports the colliding file as a conflict and imports the others', async () => {
    const engine = newEngine()
    await nativeOwner(engine, claimed, 'row')
    const read = (...p: string[]) => readFileSync(path.join(...p))
    const reports = await engine.importFiles([
      {
        path: '.pi/agent/sessions/--work-app--/2026-02-01T10-00-00_fx-tree-v3.jsonl',
        file: new Blob([read(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl')]),
      },
      {
        path: '.pi/agent/sessions/--work-app--/2026-02-02T10-00-00_other.jsonl',
        file: new Blob([treeText.replaceAll('fx-tree-v3', 'fx-tree-copy')]),
      },
    ])
    expect(reports.map((r) => [r.status, r.error?.code])).toEqual([
      ['failed', 'conflict'],
      ['imported', undefined],
    ])
    expect(await engine.getSession(importedId)).toBeUndefined()
    expect((await allRows(engine, 'mine')).map((r) => r.id)).toEqual([claimed])
  })
})
