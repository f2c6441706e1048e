/**
 * `useChat` over a `SessionView`: the AI SDK's chat state and helpers, kept equal to the view's
 * rows, plus sessionline's durable inbox (`queued`, `admit`).
 *
 * The view is the source of truth. The chat streams the turn it asked for, all its steps as one
 * assistant message (status goes `submitted → streaming → ready` once per turn); every other
 * change (a promoted input, a row another tab wrote, older history) reaches `messages` from the
 * view. A turn that runs while the chat is idle (after a reload, a queued input's turn, a steer)
 * is resumed: the transport replays it from its first step under that step's stored id, so it
 * never doubles.
 *
 * `regenerate()` asks for a new answer to the last prompt (`regenerate({messageId})`: to that
 * answer's prompt) and `sendMessage({text, messageId})` resends that prompt with the new text,
 * each on a new branch of the session's history (docs/decisions/0033); the old answers stay in
 * the log, off the active path.
 *
 * Messages sent while a turn runs go to the durable queue instead of the chat's in-memory one
 * (ai 7's `experimental_queue`): `experimental_queuedMessages` and its remove/send-now helpers
 * read and change that queue, which survives a reload.
 */
import { type UseChatHelpers, type UseChatOptions, useChat } from '@ai-sdk/react'
import type { ChatInit } from 'ai'
import { useCallback, useLayoutEffect, useMemo, useRef } from 'react'
import { chatRows, isTurnRunning, openAssistantRow } from '../client/activity'
import type { SessionView, TimelineInput, TimelineRow } from '../client/types'
import { useSessionView } from '../react'
import type { Delivery } from '../schema/common'
import { SessionlineError } from '../schema/errors'
import type { InputReceipt } from '../schema/inputs'
import {
  groupRows,
  groupToUIMessage,
  isOpenGroup,
  rowsToUIMessages,
  type SessionlineUIMessage,
  toUIMessage,
} from './messages'
import {
  filesOfMessage,
  hasFiles,
  SessionlineChatTransport,
  type SessionlineChatTransportOptions,
  textOfParts,
} from './transport'

export type UseSessionlineChatOptions = Omit<
  ChatInit<SessionlineUIMessage>,
  'id' | 'messages' | 'transport' | 'experimental_queue'
> & {
  /** Throttle of message updates in ms (the AI SDK's `throttle`). */
  throttle?: number
  /** Options of the transport the hook builds (`delivery`, `onAbort`). */
  transport?: Omit<SessionlineChatTransportOptions, 'view'>
}

export interface SessionlineChatExtras {
  /** Inputs waiting in the session's durable queue, in inbox order (the view's `queued`). */
  queued: readonly TimelineInput[]
  /** The same queue as UI messages (ai 7's `experimental_queuedMessages`, but durable). */
  experimental_queuedMessages: SessionlineUIMessage[]
  /** Cancels a queued input. */
  experimental_removeQueuedMessage: (id: string) => void
  /**
   * Moves a queued input into the running turn: it becomes a steer in place (`setDelivery`, same
   * id), which joins the turn at its next safe boundary instead of stopping the answer in progress.
   */
  experimental_sendQueuedMessageNow: (id: string) => Promise<void>
  /** Admits text straight into the session: `steer` joins the running turn, `queue` waits for its own. */
  admit: (text: string, options?: { delivery?: Delivery; id?: string }) => Promise<InputReceipt>
  /** Changes the text of a queued (or pending) input. */
  editQueued: (id: string, text: string) => Promise<void>
  /** Whether the session's turn runs (also between the steps of a turn, when `status` is `ready`). */
  isRunning: boolean
  hasOlder: boolean
  /** Loads the page of history before the first message; it is prepended to `messages`. */
  loadOlder: () => Promise<void>
  /**
   * Answers a tool call that waits for approval (AI SDK 6+'s helper, on every release here):
   * `id` is the call's `toolCallId`, since sessionline asks once per call. It goes through
   * `respondToApproval`, so the answer is durable and every tab sees it; a call that waits no
   * more rejects `invalid_state`.
   */
  addToolApprovalResponse: (response: { id: string; approved: boolean; reason?: string }) => Promise<void>
}

export type SessionlineChat = UseChatHelpers<SessionlineUIMessage> & SessionlineChatExtras

const isLive = (status: string) => status === 'submitted' || status === 'streaming'

/** The error a helper of `useChat` that sessionline cannot honour throws, naming the limit. */
function unsupported(helper: string, limit: string): SessionlineError {
  return new SessionlineError('unsupported', `${helper} is not supported by useSessionlineChat: ${limit}`, {
    helper,
  })
}

