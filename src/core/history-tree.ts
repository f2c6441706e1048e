/**
 * The history tree of a session (docs/decisions/0033): every transcript row is a node whose
 * parent is the row that was the head when it was created; `history/head` moves the head and
 * `history/compact` adds a summary node that replaces the active path through a row. What is
 * visible and what the model gets are pure functions of the tree and its head.
 *
 * The tree is a persistent value: `evolveTree` never changes the tree it is given. Nodes live in
 * append-only columns that versions share; a version sees the first `size` of them, and a
 * version that appends while a newer one already did copies its prefix first. So the common
 * case (each version evolved once, in order) appends in place, and an old version stays valid.
 *
 * @example
 *   let tree = emptyTree()
 *   for (const event of events) tree = evolveTree(tree, event)
 *   const shown = visibleIds(tree) // the rows to mark `visible`; every other row is `inactive`
 *   const context = contextFor(tree, (id) => rows.get(id))
 */
import type { Visibility } from '../schema/common'
import type { StoredEvent } from '../schema/events'
import type { MessagePart, MessageRole, SessionMessage } from '../schema/messages'
import { revisedRow, toolPartWith } from './transcript'

/** A row's place in the tree. */
export interface TreeNode {
  id: string
  seq: number
  /** The parent row's id (`null`: a root). */
  parent: string | null
  role: MessageRole
  turn: number
  /** Summary rows: the row they replace the path through (`null`: none). */
  through?: string | null
}

/** Columns shared by the versions of one tree; only ever appended to. */
interface Columns {
  ids: string[]
  seqs: number[]
  /** Index of the parent, -1 for a root. */
  parents: number[]
  roles: MessageRole[]
  turns: number[]
  /** Summary nodes: index of the row replaced through (-1: none); -2 for other rows. */
  through: number[]
  index: Map<string, number>
  /** Children by parent index + 1 (slot 0: the roots), ascending. */
  children: number[][]
}

/** A version of a session's tree. Read it with the functions of this module. */
export interface HistoryTree {
  readonly columns: Columns
  /** How many nodes this version holds (the first `size` of the columns). */
  readonly size: number
  /** Index of the head node, -1: the empty path. */
  readonly head: number
  /** The turn rows created now belong to: the last turn started. */
  readonly turn: number
}

const NOT_SUMMARY = -2

export function emptyTree(): HistoryTree {
  return {
    columns: {
      ids: [],
      seqs: [],
      parents: [],
      roles: [],
      turns: [],
      through: [],
      index: new Map(),
      children: [[]],
    },
    size: 0,
    head: -1,
    turn: 0,
  }
}

/** Index of row `id` in this version, or -1. */
function indexOf(tree: HistoryTree, id: string): number {
  const i = tree.columns.index.get(id)
  return i !== undefined && i < tree.size ? i : -1
}

/** Columns this version may append to: the shared ones when nobody appended past it, else a copy. */
function writable(tree: HistoryTree): Columns {
  const c = tree.columns
  if (c.ids.length === tree.size) return c
  const n = tree.size
  const index = new Map<string, number>()
  for (let i = 0; i < n; i++) index.set(c.ids[i]!, i)
  const children: number[][] = [c.children[0]!.filter((k) => k < n)]
  for (let i = 0; i < n; i++) children.push(c.children[i + 1]!.filter((k) => k < n))
  return {
    ids: c.ids.slice(0, n),
    seqs: c.seqs.slice(0, n),
    parents: c.parents.slice(0, n),
    roles: c.roles.slice(0, n),
    turns: c.turns.slice(0, n),
    through: c.through.slice(0, n),
    index,
    children,
  }
}

function withNode(
  tree: HistoryTree,
  id: string,
  seq: number,
  role: MessageRole,
  through: number,
): HistoryTree {
  if (tree.columns.index.has(id) && indexOf(tree, id) >= 0) return tree
  const c = writable(tree)
  const i = tree.size
  c.ids.push(id)
  c.seqs.push(seq)
  c.parents.push(tree.head)
  c.roles.push(role)
  c.turns.push(tree.turn)
  c.through.push(through)
  c.index.set(id, i)
  c.children.push([])
  c.children[tree.head + 1]!.push(i)
  return { columns: c, size: i + 1, head: i, turn: tree.turn }
}

/**
 * The tree after `event`. Total, like the transcript fold: an event that names rows this tree
 * does not hold, or repeats a row id, leaves it as it was (the deciders refuse such events).
 */
