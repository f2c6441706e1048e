/**
 * The history tree of an imported session (docs/decisions/0037): the tree its file kept (Pi's
 * `id`/`parentId` entries), over the rows the import made, and the head the session shows. An
 * imported session has no log, so this is stored as one record beside its rows; `switchBranch`
 * moves `head`, and what is visible follows from it by the file's own rule: the path from the
 * root to the head, where only the path's last compaction counts (it, the path after what it
 * replaces less earlier compactions and their retained copies). Rows the file hid stay hidden.
 * Pure: the store keeps the record, the engine commits what this decides.
 *
 * @example
 *   const tree = historyOfImport(stored, roleOf)
 *   const next = switchImported(stored, tree, messageId) // the new head, or a SessionlineError thrown
 *   const rows = placeImported(stored, tree, next.head, storedRows)
 */
import type { Visibility } from '../schema/common'
import { SessionlineError } from '../schema/errors'
import type { ImportedTree } from '../schema/history'
import type { MessageRole, SessionMessage } from '../schema/messages'
import { branchOf, type HistoryTree, hasRow, newestUnder, pathOf, placed, treeOfNodes } from './history-tree'

/** The imported tree as a history tree (rows `roleOf` does not know count as `system`). */
export function historyOfImport(
  stored: ImportedTree,
  roleOf: (id: string) => MessageRole | undefined,
): HistoryTree {
  return treeOfNodes(
    stored.nodes.map((n) => {
      const node = { id: n.id, parent: n.parent, role: roleOf(n.id) ?? ('system' as const) }
      return n.through === undefined ? node : { ...node, through: n.through }
    }),
    stored.head,
  )
}

/** Ids of the rows shown (and sent) at `head`: the file's rule for its own leaf, at any node. */
export function importedVisibleIds(
  stored: ImportedTree,
  tree: HistoryTree,
  head: string | null,
): Set<string> {
  const byId = new Map(stored.nodes.map((n) => [n.id, n]))
  const path = pathOf(tree, head)
  let active = -1
  for (let k = path.length - 1; k >= 0 && active < 0; k--)
    if (byId.get(path[k]!)?.through !== undefined) active = k
  let start = 0
  if (active >= 0) {
    const through = byId.get(path[active]!)!.through!
    start = through === null ? 0 : path.indexOf(through) + 1
  }
  const activeId = active >= 0 ? path[active] : undefined
  const out = new Set<string>()
  for (let k = start; k < path.length; k++) {
    const node = byId.get(path[k]!)!
    if (node.silent) continue
    if (node.through !== undefined && k !== active) continue
    if (node.copyOf !== undefined && node.copyOf !== activeId) continue
    out.add(node.id)
  }
  return out
}

/**
 * The stored rows as they read at `head`: visibility by the file's rule (hidden rows stay
 * hidden), each row's branch place among its siblings (creation order). The same object for a
 * row that does not change; rows the tree does not hold are left as they are.
 */
export function placeImported(
  stored: ImportedTree,
  tree: HistoryTree,
  head: string | null,
  rows: readonly SessionMessage[],
): SessionMessage[] {
  const visible = importedVisibleIds(stored, tree, head)
  return rows.map((row) => {
    if (!hasRow(tree, row.id)) return row
    const visibility: Visibility =
      row.visibility === 'hidden' ? 'hidden' : visible.has(row.id) ? 'visible' : 'inactive'
    return placed(row, visibility, branchOf(tree, row.id))
  })
}

/**
 * `switchBranch(messageId)` on an imported session: the head moves to the newest row (in the
 * file's creation order) of the subtree below `messageId`. Refused as `not_found` for a row the
 * tree does not hold. The answer's `changed` is false when the head is already there.
 */
export function switchImported(
  stored: ImportedTree,
  tree: HistoryTree,
  sessionId: string,
  messageId: string,
): { head: string; changed: boolean } {
  const head = newestUnder(tree, messageId)
  if (head === undefined) {
    throw new SessionlineError(
      'not_found',
      `no row ${JSON.stringify(messageId)} in the tree of session ${JSON.stringify(sessionId)}`,
      { sessionId, messageId },
    )
  }
  return { head, changed: head !== stored.head }
}