const TOOLS_IN_WORKER =
  "tools run in the session's worker, which writes their output; a page cannot answer a call"

/**
 * Helpers of `useChat` that would change the chat behind the session's back. Each throws (or, for
 * the async ones, rejects with) a `SessionlineError` with code `unsupported`. Only those the
 * installed `@ai-sdk/react` has are replaced.
 */
const REFUSED = {
  setMessages: (): never => {
    throw unsupported(
      'setMessages',
      "messages are the session's rows; change the session with admit, editQueued or experimental_removeQueuedMessage",
    )
  },
  addToolResult: async (): Promise<never> => {
    throw unsupported('addToolResult', TOOLS_IN_WORKER)
  },
  addToolOutput: async (): Promise<never> => {
    throw unsupported('addToolOutput', TOOLS_IN_WORKER)
  },
}

/** Why a message given to `sendMessage` cannot be admitted as it is, if it cannot. */
function refusalOf(message: object): SessionlineError | undefined {
  const fields = message as { metadata?: unknown; messageId?: unknown; parts?: unknown }
  if (fields.metadata !== undefined)
    return unsupported('sendMessage({ metadata })', "an input's metadata is not stored")
  if (fields.messageId !== undefined && hasFiles(message))
    return unsupported('sendMessage({ messageId }) with files', 'a resent prompt is text only')
  const parts = Array.isArray(fields.parts) ? (fields.parts as { type: string }[]) : []
  const other = parts.find((part) => part.type !== 'text' && part.type !== 'file')
  if (other !== undefined)
    return unsupported(`sendMessage with a ${other.type} part`, 'an input is text and files only')
  return undefined
}

/**
 * The view's rows as messages; the row the chat is streaming keeps the chat's own message.
 * `findsById`: the chat writes a streamed message wherever its id is (ai 7.0.168 and later);
 * older releases replace only the last message, so rows after the streamed one wait until its
 * stream ends.
 */
function reconcile(
  rows: readonly TimelineRow[],
  current: readonly SessionlineUIMessage[],
  live: boolean,
  findsById: boolean,
  steering: boolean,
): SessionlineUIMessage[] {
  const own = live ? new Map(current.map((message) => [message.id, message])) : undefined
  let streamedAt = -1
  const groups = groupRows(chatRows(rows), { steering })
  const next = groups.map((group, i) => {
    const streamed = own?.get(group[0]!.key)
    if (streamed === undefined || !isOpenGroup(group, i === groups.length - 1)) return groupToUIMessage(group)
    streamedAt = i
    return streamed
  })
  if (live && !findsById && streamedAt !== -1) next.length = streamedAt + 1
  // The message the chat just pushed, in the instant before the view shows its input.
  const last = current.at(-1)
  if (live && last?.role === 'user' && !rows.some((row) => row.key === last.id)) next.push(last)
  return next
}

const sameMessages = (a: readonly SessionlineUIMessage[], b: readonly SessionlineUIMessage[]) =>
  a.length === b.length && a.every((message, i) => message === b[i])