export function evolveTree(tree: HistoryTree, event: StoredEvent): HistoryTree {
  switch (event.type) {
    case 'turn/start':
      return event.data.turn > tree.turn ? { ...tree, turn: event.data.turn } : tree
    case 'user/message':
      return withNode(tree, event.data.inputId, event.seq, 'user', NOT_SUMMARY)
    case 'assistant/start':
      return withNode(tree, event.data.messageId, event.seq, 'assistant', NOT_SUMMARY)
    case 'history/head': {
      const head = event.data.head === null ? -1 : indexOf(tree, event.data.head)
      if (head < 0 && event.data.head !== null) return tree
      return head === tree.head ? tree : { ...tree, head }
    }
    case 'history/compact': {
      const through = event.data.throughId === null ? -1 : indexOf(tree, event.data.throughId)
      if (through < 0 && event.data.throughId !== null) return tree
      return withNode(tree, event.data.messageId, event.seq, 'summary', through)
    }
    default:
      return tree
  }
}

/** Reference: the tree of a whole log. */
export function replayTree(events: Iterable<StoredEvent>): HistoryTree {
  let tree = emptyTree()
  for (const event of events) tree = evolveTree(tree, event)
  return tree
}

/**
 * A tree given as its nodes (an imported file's, docs/decisions/0037), in creation order, with
 * its head. A parent must be listed before its child (so no list makes a cycle): one listed after
 * it, or not at all, makes the child a root. A node with `through` (a row id or `null`) is a
 * summary that replaces the path through it.
 */
export function treeOfNodes(
  nodes: ReadonlyArray<{ id: string; parent: string | null; role: MessageRole; through?: string | null }>,
  head: string | null,
): HistoryTree {
  const c = emptyTree().columns
  nodes.forEach((node, i) => {
    c.ids.push(node.id)
    c.seqs.push(i + 1)
    c.roles.push(node.role)
    c.turns.push(0)
    c.index.set(node.id, i)
    c.children.push([])
  })
  nodes.forEach((node, i) => {
    const p = node.parent === null ? -1 : (c.index.get(node.parent) ?? -1)
    const parent = p < i ? p : -1
    c.parents.push(parent)
    c.children[parent + 1]!.push(i)
    const through =
      node.through === undefined ? NOT_SUMMARY : node.through === null ? -1 : c.index.get(node.through)
    c.through.push(through ?? -1)
  })
  const size = nodes.length
  return { columns: c, size, head: head === null ? -1 : (c.index.get(head) ?? -1), turn: 0 }
}

/** How many rows the tree holds. */
export const treeSize = (tree: HistoryTree): number => tree.size

/** The head row's id (`null`: the empty path). */
export const headOf = (tree: HistoryTree): string | null =>
  tree.head < 0 ? null : tree.columns.ids[tree.head]!

/** Whether row `id` is a node of this tree. */
export const hasRow = (tree: HistoryTree, id: string): boolean => indexOf(tree, id) >= 0

/** Row `id` as a node, or undefined. */
export function nodeOf(tree: HistoryTree, id: string): TreeNode | undefined {
  const i = indexOf(tree, id)
  return i < 0 ? undefined : nodeAt(tree, i)
}

function nodeAt(tree: HistoryTree, i: number): TreeNode {
  const c = tree.columns
  const p = c.parents[i]!
  const node: TreeNode = {
    id: c.ids[i]!,
    seq: c.seqs[i]!,
    parent: p < 0 ? null : c.ids[p]!,
    role: c.roles[i]!,
    turn: c.turns[i]!,
  }
  const t = c.through[i]!
  if (t !== NOT_SUMMARY) node.through = t < 0 ? null : c.ids[t]!
  return node
}

/** Every node, in creation (seq) order. */
export function nodesOf(tree: HistoryTree): TreeNode[] {
  const out: TreeNode[] = []
  for (let i = 0; i < tree.size; i++) out.push(nodeAt(tree, i))
  return out
}

/** Resolves a head given as a row id (undefined: the tree's own head). */
function headIndex(tree: HistoryTree, head: string | null | undefined): number {
  if (head === undefined) return tree.head
  if (head === null) return -1
  return indexOf(tree, head)
}

/** Node indices from the root to `head`, in path order. */
function pathIndices(tree: HistoryTree, head: number): number[] {
  const path: number[] = []
  for (let i = head; i >= 0; i = tree.columns.parents[i]!) path.push(i)
  return path.reverse()
}

/** Ids of the rows from the root to the head (default: the tree's), in path order. */
export function pathOf(tree: HistoryTree, head?: string | null): string[] {
  return pathIndices(tree, headIndex(tree, head)).map((i) => tree.columns.ids[i]!)
}

/**
 * The active part of a path: where the last summary on it sits, and the position (in the path)
 * of the last row it replaces (-1: none).
 */
