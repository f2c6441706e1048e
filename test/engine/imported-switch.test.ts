/**
 * `switchBranch` on imported sessions (docs/decisions/0037), through the engine's public API in
 * process and through Comlink (fake-indexeddb): a Pi tree moves its head durably, its rows carry
 * their branch places, a cold engine and a re-import of the same file read the head chosen, a
 * file that moved on resets it, and a file without a tree is still refused.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { createSessionView } from '../../src/client/session-view'
import type { TimelineSnapshot } from '../../src/client/types'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import { until } from '../client/harness'
import { ownFixtures, sharedTranscripts } from '../import/fixture-paths'
import { engineKinds, freshDbName, inProcessEngine } from '../support/engines'

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isSessionlineError(error)) return error.code
    throw error
  }
  throw new Error('expected a SessionlineError')
}

const treeText = readFileSync(path.join(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl'), 'utf8')
const P = 'pi:fx-tree-v3/'
const short = (id: string) => id.slice(P.length)

/** Every stored row (hidden ones are never paged), as `[id, visibility, branch]`. */
async function placesOf(engine: Engine, sessionId: string) {
  const { messages } = await engine.page(sessionId, { limit: 1000, includeInactive: true })
  return messages.map((r) => [
    short(r.id),
    r.visibility,
    r.branch ? `${r.branch.index + 1}/${r.branch.count}` : '',
  ])
}

const shownIds = async (engine: Engine, sessionId: string) =>
  (await engine.page(sessionId, { limit: 1000 })).messages.map((r) => short(r.id))

