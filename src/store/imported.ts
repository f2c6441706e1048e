/**
 * The store side of importing: an imported session's rows, cached folds and session row are
 * written (or replaced) in ONE transaction, keyed by provider + the file's session identity,
 * so importing the same file again updates the session in place and a failure writes nothing.
 * Imported sessions have no event log (docs/decisions/0005): their folds are cached here as
 * the engine would have them after a replay, with the outline and usage of the import.
 *
 * @example
 *   const { session, status } = await importTranscriptInto(db, { text, name: 'a.jsonl' }, Date.now)
 */

import { listFrom } from '../core/chunked-list'
import { initTranscript, transcript } from '../core/transcript'
import { type OutlineState, turnOutline } from '../core/turn-outline'
import { usage } from '../core/usage'
import { fingerprintOf, importSessionFiles } from '../import/folder'
import { type ParsedTranscript, parseTranscript, parseTranscriptBlob } from '../import/index'
import { recordsToRows, rowsOutline, rowsUsage, type StoredTranscript } from '../import/to-rows'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import {
  type FileImportReport,
  type ImportFile,
  ImportFilesRequest,
  type ImportProgressListener,
  ImportRequest,
} from '../schema/import'
import type { SessionMessage } from '../schema/messages'
import type { FileFingerprint, ImportOrigin, SessionInfo } from '../schema/session'
import { MAX_KEY, MIN_KEY, type ProjectionRow, type SessionlineDb, type SessionRow, sessionInfo } from './db'
import { encodeState } from './projection-state'
import { inRead, inWrite } from './transactions'

export interface ImportedWrite {
  session: SessionInfo
  /** The session row's write counter after the import (for cache checks and peer notes). */
  rev: number
  status: 'imported' | 'updated'
}

/**
 * The fold states of an imported session, derived from its rows alone: what a replay would
 * leave (no open turn; later native turns would continue the numbering) plus the import's
 * outline and usage. The engine calls this too when a fold's version changed, since an
 * imported session has no log to replay.
 */
export function importedFoldStates(rows: readonly SessionMessage[]) {
  const outline = rowsOutline(rows)
  return {
    transcript: { ...initTranscript(), lastTurn: outline.at(-1)?.turn ?? 0 },
    turnOutline: { entries: listFrom(outline), open: undefined } satisfies OutlineState,
    usage: rowsUsage(rows),
  }
}

/** The cached fold rows of an imported session. */
function foldRows(stored: StoredTranscript): ProjectionRow[] {
  const states = importedFoldStates(stored.rows)
  const versions = { transcript: transcript.version, turnOutline: turnOutline.version, usage: usage.version }
  return (Object.keys(states) as (keyof typeof states)[]).flatMap((name) =>
    encodeState(stored.sessionId, name, versions[name], stored.rows.length, states[name]),
  )
}

/**
 * Writes one parsed file as an imported session, replacing an earlier import of the same
 * session in place. Refuses to overwrite a native session that happens to have the same id.
 */
export async function writeImportedSession(
  db: SessionlineDb,
  parsed: ParsedTranscript,
  file: { name?: string; fingerprint?: FileFingerprint },
  at: number,
): Promise<ImportedWrite> {
  const stored = recordsToRows(parsed.records) // pure, before the transaction opens
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
    await Promise.all([
      db.messages.bulkPut(stored.rows),
      db.projections.bulkPut(foldRows(stored)),
      db.sessions.put(row),
    ])
    return { session: sessionInfo(row), rev: row.rev, status: existing ? 'updated' : 'imported' }
  })
}

const encoder = new TextEncoder()

/** Parses and stores one file given as text or a Blob (read in chunks). */
export async function importTranscriptInto(
  db: SessionlineDb,
  request: ImportRequest,
  now: () => number,
): Promise<ImportedWrite> {
  const { text, blob, name, format } = parseOrThrow(ImportRequest, request, 'importTranscript request')
  const options = format ? { format } : {}
  const source = blob ?? new Blob([encoder.encode(text ?? '')])
  const parsed =
    text !== undefined ? parseTranscript(text, options) : await parseTranscriptBlob(source, options)
  const fingerprint = await fingerprintOf(source)
  return writeImportedSession(db, parsed, { ...(name ? { name } : {}), fingerprint }, now())
}

const fileKey = (fp: FileFingerprint) => `${fp.sha256}:${fp.size}`

/** Imported sessions by the SHA-256 and size of the file they came from (`fileKey`). */
async function knownFiles(db: SessionlineDb): Promise<Map<string, string>> {
  const rows = await inRead(db, () =>
    db.sessions.filter((row) => row.origin?.fingerprint !== undefined).toArray(),
  )
  const known = new Map<string, string>()
  for (const row of rows) known.set(fileKey(row.origin!.fingerprint!), row.id)
  return known
}

/** Imports a folder's session files, one transaction per file; see `importSessionFiles`. */
export async function importFilesInto(
  db: SessionlineDb,
  files: readonly ImportFile[],
  options: {
    now: () => number
    onProgress?: ImportProgressListener
    onWritten?: (write: ImportedWrite) => void
  },
): Promise<FileImportReport[]> {
  const checked = parseOrThrow(ImportFilesRequest, files, 'importFiles request')
  const known = await knownFiles(db)
  return importSessionFiles(
    checked,
    {
      lookup: (fp) => known.get(fileKey(fp)),
      async write(parsed, file) {
        const written = await writeImportedSession(
          db,
          parsed,
          { name: file.path, fingerprint: file.fingerprint },
          options.now(),
        )
        known.set(fileKey(file.fingerprint), written.session.id)
        options.onWritten?.(written)
        return { sessionId: written.session.id, status: written.status }
      },
    },
    options.onProgress,
  )
}