export function useSessionlineChat(
  view: SessionView,
  options: UseSessionlineChatOptions = {},
): SessionlineChat {
  const { transport: transportOptions, ...chatOptions } = options
  const snapshot = useSessionView(view)
  const delivery = transportOptions?.delivery
  const onAbort = transportOptions?.onAbort
  const transport = useMemo(
    () =>
      new SessionlineChatTransport({
        view,
        ...(delivery ? { delivery } : {}),
        ...(onAbort ? { onAbort } : {}),
      }),
    [view, delivery, onAbort],
  )
  const init: UseChatOptions<SessionlineUIMessage> = {
    ...chatOptions,
    id: view.sessionId,
    transport,
    messages: snapshot.status === 'ready' ? rowsToUIMessages(snapshot.rows) : [],
  }
  const chat = useChat<SessionlineUIMessage>(init)
  const { messages, status, setMessages, resumeStream } = chat
  const live = isLive(status)
  // ai 7.0.168 and later (the releases with `experimental_queue`) rebuild a resumed message from
  // the replay (`resumeStreamIsReplay`) and write streamed messages by id. Older releases continue
  // the last assistant message on a resume, which a replay would double: there, a row the chat
  // did not ask for is followed through `setMessages` alone (status stays `ready`; `isRunning`
  // says a turn runs).
  const replays = 'experimental_queuedMessages' in chat
  // The same releases stream a steer as a `steering-message` part (since 7.0.163).
  const steering = replays
  transport.steering = steering

  useLayoutEffect(() => {
    if (snapshot.status === 'loading') return
    const next = reconcile(snapshot.rows, messages, live, replays, steering)
    if (!sameMessages(next, messages)) setMessages(next)
  }, [snapshot, messages, live, replays, steering, setMessages])

  // One resume per running row: a row that settles while its reconnect starts is not asked twice.
  const resumed = useRef<string | undefined>(undefined)
  useLayoutEffect(() => {
    if (!replays || snapshot.status !== 'ready' || live) return
    const open = openAssistantRow(snapshot.rows)
    if (open === undefined || resumed.current === open.id) return
    resumed.current = open.id
    void resumeStream()
  }, [snapshot, live, replays, resumeStream])

  const running = isTurnRunning(snapshot.rows)
  const chatSend = chat.sendMessage
  const chatStop = chat.stop
  const chatStatus = useRef(status)
  chatStatus.current = status
  /** Requests this hook handed the chat that have not finished (two sends in one tick see it). */
  const requests = useRef(0)
  const sendMessage = useCallback<SessionlineChat['sendMessage']>(
    async (message, requestOptions) => {
      const refused = message === undefined ? undefined : refusalOf(message)
      if (refused) throw refused
      if (message !== undefined && 'messageId' in message && message.messageId !== undefined) {
        // An edit: the prompt is resent on a new branch, which ends what runs; the chat's own
        // stream of it is let go first so the chat starts the new one at once.
        if (isLive(chatStatus.current)) await chatStop()
        requests.current++
        try {
          return await chatSend(message, requestOptions)
        } finally {
          requests.current--
        }
      }
      const busy =
        requests.current > 0 || isLive(chatStatus.current) || isTurnRunning(view.getSnapshot().rows)
      if (!busy || message === undefined) {
        requests.current++
        try {
          return await chatSend(message, requestOptions)
        } finally {
          requests.current--
        }
      }
      // The chat would start a second request over the running one: the input waits in the
      // session's queue instead, durably, and runs as its own turn.
      const text =
        'text' in message && typeof message.text === 'string'
          ? message.text
          : textOfParts(message.parts ?? [])
      const id = 'id' in message && typeof message.id === 'string' ? message.id : undefined
      // Read only when there are files: a message of text is admitted (and shown) in this task.
      const attachments = hasFiles(message) ? await filesOfMessage(message) : []
      await view.admit(text, {
        delivery: 'queue',
        ...(id ? { id } : {}),
        ...(attachments.length > 0 && { attachments }),
      })
    },
    [chatSend, chatStop, view],
  )
  const stop = useCallback(async () => {
    const interrupting = isTurnRunning(view.getSnapshot().rows) ? view.interrupt() : undefined
    await Promise.all([chatStop(), interrupting])
  }, [chatStop, view])

  const chatRegenerate = chat.regenerate
  const queuedMessages = useMemo(() => snapshot.queued.map(toUIMessage), [snapshot.queued])
  const extras: SessionlineChatExtras = {
    queued: snapshot.queued,
    experimental_queuedMessages: queuedMessages,
    experimental_removeQueuedMessage: useCallback(
      // A cancel the engine refuses shows the input again; there is no caller to tell.
      (id: string) => void view.cancel(id).catch(() => undefined),
      [view],
    ),
    experimental_sendQueuedMessageNow: useCallback(
      async (id: string) => {
        if (!view.getSnapshot().queued.some((queued) => queued.id === id)) return
        await view.setDelivery(id, 'steer')
      },
      [view],
    ),
    admit: useCallback((text, admitOptions) => view.admit(text, admitOptions), [view]),
    editQueued: useCallback((id, text) => view.edit(id, text), [view]),
    isRunning: running,
    hasOlder: snapshot.hasOlder,
    loadOlder: useCallback(() => view.loadOlder(), [view]),
    addToolApprovalResponse: useCallback(
      ({ id, approved, reason }: { id: string; approved: boolean; reason?: string }) =>
        view.respondToApproval(id, reason === undefined ? { approved } : { approved, reason }),
      [view],
    ),
  }
  const result: SessionlineChat = {
    ...chat,
    sendMessage,
    stop,
    setMessages: REFUSED.setMessages,
    regenerate: useCallback<SessionlineChat['regenerate']>(
      async (regenerateOptions) => {
        // A new answer on a new branch ends what runs; the chat's stream of it is let go first.
        if (isLive(chatStatus.current)) await chatStop()
        return chatRegenerate(regenerateOptions)
      },
      [chatRegenerate, chatStop],
    ),
    ...extras,
  }
  for (const helper of ['addToolResult', 'addToolOutput'] as const)
    if (helper in chat) (result as unknown as Record<string, unknown>)[helper] = REFUSED[helper]
  return result
}
