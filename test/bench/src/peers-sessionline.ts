/**
 * (10) sessionline's side of the chat, through its public API as an app uses it: the engine in
 * the bench's Web Worker, the page holding a `connect()` client and a `SessionView` (what the UI
 * renders from). Prompts are `view.admit`ed as steers (durable receipts, shown pending); a reply
 * is what the runner writes: `promote('settled')` opens a turn with the pending prompts, then
 * one `append` per delta, then the closing events. Every call crosses Comlink, as a page-side
 * writer's would (the runner, in the worker, would not pay that).
 */
import type { SessionlineClient, SessionView, TimelineRow, TimelineSnapshot } from '../../../src/index'
import type { SessionMessage } from '../../../src/schema/messages'
import type { ChatPrompt, ChatReply, ChatSide, HistoryRow } from './peers-workload'
import { Latest } from './peers-workload'

/** A client of an engine started for the call; `close` ends both (untimed). */
export interface EngineLink {
  client: SessionlineClient
  close(): Promise<void>
}

/** Starts a new engine on the peers' database (emptied first when `fresh`) and connects to it. */
export type ConnectEngine = (fresh: boolean) => Promise<EngineLink>

const textOf = (message: SessionMessage) =>
  message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')

const messages = (rows: readonly TimelineRow[]) =>
  rows.filter((row): row is Extract<TimelineRow, { kind: 'message' }> => row.kind === 'message')

/** Follows a view's snapshots into a `Latest`. */
function follow(view: SessionView): { latest: Latest<TimelineSnapshot>; stop: () => void } {
  const latest = new Latest<TimelineSnapshot>()
  const push = () => {
    const snapshot = view.getSnapshot()
    if (snapshot.status === 'error') latest.fail(snapshot.error ?? new Error('view error'))
    latest.push(snapshot)
  }
  const unsubscribe = view.subscribe(push)
  push()
  return { latest, stop: unsubscribe }
}

export function sessionlineSide(connectEngine: ConnectEngine, sessionId: string): ChatSide {
  let link: EngineLink | undefined
  let view: SessionView | undefined
  let latest = new Latest<TimelineSnapshot>()
  let stop: (() => void) | undefined
  let turn = 0

  const client = () => {
    if (!link) throw new Error('sessionline is not connected')
    return link.client
  }
  const openView = () => {
    view = client().open(sessionId)
    const followed = follow(view)
    latest = followed.latest
    stop = followed.stop
  }
  const leave = () => {
    stop?.()
    view?.dispose()
    stop = undefined
    view = undefined
  }
  const last = (s: TimelineSnapshot) => s.rows[s.rows.length - 1]

  return {
    name: 'sessionline',
    async start() {
      link = await connectEngine(true)
      await client().createSession({ id: sessionId })
      openView()
      await latest.until((s) => s.status === 'ready', 'the empty session')
    },
    async admit(prompts: readonly ChatPrompt[]) {
      const v = view
      if (!v) throw new Error('no view')
      const t0 = performance.now()
      for (const p of prompts) await v.admit(p.text, { id: p.id })
      const id = prompts[prompts.length - 1]?.id
      await latest.until((s) => {
        const row = last(s)
        return row?.kind === 'input' && row.input.id === id && row.input.state === 'pending'
      }, `prompt ${id}`)
      return performance.now() - t0
    },
    async stream(reply: ChatReply) {
      const c = client()
      const messageId = reply.id
      const t0 = performance.now()
      turn++
      await c.promote(sessionId, 'settled')
      await c.append(sessionId, [
        { type: 'step/start', data: { turn, step: 1 } },
        { type: 'assistant/start', data: { messageId, turn, step: 1 } },
      ])
      for (const text of reply.deltas) {
        await c.append(sessionId, [{ type: 'assistant/delta', data: { messageId, text } }])
      }
      await c.append(sessionId, [
        { type: 'assistant/end', data: { messageId, finish: 'stop' } },
        { type: 'step/end', data: { turn, step: 1 } },
        { type: 'turn/end', data: { turn, reason: 'completed' } },
      ])
      await latest.until((s) => {
        const row = last(s)
        return (
          row?.kind === 'message' &&
          row.message.id === messageId &&
          row.message.status === 'complete' &&
          textOf(row.message).length === reply.text.length
        )
      }, `reply ${messageId}`)
      return performance.now() - t0
    },
    async leave() {
      leave()
    },
    async page(_rep: number, rows: number) {
      const t0 = performance.now()
      const fresh = client().open(sessionId)
      const { latest: seen, stop: unfollow } = follow(fresh)
      // Asked in the task that opened the view, as an app that shows the whole history asks:
      // the first read then brings every row (one round trip, not the tail and then the rest).
      await fresh.loadThrough(1)
      await seen.until((s) => !s.hasOlder && messages(s.rows).length === rows, `${rows} rows`)
      const ms = performance.now() - t0
      unfollow()
      fresh.dispose()
      return ms
    },
    async coldOpen(_rep: number, rows: number) {
      leave()
      await link?.close()
      link = undefined
      const t0 = performance.now()
      link = await connectEngine(false)
      openView()
      const tail = Math.min(rows, 50)
      await latest.until(
        (s) => s.status === 'ready' && messages(s.rows).length === tail,
        `the tail of ${tail}`,
      )
      return performance.now() - t0
    },
    async history(): Promise<HistoryRow[]> {
      const page = await client().loadThrough(sessionId, { seq: 1 })
      return page.messages.map((m) => ({ id: m.id, role: m.role as HistoryRow['role'], text: textOf(m) }))
    },
    async close() {
      leave()
      await link?.close()
      link = undefined
    },
  }
}
