/**
 * (10a) The chat as apps build it today on Dexie alone, the dexie-react-hooks way: a `messages`
 * table with a `[sessionId+seq]` index, each prompt a `put`, each delta an `update` of the
 * assistant row, and the UI rendering what `liveQuery` (the observable `useLiveQuery`
 * subscribes to) delivers for the session's messages in order. Dexie's defaults throughout, its
 * liveQuery cache included (it applies a write to the cached result instead of reading again).
 */
import Dexie, { liveQuery, type Table } from 'dexie'
import type { ChatPrompt, ChatReply, ChatSide, HistoryRow } from './peers-workload'
import { Latest, timeFreshRead } from './peers-workload'
import type { DexieEnv } from './raw'

/** A message row as a Dexie chat app keeps it. */
export interface PeerMessage {
  id: string
  sessionId: string
  /** The app's own counter: order within the session. */
  seq: number
  role: 'user' | 'assistant'
  text: string
  status: 'streaming' | 'done'
  createdAt: number
}

/** A prompt as both peers store it: the app's own row, written once. */
export const promptRow = (sessionId: string, seq: number, prompt: ChatPrompt): PeerMessage => ({
  id: prompt.id,
  sessionId,
  seq,
  role: 'user',
  text: prompt.text,
  status: 'done',
  createdAt: Date.now(),
})

type ChatDb = Dexie & { messages: Table<PeerMessage, string> }

function openChatDb(name: string, env: DexieEnv): ChatDb {
  const db = new Dexie(name, { ...env }) as ChatDb
  db.version(1).stores({ messages: 'id, [sessionId+seq]' })
  return db
}

/**
 * The session's messages in order. `upTo` bounds the range above every seq the app writes: a
 * read with a bound no earlier read used is new to Dexie's result cache (which serves any range
 * inside one still cached, and keeps an entry 3 s after its last observer left), so a timed read
 * reads IndexedDB the way the first observer after a page load does.
 */
const ordered = (db: ChatDb, sessionId: string, upTo: number = Dexie.maxKey as unknown as number) =>
  db.messages
    .where('[sessionId+seq]')
    .between([sessionId, Dexie.minKey], [sessionId, upTo], true, true)
    .toArray()

const FRESH = 1e9

export function liveQuerySide(env: DexieEnv, dbName: string, sessionId: string): ChatSide {
  let db = openChatDb(dbName, env)
  let latest = new Latest<PeerMessage[]>()
  let stop: (() => void) | undefined
  let seq = 0
  let reads = 0

  const observe = (into: Latest<PeerMessage[]>, upTo?: number) => {
    const subscription = liveQuery(() => ordered(db, sessionId, upTo)).subscribe({
      next: into.push,
      error: into.fail,
    })
    return () => subscription.unsubscribe()
  }
  const last = (rows: readonly PeerMessage[]) => rows[rows.length - 1]

  return {
    name: 'Dexie liveQuery',
    async start() {
      await db.delete()
      db = openChatDb(dbName, env)
      await db.open()
      stop = observe(latest)
      await latest.until(() => true, 'the empty session')
    },
    async admit(prompts: readonly ChatPrompt[]) {
      const t0 = performance.now()
      for (const p of prompts) {
        await db.messages.put(promptRow(sessionId, ++seq, p))
      }
      const id = prompts[prompts.length - 1]?.id
      await latest.until((rows) => last(rows)?.id === id, `prompt ${id}`)
      return performance.now() - t0
    },
    async stream(reply: ChatReply) {
      const t0 = performance.now()
      const row: PeerMessage = {
        id: reply.id,
        sessionId,
        seq: ++seq,
        role: 'assistant',
        text: '',
        status: 'streaming',
        createdAt: Date.now(),
      }
      await db.messages.put(row)
      let text = ''
      for (const delta of reply.deltas) {
        text += delta
        await db.messages.update(reply.id, { text })
      }
      await db.messages.update(reply.id, { status: 'done' })
      await latest.until((rows) => {
        const at = last(rows)
        return at?.id === reply.id && at.status === 'done' && at.text.length === reply.text.length
      }, `reply ${reply.id}`)
      return performance.now() - t0
    },
    async leave() {
      stop?.()
      stop = undefined
    },
    page: (_rep: number, rows: number) =>
      timeFreshRead<PeerMessage[]>((into) => observe(into, FRESH + ++reads), rows),
    async coldOpen(_rep: number, rows: number) {
      stop?.()
      db.close()
      const t0 = performance.now()
      db = openChatDb(dbName, env)
      latest = new Latest<PeerMessage[]>()
      stop = observe(latest, FRESH + ++reads)
      await latest.until((r) => r.length === rows, `${rows} rows`)
      return performance.now() - t0
    },
    async history(): Promise<HistoryRow[]> {
      return (await ordered(db, sessionId)).map(({ id, role, text }) => ({ id, role, text }))
    },
    async close() {
      stop?.()
      db.close()
    },
  }
}
