/**
 * assistant-ui's external-store runtime over a `SessionView`: the thread is the view's rows, the
 * composer's queue is the session's durable inbox.
 *
 * Steering differs from assistant-ui's own queue (`createMessageQueue`), which cancels the run
 * and sends the steered message at once: here `steer` admits a steer that joins the running turn
 * at its next safe boundary (before the model's next step), so the answer in progress finishes
 * and nothing streamed is thrown away. Stop (`onCancel`) is the way to cut a run short.
 */
import {
  type AppendMessage,
  type AssistantRuntime,
  type ExportedMessageRepository,
  type ExternalStoreAdapter,
  type ExternalThreadQueueAdapter,
  type ThreadMessage,
  useExternalStoreRuntime,
} from '@assistant-ui/react'
import { useMemo, useReducer } from 'react'
import { chatRows, isTurnRunning } from '../client/activity'
import type { SessionView, TimelineInput, TimelineRow, TimelineSnapshot } from '../client/types'
import { useSessionView } from '../react'
import { SessionlineError } from '../schema/errors'
import { SiblingLists } from './branches'
import { filesOfAppend, textOfAppend } from './messages'

const EMPTY_REPOSITORY: ExportedMessageRepository = { headId: null, messages: [] }

export interface SessionlineRuntimeOptions {
  /** assistant-ui adapters (attachments, speech, feedback, …), passed through. */
  adapters?: ExternalStoreAdapter<TimelineRow>['adapters']
  /** Called with a failed admit, edit, cancel or interrupt (default: `console.error`). */
  onError?: (error: unknown) => void
}

type QueueItem = ExternalThreadQueueAdapter['items'][number]

const itemsOf = new WeakMap<readonly TimelineInput[], readonly QueueItem[]>()

/** Queued inputs as assistant-ui queue items, converted once per `queued` array. */
function queueItems(queued: readonly TimelineInput[]): readonly QueueItem[] {
  let items = itemsOf.get(queued)
  if (items === undefined) {
    items = queued.map((input) => ({
      id: input.id,
      prompt: input.text,
      parts: [{ type: 'text', text: input.text }],
    }))
    itemsOf.set(queued, items)
  }
  return items
}

const NO_ITEMS: readonly QueueItem[] = Object.freeze([])

/**
 * The composer's queue over the session's inbox: `enqueue` admits a queued input (a turn of its
 * own, in admission order), `steer` admits a steer (joins the running turn at its next safe
 * boundary), `edit` and `remove` change or cancel a queued input. A queued item moved to the
 * steer lane becomes a steer in place (`setDelivery`, same id); a move within the queue lane
 * reorders the inbox (`reorder`), which the turns then follow.
 * Pending steers are shown inline in the thread, where the view's rows put them, so the steer
 * lane stays empty.
 */
export function sessionlineQueueAdapter(
  view: SessionView,
  snapshot: TimelineSnapshot,
  onError: (error: unknown) => void = console.error,
): ExternalThreadQueueAdapter {
  const report = (work: Promise<unknown>) => void work.catch(onError)
  return {
    items: queueItems(snapshot.queued),
    steerItems: NO_ITEMS,
    enqueue(message: AppendMessage) {
      // Nothing runs and nothing waits: a queued input would open a turn at once; admitted as a
      // steer it does the same and shows in the thread right away instead of in the tray first.
      const current = view.getSnapshot()
      const idle = !isTurnRunning(current.rows) && current.queued.length === 0
      report(admitAppend(view, message, idle ? 'steer' : 'queue'))
    },
    steer(message: AppendMessage) {
      report(admitAppend(view, message, 'steer'))
    },
    move(id, placement) {
      if (placement.lane === 'steer') {
        // Same input, same id: it becomes a steer in place (nothing cancelled and re-admitted).
        report(view.setDelivery(id, 'steer'))
        return
      }
      const before = beforeOf(view.getSnapshot().queued, id, placement)
      if (before !== undefined) report(view.reorder(id, { before }))
    },
    edit(id, message) {
      report(view.edit(id, textOfAppend(message)))
    },
    remove(id) {
      report(view.cancel(id))
    },
  }
}

/**
 * The queued input a move within the queue puts `id` before (`null`: the end), or undefined for
 * a move that names no place (it changes nothing).
 */
function beforeOf(
  queued: readonly TimelineInput[],
  id: string,
  placement: { insertBefore?: string | null; insertAfter?: string | null },
): string | null | undefined {
  if (placement.insertBefore !== undefined) return placement.insertBefore
  if (placement.insertAfter === undefined) return undefined
  const others = queued.filter((input) => input.id !== id)
  if (placement.insertAfter === null) return others[0]?.id ?? null
  const after = others.findIndex((input) => input.id === placement.insertAfter)
  return after === -1 ? undefined : (others[after + 1]?.id ?? null)
}

/**
 * Admits an appended message: its text and its attachments' bytes (read on the page). Without
 * attachments the admit starts in this call, so the row shows before the call returns.
 */
