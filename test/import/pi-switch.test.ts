/**
 * An imported Pi tree placed at another head (docs/decisions/0037) against Pi itself: the file
 * with a durable `leaf` line to that entry, imported again. On the 600 generated trees of the
 * oracle test: the tree the import stores, read at the file's own leaf, gives exactly the
 * adapter's visibility; read at any other entry, it gives the visibility the import of the file
 * moved there gives.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { historyOfImport, placeImported } from '../../src/core/imported-tree'
import { parseTranscript, recordsToRows } from '../../src/import/index'
import { renumberTurns } from '../../src/import/to-rows'
import type { SessionMessage } from '../../src/schema/messages'
import { buildPiFile, PI_TREE_RUNS, piScriptArb } from './pi-trees'

function imported(text: string) {
  const stored = recordsToRows(parseTranscript(text).records)
  const tree = stored.tree!
  const roles = new Map(stored.rows.map((r) => [r.id, r.role]))
  return { ...stored, tree, history: historyOfImport(tree, (id) => roles.get(id)) }
}

const visibilityById = (rows: readonly SessionMessage[]) => new Map(rows.map((r) => [r.id, r.visibility]))

/** Ids of the entries of a Pi file that a leaf may name. */
function entryIds(text: string): string[] {
  const ids: string[] = []
  for (const line of text.split('\n')) {
    try {
      const value = JSON.parse(line) as { type?: string; id?: unknown }
      if (value.type !== 'session' && value.type !== 'leaf' && typeof value.id === 'string')
        ids.push(value.id)
    } catch {
      // the generator writes unreadable lines on purpose
    }
  }
  return ids
}

describe('an imported Pi tree placed at a head', () => {
  test(`at the file's leaf it reads as imported; at any entry as Pi reads the file moved there (${PI_TREE_RUNS.numRuns} trees)`, () => {
    fc.assert(
      fc.property(piScriptArb, fc.nat(), (script, pick) => {
        const { text } = buildPiFile(script)
        const base = imported(text)
        const atLeaf = placeImported(base.tree, base.history, base.tree.fileHead, base.rows)
        expect(atLeaf.map((r) => [r.id, r.visibility])).toEqual(base.rows.map((r) => [r.id, r.visibility]))
        // and the turns the import numbered are the ones numbering the rows again gives
        expect(renumberTurns(base.rows)).toEqual(base.rows)
        const ids = entryIds(text)
        const target = pick % (ids.length + 1) === ids.length ? null : ids[pick % (ids.length + 1)]!
        const moved = imported(
          `${text}\n${JSON.stringify({ type: 'leaf', id: 'moved', parentId: null, targetId: target })}\n`,
        )
        const placed = visibilityById(placeImported(base.tree, base.history, moved.tree.head, base.rows))
        // Rows are compared by id; a tool result that joins its call's row under one head and
        // stands alone under another is compared by the row both imports hold.
        for (const [id, visibility] of visibilityById(moved.rows)) {
          if (placed.has(id)) expect([id, placed.get(id)]).toEqual([id, visibility])
        }
      }),
      PI_TREE_RUNS,
    )
  }, 120_000)
})
