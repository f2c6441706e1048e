/**
 * (10b) The chat on RxDB 17 with its free Dexie storage (`rxdb/plugins/storage-dexie`), set up
 * as its documentation recommends for production: no dev-mode plugin and no schema-validation
 * wrapper (both are for development builds), defaults otherwise (multi-instance across tabs,
 * EventReduce on). A `messages` collection indexed by `[sessionId, seq]`; each prompt an
 * `insert`, each delta an `incrementalPatch` of the reply's document (the write RxDB recommends
 * for changing a document, without conflicts); the UI renders what an RxQuery subscription of
 * the session's messages sorted by seq (`find(...).$`) delivers.
 */
import {
  createRxDatabase,
  type RxCollection,
  type RxDatabase,
  type RxDocument,
  type RxJsonSchema,
} from 'rxdb/plugins/core'
import { getRxStorageDexie } from 'rxdb/plugins/storage-dexie'
import { type PeerMessage, promptRow } from './peers-livequery'
import type { ChatPrompt, ChatReply, ChatSide, HistoryRow } from './peers-workload'
import { Latest, timeFreshRead } from './peers-workload'
import type { DexieEnv } from './raw'

const schema: RxJsonSchema<PeerMessage> = {
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    id: { type: 'string', maxLength: 100 },
    sessionId: { type: 'string', maxLength: 100 },
    seq: { type: 'number', minimum: 0, maximum: 1e12, multipleOf: 1 },
    role: { type: 'string' },
    text: { type: 'string' },
    status: { type: 'string' },
    createdAt: { type: 'number' },
  },
  required: ['id', 'sessionId', 'seq', 'role', 'text', 'status', 'createdAt'],
  indexes: [['sessionId', 'seq']],
}

type Messages = RxCollection<PeerMessage>
type ChatDb = RxDatabase<{ messages: Messages }>
type Doc = RxDocument<PeerMessage>

/** Above every seq the app writes; see `FRESH` in peers-livequery.ts (RxDB caches query results too). */
const FRESH = 1e9

export function rxdbSide(env: DexieEnv, dbName: string, sessionId: string): ChatSide {
  let db: ChatDb | undefined
  let latest = new Latest<Doc[]>()
  let stop: (() => void) | undefined
  let seq = 0
  let reads = 0
  const storage = getRxStorageDexie({ ...env })

  async function open(): Promise<ChatDb> {
    const created = await createRxDatabase<{ messages: Messages }>({ name: dbName, storage })
    await created.addCollections({ messages: { schema } })
    return created
  }
  const opened = () => {
    if (!db) throw new Error('RxDB is not open')
    return db
  }
  const query = (upTo?: number) =>
    opened().messages.find({
      selector: upTo === undefined ? { sessionId } : { sessionId, seq: { $lte: upTo } },
      sort: [{ seq: 'asc' }],
    })
  const observe = (into: Latest<Doc[]>, upTo?: number) => {
    const subscription = query(upTo).$.subscribe({ next: into.push, error: into.fail })
    return () => subscription.unsubscribe()
  }
  const last = (docs: readonly Doc[]) => docs[docs.length - 1]

  return {
    name: 'RxDB (Dexie storage)',
    async start() {
      // Any database a previous run left: opened, then removed with its storage.
      await (await open()).remove()
      db = await open()
      stop = observe(latest)
      await latest.until(() => true, 'the empty session')
    },
    async admit(prompts: readonly ChatPrompt[]) {
      const messages = opened().messages
      const t0 = performance.now()
      for (const p of prompts) {
        await messages.insert(promptRow(sessionId, ++seq, p))
      }
      const id = prompts[prompts.length - 1]?.id
      await latest.until((docs) => last(docs)?.id === id, `prompt ${id}`)
      return performance.now() - t0
    },
    async stream(reply: ChatReply) {
      const messages = opened().messages
      const t0 = performance.now()
      const doc = await messages.insert({
        id: reply.id,
        sessionId,
        seq: ++seq,
        role: 'assistant',
        text: '',
        status: 'streaming',
        createdAt: Date.now(),
      })
      let text = ''
      for (const delta of reply.deltas) {
        text += delta
        await doc.incrementalPatch({ text })
      }
      await doc.incrementalPatch({ status: 'done' })
      await latest.until((docs) => {
        const at = last(docs)
        return at?.id === reply.id && at.status === 'done' && at.text.length === reply.text.length
      }, `reply ${reply.id}`)
      return performance.now() - t0
    },
    async leave() {
      stop?.()
      stop = undefined
    },
    page: (_rep: number, rows: number) =>
      timeFreshRead<Doc[]>((into) => observe(into, FRESH + ++reads), rows),
    async coldOpen(_rep: number, rows: number) {
      stop?.()
      await db?.close()
      db = undefined
      const t0 = performance.now()
      db = await open()
      latest = new Latest<Doc[]>()
      stop = observe(latest, FRESH + ++reads)
      await latest.until((docs) => docs.length === rows, `${rows} rows`)
      return performance.now() - t0
    },
    async history(): Promise<HistoryRow[]> {
      const docs = await query().exec()
      return docs.map((d) => ({ id: d.id, role: d.role, text: d.text }))
    },
    async close() {
      stop?.()
      await db?.close()
      db = undefined
    },
  }
}
