/**
 * A stream of AI SDK message chunks that follows one turn's assistant rows (its model steps, one
 * message) of a `SessionView` on the page: the chunks are diffs between successive snapshots of
 * those rows, so nothing streams through Comlink, and a stream started late (a reconnect) replays
 * the turn from its first step.
 *
 * Only chunk types that ai 5, 6 and 7 all know are written: `start`, `start-step`, `text-*`,
 * `reasoning-*`, `tool-input-available`, `tool-output-available`, `tool-output-error`,
 * `finish-step`, `finish`, `abort` and `error`; and `steering-message` (ai 7.0.163 and later)
 * only when the caller asks for it.
 */
import type { UIMessageChunk } from 'ai'
import { chatRows } from '../client/activity'
import type { SessionView, TimelineSnapshot } from '../client/types'
import type { SessionMessage } from '../schema/messages'
import {
  type GroupOptions,
  groupAt,
  INTERRUPTED_TOOL_TEXT,
  isOpenGroup,
  type SessionlineMessageMetadata,
  steeringPart,
} from './messages'

type Chunk = UIMessageChunk

/** What the stream should do next, given a snapshot: follow a row, keep waiting, or end empty. */
export type Locate = (snapshot: TimelineSnapshot) => { follow: string } | 'wait' | 'end' | Error

/** What the receiver has of one part: text sent so far and whether it was opened and closed. */
interface PartProgress {
  /** Text and reasoning: characters sent. */
  sent: number
  /** Text and reasoning: `-start` sent; tools: the call sent. */
  opened: boolean
  /** Text and reasoning: `-end` sent; tools: the result or failure sent. */
  closed: boolean
}

const fresh = (): PartProgress => ({ sent: 0, opened: false, closed: false })

function metadataOf(message: SessionMessage): SessionlineMessageMetadata {
  return { seq: message.seq, turn: message.turn, status: message.status }
}

/** The chunks that bring a receiver from `progress` to `message`; updates `progress`. */
function diff(message: SessionMessage, progress: PartProgress[]): Chunk[] {
  const chunks: Chunk[] = []
  const open = message.status === 'streaming'
  message.parts.forEach((part, i) => {
    const id = `${message.id}:${i}`
    const growing = open && i === message.parts.length - 1
    if (progress[i] === undefined) progress[i] = fresh()
    const seen = progress[i]
    if (part.type === 'text' || part.type === 'reasoning') {
      if (seen.closed) return
      if (!seen.opened) {
        chunks.push({ type: `${part.type}-start`, id })
        seen.opened = true
      }
      if (part.text.length > seen.sent) {
        chunks.push({ type: `${part.type}-delta`, id, delta: part.text.slice(seen.sent) })
        seen.sent = part.text.length
      }
      if (!growing) {
        chunks.push({ type: `${part.type}-end`, id })
        seen.closed = true
      }
      return
    }
    // A file arrives with its user row, never from the model's stream.
    if (part.type === 'file') return
    if (!seen.opened) {
      chunks.push({
        type: 'tool-input-available',
        toolCallId: part.callId,
        toolName: part.name,
        input: part.input,
        dynamic: true,
      })
      seen.opened = true
    }
    if (seen.closed || part.state === 'running' || part.state === 'awaiting-approval') return
    seen.closed = true
    if (part.state === 'done')
      chunks.push({
        type: 'tool-output-available',
        toolCallId: part.callId,
        output: part.output ?? null,
        dynamic: true,
      })
    else
      chunks.push({
        type: 'tool-output-error',
        toolCallId: part.callId,
        errorText:
          part.state === 'interrupted'
            ? INTERRUPTED_TOOL_TEXT
            : typeof part.output === 'string'
              ? part.output
              : JSON.stringify(part.output ?? null),
        dynamic: true,
      })
  })
  return chunks
}

/**
 * Follows the assistant row `locate` picks and the later steps of its turn that follow it (one
 * message; a step each) until the last one settles and no step is due after it, then finishes.
 * `onAbort` runs once if `signal` aborts first.
 */
