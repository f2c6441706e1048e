/**
 * Streamed text the runner has shown but not yet made durable, per open assistant message.
 * Previews fold it over the durable transcript state (on a copy) with the same pure fold as the
 * log, so a preview looks exactly like the row the durable append will produce.
 *
 * When a durable `assistant/delta` lands, the text it carries is taken off the front of the
 * buffer: the runner persists what it showed, in order, so what remains is still ahead of the log.
 */
import { applyTranscript, openRowOf, type TranscriptState } from '../core/transcript'
import type { SessionEvent, StoredEvent } from '../schema/events'
import type { SessionMessage } from '../schema/messages'

/**
 * Unflushed text of one message, as pieces in the order it streamed: text and reasoning may
 * interleave, and a preview must show them as the log will (consecutive pieces of one kind merged).
 */
type Unflushed = { kind: 'text' | 'reasoning'; text: string }[]

/**
 * Takes `persisted` of `kind` off the front of `pieces`. False when the front does not match
 * (the log holds something the buffer did not expect): the caller then drops the buffer, and the
 * durable rows supersede it.
 */
function dropFront(pieces: Unflushed, kind: 'text' | 'reasoning', persisted: string | undefined): boolean {
  let rest = persisted ?? ''
  while (rest !== '') {
    const front = pieces[0]
    if (front?.kind !== kind) return false
    if (rest.startsWith(front.text)) {
      rest = rest.slice(front.text.length)
      pieces.shift()
    } else if (front.text.startsWith(rest)) {
      front.text = front.text.slice(rest.length)
      rest = ''
    } else return false
  }
  return true
}

export interface LiveBuffer {
  readonly size: number
  add(events: readonly SessionEvent[]): void
  settle(events: readonly StoredEvent[]): void
  preview(state: TranscriptState, sessionId: string, headSeq: number, at: number): SessionMessage[]
  clear(): void
}

export function createLiveBuffer(): LiveBuffer {
  const unflushed = new Map<string, Unflushed>()
  return {
    get size() {
      return unflushed.size
    },
    add(events) {
      for (const event of events) {
        if (event.type !== 'assistant/delta') continue
        const { messageId, text, reasoning } = event.data
        const pieces = unflushed.get(messageId) ?? []
        // In the order the fold applies one event's fields: reasoning, then text.
        for (const [kind, piece] of [
          ['reasoning', reasoning],
          ['text', text],
        ] as const) {
          if (!piece) continue
          const last = pieces.at(-1)
          if (last?.kind === kind) last.text += piece
          else pieces.push({ kind, text: piece })
        }
        if (pieces.length > 0) unflushed.set(messageId, pieces)
      }
    },
    settle(events) {
      for (const event of events) {
        if (event.type === 'turn/end') unflushed.clear()
        else if (event.type === 'assistant/end') unflushed.delete(event.data.messageId)
        else if (event.type === 'assistant/delta') {
          const pieces = unflushed.get(event.data.messageId)
          if (!pieces) continue
          const matched =
            dropFront(pieces, 'reasoning', event.data.reasoning) && dropFront(pieces, 'text', event.data.text)
          if (!matched || pieces.every((piece) => piece.text === '')) unflushed.delete(event.data.messageId)
        }
      }
    },
    preview(state, sessionId, headSeq, at) {
      const rows: SessionMessage[] = []
      let folded = state
      const changed = new Map<string, SessionMessage>()
      for (const [messageId, pieces] of unflushed) {
        if (openRowOf(folded, messageId)?.status !== 'streaming') {
          unflushed.delete(messageId)
          continue
        }
        for (const { kind, text } of pieces) {
          if (text === '') continue
          const data = kind === 'text' ? { messageId, text } : { messageId, reasoning: text }
          const step = applyTranscript(folded, { type: 'assistant/delta', data, sessionId, seq: headSeq, at })
          folded = step.state
          for (const row of step.changed) changed.set(row.id, row)
        }
      }
      for (const row of changed.values()) rows.push(row)
      return rows.sort((a, b) => a.seq - b.seq)
    },
    clear() {
      unflushed.clear()
    },
  }
}