describe.each(engineKinds)('switchBranch on an imported Pi tree, engine %s', (_, makeEngine) => {
  test('moves the head durably; rows, branch places, outline and context follow it', async () => {
    const dbName = freshDbName('imported-switch')
    const { engine, close } = await makeEngine({ now: () => 5_000, dbName })
    try {
      const imported = await engine.importTranscript({ text: treeText, name: 'tree.jsonl' })
      // By hand from the file: a1 → a2 → a3 (a2's call result, so it rides on a2's row) → a4 →
      // a5 (a4's result, on a4's row); the branch summary b1 also hangs under a3, so a2's row has
      // two children: a4 (1/2) and b1 (2/2). b1 → b2 → b3 (on b2's row) → b4 (hidden) → c1
      // (compaction keeping from b2) → d1 → d2; e1 is d1's second child, so d2 is 1/2, e1 2/2.
      // The leaf names d2: c1 replaces a1…b1, so b2, c1, d1, d2 show (c1 first: it is sent first).
      expect(await placesOf(engine, imported.id)).toEqual([
        ['a1', 'inactive', ''],
        ['a2', 'inactive', ''],
        ['a4', 'inactive', '1/2'],
        ['b1', 'inactive', '2/2'],
        ['c1', 'visible', ''],
        ['b2', 'visible', ''],
        ['d1', 'visible', ''],
        ['d2', 'visible', '1/2'],
        ['e1', 'inactive', '2/2'],
      ])

      // To the sibling answer: d2 goes, e1 comes; the rest of the path is the same.
      await engine.switchBranch(imported.id, `${P}e1`)
      expect(await shownIds(engine, imported.id)).toEqual(['c1', 'b2', 'd1', 'e1'])
      expect((await engine.context(imported.id)).rows.map((r) => short(r.id))).toEqual([
        'c1',
        'b2',
        'd1',
        'e1',
      ])
      // Switching to the path it is on writes nothing.
      const before = (await engine.listSessions()).find((s) => s.id === imported.id)!.updatedAt
      await engine.switchBranch(imported.id, `${P}e1`)
      expect((await engine.listSessions()).find((s) => s.id === imported.id)!.updatedAt).toBe(before)

      // To the abandoned first try: the path is a1 a2 a4 with no compaction on it, as Pi reads
      // the file with its leaf at a5. d1 is then an inactive prompt: the outline marks turn 2.
      await engine.switchBranch(imported.id, `${P}a4`)
      expect(await shownIds(engine, imported.id)).toEqual(['a1', 'a2', 'a4'])
      const { entries } = await engine.outline(imported.id)
      expect(entries.map((e) => [e.turn, e.visibility ?? 'visible'])).toEqual([
        [1, 'visible'],
        [2, 'inactive'],
      ])

      // A row with several branches below it goes to the newest written: a2 → e1 (last in the file).
      await engine.switchBranch(imported.id, `${P}a2`)
      expect(await shownIds(engine, imported.id)).toEqual(['c1', 'b2', 'd1', 'e1'])

      // Who the siblings are, for a picker's arrows: in creation order, as `branch.index` counts.
      expect((await engine.branches(imported.id, `${P}e1`)).ids.map(short)).toEqual(['d2', 'e1'])
      expect((await engine.branches(imported.id, `${P}b1`)).ids.map(short)).toEqual(['a4', 'b1'])
      expect((await engine.branches(imported.id, `${P}a1`)).ids.map(short)).toEqual(['a1'])
      expect(await codeOf(engine.branches(imported.id, `${P}nope`))).toBe('not_found')
      expect(await codeOf(engine.switchBranch(imported.id, `${P}nope`))).toBe('not_found')
      // The other verbs still refuse an imported session.
      expect(await codeOf(engine.rewind(imported.id, `${P}d1`))).toBe('invalid_state')
    } finally {
      await close()
    }
    // A cold engine on the same database reads the head chosen.
    const cold = await inProcessEngine({ now: () => 6_000, dbName })
    try {
      expect(await shownIds(cold.engine, 'pi:fx-tree-v3')).toEqual(['c1', 'b2', 'd1', 'e1'])
    } finally {
      await cold.close()
    }
  })

  test('a re-import keeps the chosen head while the file names the same leaf, and resets it when the file moved on', async () => {
    const { engine, close } = await makeEngine({ now: () => 5_000 })
    try {
      const imported = await engine.importTranscript({ text: treeText })
      await engine.switchBranch(imported.id, `${P}e1`)
      await engine.importTranscript({ text: treeText })
      expect(await shownIds(engine, imported.id)).toEqual(['c1', 'b2', 'd1', 'e1'])
      // Pi went on in the file: a new prompt under d2 moves its position there.
      const grown = `${treeText}${JSON.stringify({ type: 'message', id: 'f1', parentId: 'd2', timestamp: '2026-02-01T10:06:00.000Z', message: { role: 'user', content: 'And the changelog' } })}\n`
      await engine.importTranscript({ text: grown })
      expect(await shownIds(engine, imported.id)).toEqual(['c1', 'b2', 'd1', 'd2', 'f1'])
    } finally {
      await close()
    }
  })

  test('an open view follows the switch: the rows of the other branch replace the shown ones', async () => {
    const { engine, close } = await makeEngine({ now: () => 5_000 })
    try {
      const imported = await engine.importTranscript({ text: treeText })
      const view = createSessionView(engine, imported.id)
      try {
        const keys = (s: TimelineSnapshot) => s.rows.map((r) => short(r.key)).join(' ')
        await until(view, (s) => s.status === 'ready' && keys(s) === 'c1 b2 d1 d2')
        await view.switchBranch(`${P}e1`)
        await until(view, (s) => keys(s) === 'c1 b2 d1 e1')
        await view.switchBranch(`${P}a4`)
        await until(view, (s) => keys(s) === 'a1 a2 a4')
      } finally {
        view.dispose()
      }
    } finally {
      await close()
    }
  })

  test('an import whose file keeps no tree is refused, as before', async () => {
    const { engine, close } = await makeEngine({ now: () => 5_000 })
    try {
      const text = readFileSync(
        path.join(sharedTranscripts, 'claude/claude-code-log__dag_compact_after_rewind.jsonl'),
        'utf8',
      )
      const imported = await engine.importTranscript({ text })
      const [row] = (await engine.page(imported.id, { limit: 1 })).messages
      expect(await codeOf(engine.switchBranch(imported.id, row!.id))).toBe('invalid_state')
    } finally {
      await close()
    }
  })
})
