/**
 * The thread as assistant-ui's branch store: the view's rows as the path, and at each row with
 * `branch: {index, count}` its siblings beside it, so the stock branch picker counts "2 / 3" from
 * the rows themselves, after a reload as well as for branches this page made
 * (docs/decisions/0033). A sibling off the path is a stand-in message under its own row id (the
 * picker never shows it: choosing it switches the session there, and the row comes in).
 *
 * Rows say their place, not who their siblings are. A new newest sibling (a reload, an edit) is
 * the known siblings plus itself; any other list is asked of the view (`branches`) once, and
 * until it answers the thread stays as last built (a first open waits, `isLoading`). A list the
 * view cannot read is reported (`onError`) and the row stands alone.
 *
 * @example
 *   const lists = new SiblingLists(view, rerender)
 *   const repository = lists.repository(chatRows(snapshot.rows)) // undefined: still asking
 */
import { ExportedMessageRepository, type ThreadMessage, type ThreadMessageLike } from '@assistant-ui/react'
import type { ChatRow } from '../client/activity'
import type { SessionView } from '../client/types'
import { rowToThreadMessageLike } from './messages'

type RepositoryItem = ExportedMessageRepository['messages'][number]

const converted = new WeakMap<ChatRow, Map<string | null, RepositoryItem>>()

/** The branch-store item of a row under `parentId`, converted once per row object and parent. */
function itemOf(row: ChatRow, parentId: string | null): RepositoryItem {
  let byParent = converted.get(row)
  if (byParent === undefined) {
    byParent = new Map()
    converted.set(row, byParent)
  }
  let item = byParent.get(parentId)
  if (item === undefined) {
    item = ExportedMessageRepository.fromBranchableArray([{ message: rowToThreadMessageLike(row), parentId }])
      .messages[0]!
    byParent.set(parentId, item)
  }
  return item
}

/** A sibling off the path: its row id, the role of the row it stands beside, no content. */
function standIn(id: string, beside: ThreadMessage, parentId: string | null): RepositoryItem {
  const like: ThreadMessageLike = {
    id,
    role: beside.role === 'assistant' ? 'assistant' : beside.role === 'system' ? 'system' : 'user',
    content: beside.role === 'system' ? [{ type: 'text', text: '' }] : [],
    ...(beside.role === 'assistant' ? { status: { type: 'complete', reason: 'unknown' } } : {}),
    metadata: { custom: { sessionline: { status: 'branch' } } },
  }
  return ExportedMessageRepository.fromBranchableArray([{ message: like, parentId }]).messages[0]!
}

/** The siblings of the rows a view shows, learnt from the rows and asked of the view. */
export class SiblingLists {
  /** Sibling lists (creation order) by each member's id. */
  private lists = new Map<string, readonly string[]>()
  /** The rows last seen under each parent (`''`: the roots), in creation order. */
  private children = new Map<string, readonly string[]>()
  private asking = new Set<string>()
  /** Rows whose siblings could not be read: shown alone rather than holding the thread back. */
  private unread = new Set<string>()
  private standIns = new Map<string, RepositoryItem>()
  private last: ExportedMessageRepository | undefined

  constructor(
    private readonly view: Pick<SessionView, 'branches'>,
    /** Called when an answer came in: build again. */
    private readonly changed: () => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A sibling's stand-in, made once per id, role and parent. */
  private standIn(id: string, beside: ThreadMessage, parent: string | null): RepositoryItem {
    const key = `${parent ?? ''}\u0000${beside.role}\u0000${id}`
    let item = this.standIns.get(key)
    if (item === undefined) {
      item = standIn(id, beside, parent)
      this.standIns.set(key, item)
    }
    return item
  }

  /** The row and its siblings, when known: a list of `count` with the row at `index`. */
  private siblingsOf(row: ChatRow, parent: string | null): readonly string[] | undefined {
    if (row.kind !== 'message' || row.message.branch === undefined) return [row.key]
    const { index, count } = row.message.branch
    const fits = (list: readonly string[] | undefined) => list?.length === count && list[index] === row.key
    const known = this.lists.get(row.key)
    if (fits(known)) return known
    // The newest sibling, made on this page: the rows seen under the parent, then it.
    const before = this.children.get(parent ?? '')
    if (index === count - 1 && before?.length === count - 1 && !before.includes(row.key)) {
      const list = [...before, row.key]
      for (const id of list) this.lists.set(id, list)
      return list
    }
    if (this.unread.has(row.key)) return [row.key]
    this.ask(row.key)
    return undefined
  }

  private ask(id: string): void {
    if (this.asking.has(id)) return
    this.asking.add(id)
    this.view.branches(id).then(
      ({ ids }) => {
        this.asking.delete(id)
        for (const member of ids) this.lists.set(member, ids)
        this.changed()
      },
      (error: unknown) => {
        this.asking.delete(id)
        this.unread.add(id)
        this.onError(error)
        this.changed()
      },
    )
  }

  /**
   * The branch store for `rows` (the path, oldest first); the last one built while a sibling
   * list is being asked for (undefined before any).
   */
  repository(rows: readonly ChatRow[]): ExportedMessageRepository | undefined {
    const messages: RepositoryItem[] = []
    const children = new Map<string, readonly string[]>()
    let parent: string | null = null
    for (const row of rows) {
      const siblings = this.siblingsOf(row, parent)
      if (siblings === undefined) return this.last
      const item = itemOf(row, parent)
      for (const id of siblings) messages.push(id === row.key ? item : this.standIn(id, item.message, parent))
      children.set(parent ?? '', siblings)
      parent = row.key
    }
    for (const [key, list] of children) this.children.set(key, list)
    this.last = { headId: parent, messages }
    return this.last
  }
}
