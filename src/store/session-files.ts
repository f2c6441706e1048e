/**
 * The store side of exporting and importing one whole session (docs/decisions/0032): everything
 * of it read in one transaction, and written back in one, where no row of it may exist yet.
 * Encoding, hashing and folding happen on the engine's side, outside these transactions.
 */
import { type IdOwner, idTaken } from '../core/ids'
import { SessionlineError } from '../schema/errors'
import type { StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionInfo } from '../schema/session'
import { type PreparedAttachment, storeAttachments } from './attachments'
import { type AttachmentRow, MAX_KEY, MIN_KEY, type SessionlineDb, type SessionRow } from './db'
import { answerRead, eventsBetween, idOwners, inWrite } from './transactions'

/** One session as stored, whole. */
export interface StoredSession {
  row: SessionRow
  events: StoredEvent[]
  inputs: InputReceipt[]
  /**
   * The stored rows of a session that has no log (an imported one); none for a native session,
   * whose rows are its log folded (and whose stored rows may lag it: docs/decisions/0021).
   */
  rows: SessionMessage[]
  /** The bytes it references, sorted by id. */
  attachments: AttachmentRow[]
}

const ofSession = (sessionId: string) => [
  [sessionId, MIN_KEY],
  [sessionId, MAX_KEY],
]

/**
 * Reads every stored thing of session `sessionId` in one readonly transaction (the rows only of
 * a session without a log); undefined if there is no such session.
 */
export function readWholeSession(db: SessionlineDb, sessionId: string): Promise<StoredSession | undefined> {
  const tables = [db.sessions, db.events, db.inputs, db.messages, db.attachments, db.attachmentRefs]
  return answerRead(db, tables, async () => {
    const [lower, upper] = ofSession(sessionId) as [[string, unknown], [string, unknown]]
    const [row, inputs, refs] = await Promise.all([
      db.sessions.get(sessionId),
      db.inputs.where('[sessionId+seq]').between(lower, upper).toArray(),
      db.attachmentRefs.where('[sessionId+attachmentId]').between(lower, upper).toArray(),
    ])
    if (!row) return undefined
    // The head bounds the log in this transaction: its windows are read several at a time.
    const events = await eventsBetween(db, sessionId, 0, row.headSeq)
    const rows =
      row.source === 'native'
        ? []
        : await db.messages.where('[sessionId+seq]').between(lower, upper).toArray()
    const ids = refs.map((r) => r.attachmentId).sort()
    const found = await db.attachments.bulkGet(ids)
    const attachments = found.filter((a): a is AttachmentRow => a !== undefined)
    return { row, events, inputs, rows, attachments }
  })
}

/** A whole session to store where it does not exist yet. */
export interface SessionToWrite {
  session: SessionInfo
  events: readonly StoredEvent[]
  inputs: readonly InputReceipt[]
  rows: readonly SessionMessage[]
  attachments: readonly PreparedAttachment[]
  /** Stores the session's folds in the running transaction (the engine's cache knows how). */
  putFolds: () => Promise<unknown> | undefined
}

/**
 * Writes a whole session in one transaction. A session of that id, or an input or row id some
 * other session owns, is a `conflict` and nothing is written.
 */
export function writeWholeSession(db: SessionlineDb, write: SessionToWrite): Promise<SessionRow> {
  const { session } = write
  return inWrite(db, async () => {
    const ids = [...new Set([...write.inputs.map((r) => r.id), ...write.rows.map((r) => r.id)])]
    const [existing, owners] = await Promise.all([db.sessions.get(session.id), idOwners(db, ids)])
    if (existing)
      throw new SessionlineError('conflict', `a session ${JSON.stringify(session.id)} already exists`, {
        sessionId: session.id,
      })
    const taken = owners.findIndex((o: IdOwner | undefined) => o !== undefined)
    if (taken >= 0) throw idTaken(ids[taken] as string, owners[taken] as IdOwner)
    const row: SessionRow = { ...session, rev: 1 }
    await Promise.all([
      db.sessions.add(row),
      write.events.length > 0 ? db.events.bulkAdd([...write.events]) : undefined,
      write.inputs.length > 0 ? db.inputs.bulkAdd([...write.inputs]) : undefined,
      write.rows.length > 0 ? db.messages.bulkAdd([...write.rows]) : undefined,
      storeAttachments(db, session.id, write.attachments),
      write.putFolds(),
    ])
    return row
  })
}
