/**
 * The baseline: plain Dexie doing the writes and reads sessionline does, on the same tables and
 * keys (docs/architecture.md §3), declared here on its own so the baseline never moves with the engine.
 * Each function is the least a hand-written app would do for the same durable result; none
 * validates, folds or notifies (rows come ready-made from the fixtures).
 */
import Dexie, { type Table } from 'dexie'
import type { StoredEvent } from '../../../src/schema/events'
import type { InputReceipt } from '../../../src/schema/inputs'
import type { SessionMessage } from '../../../src/schema/messages'

export interface RawSession {
  id: string
  title: string
  createdAt: number
  updatedAt: number
  headSeq: number
  nextInputSeq: number
}

export type RawDb = Dexie & {
  sessions: Table<RawSession, string>
  events: Table<StoredEvent, [string, number]>
  inputs: Table<InputReceipt, string>
  messages: Table<SessionMessage, string>
  projections: Table<{ sessionId: string; name: string; state: unknown }, [string, string]>
}

/** Where Dexie finds IndexedDB (Node passes fake-indexeddb's). */
export interface DexieEnv {
  indexedDB?: IDBFactory
  IDBKeyRange?: typeof IDBKeyRange
}

export function openRaw(name: string, env: DexieEnv = {}): RawDb {
  // Dexie's liveQuery cache is off, as in sessionline's own database: it only costs time here.
  // Only keys that are set: Dexie takes an explicit `indexedDB: undefined` literally.
  const db = new Dexie(name, { ...env, cache: 'disabled' }) as RawDb
  db.version(1).stores({
    sessions: 'id',
    events: '[sessionId+seq]',
    inputs: 'id, [sessionId+seq]',
    messages: 'id, [sessionId+seq]',
    projections: '[sessionId+name]',
  })
  return db
}

/** Deletes any database of that name, then opens it empty. */
export async function freshRaw(name: string, env: DexieEnv = {}): Promise<RawDb> {
  const db = openRaw(name, env)
  await db.delete()
  await db.open()
  return db
}

export async function createRawSession(db: RawDb, id: string, at: number): Promise<RawSession> {
  const session: RawSession = { id, title: '', createdAt: at, updatedAt: at, headSeq: 1, nextInputSeq: 1 }
  await db.transaction('rw', db.sessions, db.events, async () => {
    await db.sessions.put(session)
    await db.events.add({ type: 'session/created', data: { title: '' }, sessionId: id, seq: 1, at })
  })
  return session
}

export function receipt(sessionId: string, id: string, seq: number, text: string, at: number): InputReceipt {
  return { id, sessionId, seq, delivery: 'steer', text, status: 'pending', admittedAt: at, revision: 0 }
}

/** (1) the floor: one put in its own transaction. */
export const putReceipt = (db: RawDb, r: InputReceipt) => db.inputs.put(r)

/** (1b) what a durable, idempotent admit needs at least: look the id up, allocate the seq in the transaction. */
export function admitLikeEngine(db: RawDb, sessionId: string, id: string, text: string, at: number) {
  return db.transaction('rw', db.sessions, db.inputs, async () => {
    const [existing, session] = await Promise.all([db.inputs.get(id), db.sessions.get(sessionId)])
    if (existing) return existing
    if (!session) throw new Error(`no session ${sessionId}`)
    const r = receipt(sessionId, id, session.nextInputSeq, text, at)
    await Promise.all([
      db.inputs.put(r),
      db.sessions.put({ ...session, nextInputSeq: r.seq + 1, updatedAt: at }),
    ])
    return r
  })
}

/**
 * (1c) the same requests as an admit the engine guessed from its cache, issued at once as it
 * issues them: read the session row and whether a row owns the id, add the receipt (an id taken
 * would fail the add), write the session row; three tables, one round trip. The floor of that shape.
 */
export function admitAtOnce(db: RawDb, session: RawSession, id: string, text: string, at: number) {
  return db.transaction('rw', db.sessions, db.inputs, db.messages, async () => {
    const r = receipt(session.id, id, session.nextInputSeq, text, at)
    session.nextInputSeq++
    await Promise.all([
      db.sessions.get(session.id),
      db.messages.get(id),
      db.inputs.add(r),
      db.sessions.put({ ...session, updatedAt: at }),
    ])
    return r
  })
}

/** (2) one append: the events and the rows they touched, and the session's head, in one transaction. */
export function appendBatch(
  db: RawDb,
  sessionId: string,
  events: StoredEvent[],
  rows: SessionMessage[],
  at: number,
) {
  return db.transaction('rw', db.sessions, db.events, db.messages, async () => {
    const session = await db.sessions.get(sessionId)
    if (!session) throw new Error(`no session ${sessionId}`)
    await Promise.all([
      db.events.bulkAdd(events),
      db.messages.bulkPut(rows),
      db.sessions.put({ ...session, headSeq: events[events.length - 1]!.seq, updatedAt: at }),
    ])
  })
}

/**
 * (3) one promotion: read the session and the receipt, write `turn/start` + `user/message`,
 * the user row and the promoted receipt, and move the head, in one transaction.
 */
export function promoteBatch(
  db: RawDb,
  sessionId: string,
  inputId: string,
  events: StoredEvent[],
  rows: SessionMessage[],
  at: number,
) {
  return db.transaction('rw', [db.sessions, db.inputs, db.events, db.messages], async () => {
    const [session, input] = await Promise.all([db.sessions.get(sessionId), db.inputs.get(inputId)])
    if (!session || !input) throw new Error(`no session ${sessionId} or input ${inputId}`)
    const last = events[events.length - 1]!.seq
    await Promise.all([
      db.events.bulkAdd(events),
      db.messages.bulkPut(rows),
      db.inputs.put({ ...input, status: 'promoted', promotedSeq: last, updatedAt: at }),
      db.sessions.put({ ...session, headSeq: last, updatedAt: at }),
    ])
  })
}

/** The newest `limit` rows below `beforeSeq` (default: all), ascending by seq. */
export async function rowsBelow(db: RawDb, sessionId: string, limit: number, beforeSeq?: number) {
  const newestFirst = await db.messages
    .where('[sessionId+seq]')
    .between([sessionId, Dexie.minKey], [sessionId, beforeSeq ?? Dexie.maxKey], true, false)
    .reverse()
    .limit(limit)
    .toArray()
  return newestFirst.reverse()
}

/** (5) page back in `pageSize` steps, one read transaction per page, until a row at or below `seq` is loaded. */
export async function pageBackThrough(db: RawDb, sessionId: string, seq: number, pageSize: number) {
  let loaded: SessionMessage[] = []
  let before: number | undefined
  for (;;) {
    const page = await rowsBelow(db, sessionId, pageSize, before)
    if (page.length === 0) return loaded
    loaded = [...page, ...loaded]
    before = page[0]!.seq
    if (before <= seq) return loaded
  }
}
