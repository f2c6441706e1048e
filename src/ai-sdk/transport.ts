/**
 * The AI SDK `ChatTransport` over a `SessionView`, entirely on the page: `sendMessages` admits the
 * last user message (its UI id becomes the input id, and so the row id) and streams the answer
 * from the view's snapshots; `reconnectToStream` replays the assistant row that is still running.
 * A regenerate (`regenerate-message`) asks the view for a new answer on a new branch, and a
 * message sent with a `messageId` resends that prompt with the new text (docs/decisions/0033).
 *
 * @example
 *   const transport = new SessionlineChatTransport({ view })
 *   const chat = useChat({ id: view.sessionId, transport })
 */
import type { ChatTransport, UIMessageChunk } from 'ai'
import { chatRows, isTurnRunning, openAssistantRow } from '../client/activity'
import type { SessionView, TimelineSnapshot } from '../client/types'
import type { AttachmentInput } from '../schema/attachments'
import type { Delivery } from '../schema/common'
import { SessionlineError } from '../schema/errors'
import { groupRows, type SessionlineUIMessage } from './messages'
import { followRow, type Locate } from './row-stream'

export interface SessionlineChatTransportOptions {
  view: SessionView
  /**
   * How a sent message enters the session. `steer` (default) joins the running turn at its next
   * safe boundary, or opens a turn when none runs; `queue` waits for a turn of its own.
   */
  delivery?: Delivery
  /**
   * What aborting a sent message's stream (`stop()`) does: `interrupt` (default) ends the running
   * turn, keeping what streamed; `detach` only stops following it.
   */
  onAbort?: 'interrupt' | 'detach'
  /**
   * A steer taken into a running turn streams as a `steering-message` part of the turn's message
   * (ai 7.0.163 and later know it) instead of ending the message. Default `false`: ai 5 and 6
   * would reject the chunk. `useSessionlineChat` turns it on when the chat's release has it.
   */
  steering?: boolean
}

/** The text of a UI message's text parts, as one input. */
export function textOfParts(parts: readonly { type: string; text?: string }[]): string {
  return parts
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('')
}

/**
 * The files of a UI message (`sendMessage({text, files})` puts them in as `file` parts with a
 * data or blob URL) as attachments to admit, their bytes read on the page. Parts that already
 * name a stored attachment (`sessionline-attachment:`) are the engine's own and are not sent again.
 */
export async function filesOfParts(
  parts: readonly { type: string; url?: string; mediaType?: string; filename?: string }[],
): Promise<AttachmentInput[]> {
  const files = parts.filter(
    (part) =>
      part.type === 'file' && typeof part.url === 'string' && !part.url.startsWith('sessionline-attachment:'),
  )
  return Promise.all(
    files.map(async (part, i) => ({
      name: part.filename || `file-${i + 1}`,
      mediaType: part.mediaType || 'application/octet-stream',
      data: await (await fetch(part.url as string)).blob(),
    })),
  )
}

/** Whether a message handed to `sendMessage` (or sent by the chat) carries files. */
export function hasFiles(message: object): boolean {
  const { files, parts } = message as { files?: unknown; parts?: unknown }
  if (
    files &&
    typeof (files as ArrayLike<unknown>).length === 'number' &&
    (files as ArrayLike<unknown>).length > 0
  )
    return true
  return Array.isArray(parts) && parts.some((part) => (part as { type?: unknown })?.type === 'file')
}

/**
 * The files of what `sendMessage` was given: `files` (a `FileList` or file parts) beside `text`,
 * or the file parts among `parts`.
 */
export async function filesOfMessage(message: object): Promise<AttachmentInput[]> {
  const { files, parts } = message as { files?: unknown; parts?: unknown }
  if (Array.isArray(files)) return filesOfParts(files)
  if (files && typeof (files as ArrayLike<unknown>).length === 'number')
    return Array.from(files as ArrayLike<File>, (file, i) => ({
      name: file.name || `file-${i + 1}`,
      mediaType: file.type || 'application/octet-stream',
      data: file,
    }))
  return Array.isArray(parts) ? filesOfParts(parts) : []
}

/**
 * The answer to input `id`: the first assistant row after its promoted row, skipping the rows of
 * `stale` (the answers a regenerate replaces, shown until the view reads the new branch).
 */
export function answerTo(id: string, stale: ReadonlySet<string> = new Set()): Locate {
  return (snapshot: TimelineSnapshot) => {
    const at = snapshot.rows.findIndex((row) => row.key === id)
    if (at === -1) return snapshot.queued.some((input) => input.id === id) ? 'wait' : 'end'
    const row = snapshot.rows[at]!
    if (row.kind === 'input') return row.input.state === 'failed' ? (row.input.error ?? 'end') : 'wait'
    for (let i = at + 1; i < snapshot.rows.length; i++) {
      const next = snapshot.rows[i]!
      if (next.kind !== 'message' || next.message.role !== 'assistant') continue
      if (stale.has(next.key)) return 'wait'
      return { follow: next.key }
    }
    const staleShown = stale.size > 0 && snapshot.rows.some((r) => stale.has(r.key))
    return isTurnRunning(snapshot.rows) || staleShown ? 'wait' : 'end'
  }
}