export function followRow(
  view: SessionView,
  locate: Locate,
  signal: AbortSignal | undefined,
  onAbort?: () => void,
  options: GroupOptions = {},
): ReadableStream<Chunk> {
  let stop: (() => void) | undefined
  return new ReadableStream<Chunk>({
    start(controller) {
      let target: string | undefined
      let done = false
      let started = false
      /** Per step (row id): what the receiver has of each of its parts. */
      const progress = new Map<string, PartProgress[]>()
      /** A `start-step` was sent and its `finish-step` not yet. */
      let stepOpen = false
      const finish = (last: Chunk[] = []) => {
        if (done) return
        done = true
        stop?.()
        for (const chunk of last) controller.enqueue(chunk)
        controller.close()
      }
      const fail = (error: Error) => {
        if (done) return
        done = true
        stop?.()
        controller.error(error)
      }
      const onAbortSignal = () => {
        if (done) return
        done = true
        stop?.()
        onAbort?.()
        controller.close()
      }
      const step = () => {
        if (done) return
        const snapshot = view.getSnapshot()
        if (snapshot.status === 'loading') return
        if (snapshot.status === 'error' && snapshot.error && target === undefined) {
          fail(snapshot.error)
          return
        }
        if (target === undefined) {
          const next = locate(snapshot)
          if (next === 'wait') return
          if (next === 'end') {
            finish()
            return
          }
          if (next instanceof Error) {
            fail(next)
            return
          }
          target = next.follow
        }
        const rows = chatRows(snapshot.rows)
        const group = groupAt(rows, target, options)
        const first = group?.[0]
        if (group === undefined || first?.kind !== 'message') return
        if (!started) {
          started = true
          controller.enqueue({
            type: 'start',
            messageId: first.message.id,
            messageMetadata: metadataOf(first.message),
          })
        }
        // Each of the turn's steps (a row each) is a step of the one message; a steer taken into
        // the turn (with `steering`) is a `steering-message` chunk between two steps.
        for (const row of group) {
          if (row.kind !== 'message') continue
          let seen = progress.get(row.message.id)
          if (seen === undefined) {
            if (stepOpen) controller.enqueue({ type: 'finish-step' })
            stepOpen = row.message.role === 'assistant'
            if (stepOpen) controller.enqueue({ type: 'start-step' })
            else controller.enqueue(steeringPart(row) as unknown as Chunk)
            seen = []
            progress.set(row.message.id, seen)
          }
          if (row.message.role === 'assistant')
            for (const chunk of diff(row.message, seen)) controller.enqueue(chunk)
        }
        if (isOpenGroup(group, group.at(-1) === rows.at(-1))) return
        // A steer waiting right after the turn's rows may still join it (then it is a part of
        // this message): wait until it is promoted, into this turn or as the next one's prompt.
        const after = rows[rows.indexOf(group.at(-1)!) + 1]
        if (options.steering && after?.kind === 'input' && after.input.state !== 'failed') return
        const tail = group.findLast((row) => row.kind === 'message' && row.message.role === 'assistant')
        if (tail?.kind !== 'message') return
        const message = tail.message
        const ending: Chunk[] = stepOpen ? [{ type: 'finish-step' }] : []
        if (message.status === 'interrupted') ending.push({ type: 'abort' })
        if (message.status === 'error') {
          ending.push({ type: 'error', errorText: 'The model step failed; the turn ended with an error.' })
        }
        ending.push({ type: 'finish', messageMetadata: metadataOf(message) })
        finish(ending)
      }
      if (signal?.aborted) {
        onAbortSignal()
        return
      }
      signal?.addEventListener('abort', onAbortSignal, { once: true })
      const unsubscribe = view.subscribe(step)
      stop = () => {
        unsubscribe()
        signal?.removeEventListener('abort', onAbortSignal)
      }
      step()
    },
    cancel() {
      stop?.()
    },
  })
}
