/**
 * The log of a forked session (docs/architecture.md §11 `fork`, docs/decisions/0033): the rows of a source
 * path written again as ordinary turns under new row ids, so the fork is a native session like
 * any other, which the runner and every verb can continue. Pure: the engine reads the rows and
 * chooses the ids.
 *
 * - A `summary` row becomes `history/compact` replacing nothing (it closes a turn first): the
 *   path's last summary then leads the fork's context, as it led the source's.
 * - Consecutive user rows are one turn (the first its prompt, the rest steers); an assistant row
 *   is one step of the open turn (one is opened when none is). A tool call is answered at once
 *   when the row holds its result; one that never returned stays unanswered and ends
 *   `interrupted` with its turn.
 * - Rows the vocabulary cannot say are left out: `system` rows, and rows marked
 *   `excludedFromContext` (shown, never sent: a fork continues what the model saw).
 * - Usage is not copied onto steps: the fork made no model call.
 *
 * @example
 *   let n = 0
 *   const events = forkEvents(sourceRows, () => forkRowId(forkId, n++))
 *   stampAndFold(initFolds(), [created, ...events], newSessionId, 1, Date.now())
 */
import type { FilePart } from '../schema/attachments'
import type { SessionEvent } from '../schema/events'
import { MAX_EVENT_TEXT } from '../schema/limits'
import type { SessionMessage } from '../schema/messages'

/** FNV-1a over UTF-16 code units, as 8 hex digits: a short stand-in for an id too long to prefix. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash.toString(16).padStart(8, '0')
}

/**
 * The id of the `index`-th row (0-based) of fork `forkId`: `<forkId>/<index + 1>`, so a fork's
 * rows are named by the fork, the same in every engine (a long fork id is shortened to a hash).
 * A clash with a row that exists is refused as a `conflict` when the rows are added.
 */
export function forkRowId(forkId: string, index: number): string {
  const base = forkId.length <= 200 ? forkId : `fork-${fnv1a(forkId)}`
  return `${base}/${index + 1}`
}

const chunks = (text: string): string[] => {
  const out: string[] = []
  for (let at = 0; at < text.length; at += MAX_EVENT_TEXT) out.push(text.slice(at, at + MAX_EVENT_TEXT))
  return out
}

const textOf = (row: SessionMessage): string =>
  row.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')

/** The files a user row carries, which its `user/message` names again in the fork. */
const filesOf = (row: SessionMessage): FilePart[] => row.parts.filter((part) => part.type === 'file')

/** The events (after `session/created`) of a session holding `rows`, in that order, under new ids. */
export function forkEvents(
  rows: readonly SessionMessage[],
  newId: (row: SessionMessage) => string,
): SessionEvent[] {
  const events: SessionEvent[] = []
  let turn = 0
  let open = false
  let step = 0
  let lastRole: string | undefined
  const close = () => {
    if (open) events.push({ type: 'turn/end', data: { turn, reason: 'completed' } })
    open = false
  }
  const openTurn = () => {
    turn += 1
    step = 0
    open = true
    events.push({ type: 'turn/start', data: { turn } })
  }
  for (const row of rows) {
    if (row.role === 'system' || row.excludedFromContext) continue
    if (row.role === 'summary') {
      close()
      events.push({
        type: 'history/compact',
        data: { messageId: newId(row), text: textOf(row), throughId: null },
      })
    } else if (row.role === 'user') {
      const first = !open || lastRole !== 'user'
      if (first) {
        close()
        openTurn()
      }
      const files = filesOf(row)
      events.push({
        type: 'user/message',
        data: {
          inputId: newId(row),
          text: textOf(row),
          delivery: row.delivery ?? (first ? 'queue' : 'steer'),
          source: row.source ?? 'user',
          ...(files.length > 0 && { attachments: files }),
        },
      })
    } else {
      if (!open) openTurn()
      step += 1
      const messageId = newId(row)
      events.push({ type: 'step/start', data: { turn, step } })
      events.push({ type: 'assistant/start', data: { messageId, turn, step } })
      for (const part of row.parts) {
        if (part.type === 'text' || part.type === 'reasoning') {
          for (const piece of chunks(part.text)) {
            events.push({
              type: 'assistant/delta',
              data: part.type === 'text' ? { messageId, text: piece } : { messageId, reasoning: piece },
            })
          }
        } else if (part.type === 'tool') {
          events.push({
            type: 'tool/call',
            data: { messageId, callId: part.callId, name: part.name, input: part.input },
          })
          if (part.output !== undefined)
            events.push({
              type: 'tool/result',
              data: {
                callId: part.callId,
                output: part.output,
                isError: part.isError ?? part.state === 'error',
              },
            })
        }
      }
      const finish =
        row.finish ?? (row.status === 'error' ? 'error' : row.status === 'interrupted' ? 'aborted' : 'stop')
      events.push({
        type: 'assistant/end',
        data: row.usage === undefined ? { messageId, finish } : { messageId, finish, usage: row.usage },
      })
      events.push({ type: 'step/end', data: { turn, step } })
    }
    lastRole = row.role
  }
  close()
  return events
}