function activeOf(
  tree: HistoryTree,
  path: readonly number[],
): { summaryAt: number; replacedThrough: number } {
  for (let k = path.length - 1; k >= 0; k--) {
    const t = tree.columns.through[path[k]!]!
    if (t === NOT_SUMMARY) continue
    return { summaryAt: k, replacedThrough: t < 0 ? -1 : path.indexOf(t) }
  }
  return { summaryAt: -1, replacedThrough: -1 }
}

/** Ids of the rows visible at `head` (default: the tree's): the path, less what its last summary replaces. */
export function visibleIds(tree: HistoryTree, head?: string | null): string[] {
  const path = pathIndices(tree, headIndex(tree, head))
  const { replacedThrough } = activeOf(tree, path)
  return path.slice(replacedThrough + 1).map((i) => tree.columns.ids[i]!)
}

/** How row `id` reads at the tree's head: `visible` on the active path, else `inactive`. */
export function visibilityIn(tree: HistoryTree, id: string): Visibility {
  return visibleIds(tree).includes(id) ? 'visible' : 'inactive'
}

/**
 * Rows whose visibility differs between two trees of one session (`before` a version of
 * `after`): each with its visibility in `after`. New rows of `after` are listed when they are
 * not visible. This is what the engine rewrites when the head moves.
 */
export function visibilityChanges(
  before: HistoryTree,
  after: HistoryTree,
): { id: string; visibility: Visibility }[] {
  const was = new Set(visibleIds(before))
  const now = new Set(visibleIds(after))
  const out: { id: string; visibility: Visibility }[] = []
  for (const id of was) if (!now.has(id) && hasRow(after, id)) out.push({ id, visibility: 'inactive' })
  for (const id of now) if (!was.has(id) && hasRow(before, id)) out.push({ id, visibility: 'visible' })
  for (let i = before.size; i < after.size; i++) {
    const id = after.columns.ids[i]!
    if (!now.has(id)) out.push({ id, visibility: 'inactive' })
  }
  return out
}

/**
 * `row` with visibility `visibility` (its own when undefined) and branch place `branch`: the same
 * object when neither changes, so an identity gate downstream sees no change.
 */
export function placed(
  row: SessionMessage,
  visibility: Visibility | undefined,
  branch: { index: number; count: number } | undefined,
): SessionMessage {
  const vis = visibility ?? row.visibility
  const sameBranch = row.branch?.index === branch?.index && row.branch?.count === branch?.count
  if (vis === row.visibility && sameBranch) return row
  const next: SessionMessage = { ...row, visibility: vis }
  if (branch === undefined) delete next.branch
  else next.branch = branch
  return next
}

/**
 * A native session's rows as its tree places them at its head: the path `visible`, every other
 * row of the tree `inactive`, and each row's branch place. The plain transcript fold knows no
 * tree; whatever rebuilds rows from a log (an import of an export, a markdown rendering) places
 * them with this. Rows the tree does not hold are left as they are.
 */
export function placeRows(rows: readonly SessionMessage[], tree: HistoryTree): SessionMessage[] {
  const visible = new Set(visibleIds(tree))
  return rows.map((row) =>
    hasRow(tree, row.id)
      ? placed(row, visible.has(row.id) ? 'visible' : 'inactive', branchOf(tree, row.id))
      : row,
  )
}

/** Where row `id` stands among its siblings (0-based, creation order), when it has any. */
export function branchOf(tree: HistoryTree, id: string): { index: number; count: number } | undefined {
  const i = indexOf(tree, id)
  if (i < 0) return undefined
  const siblings = tree.columns.children[tree.columns.parents[i]! + 1]!
  let count = 0
  let index = 0
  for (const k of siblings) {
    if (k >= tree.size) break
    if (k === i) index = count
    count++
  }
  return count > 1 ? { index, count } : undefined
}

/** How many rows hang directly under row `id` (`null`: how many roots there are). */
export function childCount(tree: HistoryTree, id: string | null): number {
  const i = id === null ? -1 : indexOf(tree, id)
  if (i < 0 && id !== null) return 0
  let count = 0
  for (const k of tree.columns.children[i + 1]!) if (k < tree.size) count++
  return count
}

/** Ids of the rows hanging directly under row `id` (`null`: the roots), in creation order. */
export function childIds(tree: HistoryTree, id: string | null): string[] {
  const i = id === null ? -1 : indexOf(tree, id)
  if (i < 0 && id !== null) return []
  const out: string[] = []
  for (const k of tree.columns.children[i + 1]!) if (k < tree.size) out.push(tree.columns.ids[k]!)
  return out
}