function admitAppend(view: SessionView, message: AppendMessage, delivery: 'steer' | 'queue') {
  const text = textOfAppend(message)
  if (!message.attachments?.length) return view.admit(text, { delivery })
  return filesOfAppend(message).then((attachments) =>
    view.admit(text, { delivery, ...(attachments.length > 0 && { attachments }) }),
  )
}

/**
 * The edit composer's send: a sent prompt (a transcript row) is resent with the new text on a new
 * branch (docs/decisions/0033), an input still pending is edited in place. Files cannot go with a
 * resent prompt; saying so beats dropping them.
 */
async function editAppend(view: SessionView, message: AppendMessage): Promise<void> {
  const id = message.sourceId
  if (id === null) {
    await admitAppend(view, message, 'steer')
    return
  }
  const text = textOfAppend(message)
  const row = view.getSnapshot().rows.find((r) => r.key === id)
  if (row?.kind === 'input') {
    await view.edit(id, text)
    return
  }
  if (message.attachments?.length)
    throw new SessionlineError(
      'unsupported',
      'onEdit with attachments is not supported: a resent prompt is text only',
      {
        helper: 'onEdit',
      },
    )
  await view.resend(id, { text })
}

/**
 * What the runtime asks `setMessages` for, read by what it means for the session's history:
 * - the branch picker chose a path whose last row is not shown: that row's path becomes the head
 *   (`switchBranch`; the picker knows every sibling, from the rows' `branch` and `branches`);
 * - anything else changes nothing: the log keeps every row. (Stop before any answer hands the
 *   runtime's draft the prompt while the row stays; the runtime takes the draft back when it sees
 *   the row again, as it did before this adapter had `setMessages`.)
 */
function applyRuntimeMessages(
  view: SessionView,
  messages: readonly ThreadMessage[],
  onError: (error: unknown) => void,
) {
  const shown = chatRows(view.getSnapshot().rows)
  const last = messages.at(-1)
  if (last !== undefined && !shown.some((row) => row.key === last.id))
    void view.switchBranch(last.id).catch(onError)
}

/** Reload: a new answer, on a new branch, to the prompt of the answer under `parentId`. */
async function reload(view: SessionView, parentId: string | null): Promise<void> {
  if (parentId === null)
    throw new SessionlineError('invalid_input', 'onReload needs the message the answer follows', {
      helper: 'onReload',
    })
  await view.regenerate(parentId)
}

/**
 * An assistant-ui runtime for one session: messages are the view's rows (transcript rows, then
 * pending steers) as its branch store, each row's siblings beside it so the branch picker counts
 * them from the rows' `branch`, after a reload too (./branches); `isRunning` follows the turn,
 * `onNew` admits, `onEdit` resends a prompt (`edit` for one still pending), `onReload`
 * regenerates an answer, `onCancel` interrupts, older history loads through `onLoadEarlier`.
 *
 * @example
 *   const runtime = useSessionlineRuntime(view)
 *   return <AssistantRuntimeProvider runtime={runtime}><Thread /></AssistantRuntimeProvider>
 */
export function useSessionlineRuntime(
  view: SessionView,
  options: SessionlineRuntimeOptions = {},
): AssistantRuntime {
  const snapshot = useSessionView(view)
  const { adapters, onError = console.error } = options
  const queue = useMemo(() => sessionlineQueueAdapter(view, snapshot, onError), [view, snapshot, onError])
  const [answers, answered] = useReducer((n: number) => n + 1, 0)
  // One per view: a thread list that switches sessions hands in another view.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the first onError is kept
  const lists = useMemo(() => new SiblingLists(view, answered, onError), [view])
  const rows = chatRows(snapshot.rows)
  // biome-ignore lint/correctness/useExhaustiveDependencies: an answer about siblings builds again
  const repository = useMemo(() => lists.repository(rows), [lists, rows, answers])
  const adapter: ExternalStoreAdapter<ThreadMessage> = {
    messageRepository: repository ?? EMPTY_REPOSITORY,
    isRunning: isTurnRunning(snapshot.rows),
    isLoading: snapshot.status === 'loading' || repository === undefined,
    hasEarlier: snapshot.hasOlder,
    onLoadEarlier: () => view.loadOlder(),
    onNew: async (message) => {
      await admitAppend(view, message, 'steer')
    },
    onEdit: (message) => editAppend(view, message),
    onReload: (parentId) => reload(view, parentId),
    onCancel: () => view.interrupt(),
    setMessages: (messages) => applyRuntimeMessages(view, messages, onError),
    // Offered by assistant-ui once `setMessages` is given; the log never drops a row, so say so.
    onDelete: () => {
      throw new SessionlineError(
        'unsupported',
        'onDelete is not supported: the log keeps every row (rewind or switch branches instead)',
        { helper: 'onDelete' },
      )
    },
    queue,
    ...(adapters ? { adapters } : {}),
  }
  return useExternalStoreRuntime(adapter)
}
