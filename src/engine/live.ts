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

interface Unflushed {
  text: string
  reasoning: string
}

const dropPrefix = (buffer: string, persisted: string | undefined): string =>
  !persisted ? buffer : buffer.startsWith(persisted) ? buffer.slice(persisted.length) : ''

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
        const { messageId, text = '', reasoning = '' } = event.data
        const buffer = unflushed.get(messageId) ?? { text: '', reasoning: '' }
        unflushed.set(messageId, { text: buffer.text + text, reasoning: buffer.reasoning + reasoning })
      }
    },
    settle(events) {
      for (const event of events) {
        if (event.type === 'turn/end') unflushed.clear()
        else if (event.type === 'assistant/end') unflushed.delete(event.data.messageId)
        else if (event.type === 'assistant/delta') {
          const buffer = unflushed.get(event.data.messageId)
          if (!buffer) continue
          const next = {
            text: dropPrefix(buffer.text, event.data.text),
            reasoning: dropPrefix(buffer.reasoning, event.data.reasoning),
          }
          if (next.text === '' && next.reasoning === '') unflushed.delete(event.data.messageId)
          else unflushed.set(event.data.messageId, next)
        }
      }
    },
    preview(state, sessionId, headSeq, at) {
      const rows: SessionMessage[] = []
      let folded = state
      for (const [messageId, buffer] of unflushed) {
        if (openRowOf(folded, messageId)?.status !== 'streaming') {
          unflushed.delete(messageId)
          continue
        }
        const data: { messageId: string; text?: string; reasoning?: string } = { messageId }
        if (buffer.reasoning) data.reasoning = buffer.reasoning
        if (buffer.text) data.text = buffer.text
        const step = applyTranscript(folded, { type: 'assistant/delta', data, sessionId, seq: headSeq, at })
        folded = step.state
        rows.push(...step.changed)
      }
      return rows.sort((a, b) => a.seq - b.seq)
    },
    clear() {
      unflushed.clear()
    },
  }
}