/** The assistant rows shown after user row `id` (the answers a regenerate of it replaces). */
function answersAfter(snapshot: TimelineSnapshot, id: string): Set<string> {
  const at = snapshot.rows.findIndex((row) => row.key === id)
  const answers = new Set<string>()
  for (let i = at + 1; at !== -1 && i < snapshot.rows.length; i++) {
    const row = snapshot.rows[i]!
    if (row.kind === 'message' && row.message.role === 'user') break
    if (row.kind === 'message' && row.message.role === 'assistant') answers.add(row.key)
  }
  return answers
}

export class SessionlineChatTransport implements ChatTransport<SessionlineUIMessage> {
  /** A reconnect sends the running row from its start (ai 7 resets the message it rebuilds). */
  readonly resumeStreamIsReplay = true
  readonly view: SessionView
  readonly #delivery: Delivery
  readonly #onAbort: 'interrupt' | 'detach'
  /** See `SessionlineChatTransportOptions.steering`; read when a stream starts. */
  steering: boolean

  constructor(options: SessionlineChatTransportOptions) {
    this.view = options.view
    this.#delivery = options.delivery ?? 'steer'
    this.#onAbort = options.onAbort ?? 'interrupt'
    this.steering = options.steering ?? false
  }

  async sendMessages(options: {
    chatId: string
    trigger: 'submit-message' | 'regenerate-message'
    messageId: string | undefined
    messages: SessionlineUIMessage[]
    abortSignal: AbortSignal | undefined
  }): Promise<ReadableStream<UIMessageChunk>> {
    const last = options.messages.at(-1)
    if (last === undefined || last.role !== 'user')
      throw new SessionlineError('invalid_input', 'sendMessages needs a user message last')
    const interrupt = () => {
      if (this.#onAbort === 'interrupt') this.view.interrupt().catch(() => undefined)
    }
    const follow = (locate: Locate) =>
      followRow(this.view, locate, options.abortSignal, interrupt, { steering: this.steering })
    if (options.trigger === 'regenerate-message') {
      // The chat cut the answer off: what is left ends with the prompt it answered. A new answer
      // to it on a new branch; the old one stays in the log, off the active path.
      const stale = answersAfter(this.view.getSnapshot(), last.id)
      await this.view.regenerate(options.messageId ?? last.id)
      return follow(answerTo(last.id, stale))
    }
    if (options.messageId !== undefined) {
      // An edit (`sendMessage({text, messageId})`): the prompt again with the new text, on a
      // new branch under a new input id; the old prompt and its answers stay in the log.
      if (hasFiles(last))
        throw new SessionlineError(
          'unsupported',
          'sendMessage({ messageId }) with files is not supported: a resent prompt is text only',
          { helper: 'sendMessage({ messageId })' },
        )
      const receipt = await this.view.resend(options.messageId, { text: textOfParts(last.parts) })
      return follow(answerTo(receipt.id))
    }
    const attachments = hasFiles(last) ? await filesOfParts(last.parts) : []
    await this.view.admit(textOfParts(last.parts), {
      id: last.id,
      delivery: this.#delivery,
      ...(attachments.length > 0 && { attachments }),
    })
    return follow(answerTo(last.id))
  }

  /**
   * The turn whose assistant row is still running, replayed from its first step with that step's
   * stored id (the message's id), then live; or
   * `null` when none runs. Aborting it only detaches (the chat also aborts a reconnect it
   * replaces, which must not end the turn).
   */
  async reconnectToStream(options: {
    chatId: string
    /** Passed by ai 5.0.244, 6.0.264 and 7.0.77 and later. */
    abortSignal?: AbortSignal
  }): Promise<ReadableStream<UIMessageChunk> | null> {
    const snapshot = await this.#loaded()
    const row = openAssistantRow(snapshot.rows)
    if (row === undefined) return null
    // The turn's message starts at its first step: replay from there.
    const steering = { steering: this.steering }
    const group = groupRows(chatRows(snapshot.rows), steering).find((rows) =>
      rows.some((r) => r.key === row.id),
    )
    const from = group?.[0]?.key ?? row.id
    return followRow(this.view, () => ({ follow: from }), options.abortSignal, undefined, steering)
  }

  /** The first snapshot that is not `loading`. */
  #loaded(): Promise<TimelineSnapshot> {
    const now = this.view.getSnapshot()
    if (now.status !== 'loading') return Promise.resolve(now)
    return new Promise((resolve) => {
      const stop = this.view.subscribe(() => {
        const snapshot = this.view.getSnapshot()
        if (snapshot.status === 'loading') return
        stop()
        resolve(snapshot)
      })
    })
  }
}
