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
import { ImportedTree } from '../schema/history'
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
  /** The file's history tree over `rows`, when it keeps one (docs/decisions/0037). */
  tree?: ImportedTree
  /** `rows` and `folds` with the tree's head moved to `head` (a re-import that keeps a chosen head). */
  placedAt?: (head: string | null) => { rows: SessionMessage[]; folds: Folds }
}

/** The `projections` name of an imported session's tree: one record, never a fold. */
export const IMPORTED_TREE = 'importedTree'

/** The stored tree row of an imported session. */
export function importedTreeRow(sessionId: string, tree: ImportedTree, rowCount: number): ProjectionRow {
  return { sessionId, name: IMPORTED_TREE, version: 1, throughSeq: rowCount, state: tree }
}

/**
 * Inside a transaction: the stored tree of an imported session (undefined: its file kept none,
 * or what is stored does not read as a tree, which then counts as none).
 */
export async function importedTreeOf(
  db: SessionlineDb,
  sessionId: string,
): Promise<ImportedTree | undefined> {
  const row = await db.projections.get([sessionId, IMPORTED_TREE])
  if (row === undefined || row.version !== 1) return undefined
  const parsed = ImportedTree.safeParse(row.state)
  return parsed.success ? parsed.data : undefined
}

/**
 * What a re-import shows (docs/decisions/0037): the head chosen by `switchBranch` is kept while
 * the file still names the head it named when that choice was made and the new tree holds it;
 * when the file moved on (its tool continued or switched the session), the file's head wins.
 */
export function keptHead(before: ImportedTree | undefined, next: ImportedTree): string | null | undefined {
  if (before === undefined || before.head === before.fileHead) return undefined
  if (before.fileHead !== next.fileHead) return undefined
  if (before.head !== null && !next.nodes.some((n) => n.id === before.head)) return undefined
  return before.head
}

export interface ImportedWrite {
  session: SessionInfo
  /** The session row's write counter after the import (for cache checks and peer notes). */
  rev: number
  status: 'imported' | 'updated'
}

/** The cached fold rows of an imported session. */
export function foldRows(sessionId: string, rowCount: number, folds: Folds): ProjectionRow[] {
  return FOLD_NAMES.flatMap((name) =>
    encodeState(sessionId, name, CACHED_FOLDS[name].version, rowCount, folds[name]),
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
    let { rows, folds } = stored
    let tree = stored.tree
    const before = existing ? await importedTreeOf(db, sessionId) : undefined
    const kept = tree ? keptHead(before, tree) : undefined
    if (tree && kept !== undefined && stored.placedAt) {
      ;({ rows, folds } = stored.placedAt(kept))
      tree = { ...tree, head: kept }
    }
    if (existing) {
      await Promise.all([
        db.messages.where('[sessionId+seq]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete(),
        db.projections.where('[sessionId+name]').between([sessionId, MIN_KEY], [sessionId, MAX_KEY]).delete(),
      ])
    }
    // Ids are global (core/ids): rows are added, so a row of another session is never taken
    // over, and an id an input of any session owns is refused too; either fails the whole file.
    const inputs = await db.inputs.bulkGet(rows.map((r) => r.id))
    const owned = inputs.findIndex((input) => input !== undefined)
    if (owned >= 0) {
      throw idTaken(rows[owned]!.id, { kind: 'input', sessionId: inputs[owned]!.sessionId })
    }
    const projections = foldRows(sessionId, rows.length, folds)
    if (tree) projections.push(importedTreeRow(sessionId, tree, rows.length))
    await Promise.all([addRows(db, rows), db.projections.bulkPut(projections), db.sessions.put(row)])
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