/** Ids of row `id`'s siblings and itself (the rows under its parent), in creation order. */
export function siblingIds(tree: HistoryTree, id: string): string[] {
  const i = indexOf(tree, id)
  if (i < 0) return []
  const out: string[] = []
  for (const k of tree.columns.children[tree.columns.parents[i]! + 1]!)
    if (k < tree.size) out.push(tree.columns.ids[k]!)
  return out
}

/** The newest row (highest seq) of the subtree below row `id`, itself included. */
export function newestUnder(tree: HistoryTree, id: string): string | undefined {
  const root = indexOf(tree, id)
  if (root < 0) return undefined
  let newest = root
  const stack = [root]
  while (stack.length > 0) {
    const i = stack.pop()!
    if (i > newest) newest = i
    for (const k of tree.columns.children[i + 1]!) if (k < tree.size) stack.push(k)
  }
  return tree.columns.ids[newest]!
}

/** Whether row `id` lies on the path to the head (default: the tree's). */
export function isOnPath(tree: HistoryTree, id: string, head?: string | null): boolean {
  const target = indexOf(tree, id)
  if (target < 0) return false
  for (let i = headIndex(tree, head); i >= 0; i = tree.columns.parents[i]!) if (i === target) return true
  return false
}

/** The rows the path's last summary may replace through: those at or after it (all, without one). */
export function compactableIds(tree: HistoryTree, head?: string | null): string[] {
  const path = pathIndices(tree, headIndex(tree, head))
  const { summaryAt } = activeOf(tree, path)
  return path.slice(Math.max(summaryAt, 0)).map((i) => tree.columns.ids[i]!)
}

/**
 * Ids of the rows the model gets at `head` (default: the tree's head), in the order it gets
 * them: the path's last summary first, then the path's rows after what it replaces.
 */
export function contextIds(tree: HistoryTree, head?: string | null): string[] {
  const path = pathIndices(tree, headIndex(tree, head))
  const { summaryAt, replacedThrough } = activeOf(tree, path)
  const ids = tree.columns.ids
  if (summaryAt < 0) return path.map((i) => ids[i]!)
  const out = [ids[path[summaryAt]!]!]
  for (let k = replacedThrough + 1; k < path.length; k++) if (k !== summaryAt) out.push(ids[path[k]!]!)
  return out
}

/** The result a tool call that never returned is given, so the model never sees a call alone. */
export const UNANSWERED_CALL = { error: 'the tool call ended before it returned a result' } as const

/**
 * What the model gets at `head` (default: the tree's head): the rows of `contextIds`, less those
 * hidden or `excludedFromContext` (docs/decisions/0009), each repaired so that every tool call
 * carries a result (a call still running or interrupted gets `UNANSWERED_CALL` as an error).
 * `rowOf` answers a row by id (a row it does not know is left out).
 */
export function contextFor(
  tree: HistoryTree,
  rowOf: (id: string) => SessionMessage | undefined,
  head?: string | null,
): SessionMessage[] {
  const out: SessionMessage[] = []
  for (const id of contextIds(tree, head)) {
    const row = rowOf(id)
    if (row === undefined || row.visibility === 'hidden' || row.excludedFromContext) continue
    out.push(repaired(row))
  }
  return out
}

/**
 * The same context from the visible rows of a native session in seq order (the runner holds
 * those): the path's last summary moved first, rows not sent left out, tool calls answered. The
 * visible rows are the path after what its last summary replaced, in path order, so this equals
 * `contextFor` at the same head. `summaryFirst: false` keeps seq order: an imported session's
 * visible rows are already in the order its tool sends them.
 */
export function contextOfVisible(visible: readonly SessionMessage[], summaryFirst = true): SessionMessage[] {
  let summary = -1
  for (let i = summaryFirst ? visible.length - 1 : -1; i >= 0; i--) {
    if (visible[i]!.role === 'summary') {
      summary = i
      break
    }
  }
  const ordered = summary < 0 ? visible : [visible[summary]!, ...visible.filter((_, i) => i !== summary)]
  const out: SessionMessage[] = []
  for (const row of ordered) {
    if (row.visibility !== 'visible' || row.excludedFromContext) continue
    out.push(repaired(row))
  }
  return out
}

function repaired(row: SessionMessage): SessionMessage {
  const unanswered = (part: MessagePart) =>
    part.type === 'tool' && (part.state === 'running' || part.state === 'interrupted')
  if (!row.parts.some(unanswered)) return row
  const parts = row.parts.map((part) =>
    part.type === 'tool' && unanswered(part)
      ? toolPartWith(part, 'error', { output: { ...UNANSWERED_CALL }, isError: true })
      : part,
  )
  return revisedRow(row, parts, row.status, row.updatedAt)
}
