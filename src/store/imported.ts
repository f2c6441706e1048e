/**
 * The store side of importing: an imported session's rows, cached folds and session row are
 * written (or replaced) in ONE transaction, keyed by provider + the file's session identity,
 * so importing the same file again updates the session in place and a failure writes nothing.
 * Imported sessions have no event log (docs/decisions/0005): the engine hands their folds in,
 * derived from the rows (engine/importing). This module only persists: parsing, reading Blobs,
 * hashing and walking folders happen on the engine's side.
 *
 * @example
 *   const { session, status } = await writeImportedSession(db, { ...stored, folds }, { name }, Date.now())
 */
import { CACHED_FOLDS, FOLD_NAMES, type Folds } from '../core/folds'
import { idTaken } from '../core/ids'
import { SessionlineError } from '../schema/errors'
import type { SessionMessage } from '../schema/messages'
import type { SessionRecord } from '../schema/records'
import type { FileFingerprint, ImportOrigin, SessionInfo } from '../schema/session'
import { MAX_KEY, MIN_KEY, type ProjectionRow, type SessionlineDb, type SessionRow, sessionInfo } from './db'
import { encodeState } from './projection-state'
import { addRows, inRead, inWrite } from './transactions'

/** One imported session as it is stored: its id, session record, rows and the folds derived from them. */
export interface ImportedSession {
  sessionId: string
  session: SessionRecord
  rows: readonly SessionMessage[]
  folds: Folds
  /** What the origin says besides the file: sub-agent links, lines the import left out. */
  originFacts?: Pick<ImportOrigin, 'parentSessionId' | 'agentId' | 'skipped'>
}

export interface ImportedWrite {
  session: SessionInfo
  /** The session row's write counter after the import (for cache checks and peer notes). */
  rev: number
  status: 'imported' | 'updated'
}

/** The cached fold rows of an imported session. */
function foldRows(stored: ImportedSession): ProjectionRow[] {
  return FOLD_NAMES.flatMap((name) =>
    encodeState(stored.sessionId, name, CACHED_FOLDS[name].version, stored.rows.length, stored.folds[name]),
  )
}

/**
 * Writes one imported session, replacing an earlier import of the same session in place.
 * Refuses to overwrite a native session that happens to have the same id.
 */
export async function writeImportedSession(
  db: SessionlineDb,
  stored: ImportedSession,
  file: { name?: string; fingerprint?: FileFingerprint },
  at: number,
): Promise<ImportedWrite> {
  const { sessionId, session } = stored
  return inWrite(db, async () => {
    const existing = await db.sessions.get(sessionId)
    if (existing && existing.source !== session.provider) {
      throw new SessionlineError(
        'conflict',
        `session ${JSON.stringify(sessionId)} exists and was not imported from ${session.provider}`,
        { sessionId },
      )
    }
    const origin: ImportOrigin = {
      provider: session.provider,
      key: sessionId,
      ...(file.name ? { name: file.name } : {}),
      ...(file.fingerprint ? { fingerprint: file.fingerprint } : {}),
      importedAt: at,
      ...(session.cwd ? { cwd: session.cwd } : {}),
      ...(session.startedAt === undefined ? {} : { startedAt: session.startedAt }),
      ...(session.endedAt === undefined ? {} : { endedAt: session.endedAt }),
      ...stored.originFacts,
    }
    const row: SessionRow = {
      id: sessionId,
      title: session.title,
      createdAt: existing?.createdAt ?? session.startedAt ?? at,
      updatedAt: at,
      headSeq: stored.rows.length,
      nextInputSeq: existing?.nextInputSeq ?? 1,
      source: session.provider,
      origin,
      rev: (existing?.rev ?? 0) + 1,
    }
    if (existing) {
      await Promise.all([
        db.messages.where('[sessionId+seq]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete(),
        db.projections.where('[sessionId+name]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete(),
      ])
    }
    // Ids are global (core/ids): rows are added, so a row of another session is never taken
    // over, and an id an input of any session owns is refused too; either fails the whole file.
    const inputs = await db.inputs.bulkGet(stored.rows.map((r) => r.id))
    const owned = inputs.findIndex((input) => input !== undefined)
    if (owned >= 0) {
      throw idTaken(stored.rows[owned]!.id, { kind: 'input', sessionId: inputs[owned]!.sessionId })
    }
    await Promise.all([
      addRows(db, stored.rows),
      db.projections.bulkPut(foldRows(stored)),
      db.sessions.put(row),
    ])
    return { session: sessionInfo(row), rev: row.rev, status: existing ? 'updated' : 'imported' }
  })
}

/** Imported sessions by the fingerprint key of the file they came from (`keyOf` names the key). */
export async function importedFiles(
  db: SessionlineDb,
  keyOf: (fingerprint: FileFingerprint) => string,
): Promise<Map<string, string>> {
  const rows = await inRead(db, () =>
    db.sessions.filter((row) => row.origin?.fingerprint !== undefined).toArray(),
  )
  const known = new Map<string, string>()
  for (const row of rows) known.set(keyOf(row.origin!.fingerprint!), row.id)
  return known
}
