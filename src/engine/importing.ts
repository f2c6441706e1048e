/**
 * The engine's side of importing: parse a file (text, or a Blob read in chunks), fingerprint
 * its bytes, turn its records into rows and derive the folds a replay would leave, then hand
 * the result to the store (store/imported), which only persists. A folder import walks the
 * files (import/folder) and skips the ones whose bytes were imported before.
 *
 * @example
 *   const written = await importTranscriptInto(db, { text, name: 'a.jsonl' }, Date.now)
 */
import { branching } from '../core/branching'
import { listFrom } from '../core/chunked-list'
import type { Folds } from '../core/folds'
import { historyOfImport, placeImported } from '../core/imported-tree'
import { initTranscript } from '../core/transcript'
import type { OutlineState } from '../core/turn-outline'
import { fingerprintOf, importSessionFiles } from '../import/folder'
import { type ParsedTranscript, parseTranscript, parseTranscriptBlob } from '../import/index'
import { importedOriginFacts, recordsToRows, renumberTurns, rowsOutline, rowsUsage } from '../import/to-rows'
import { parseOrThrow } from '../schema/errors'
import type { ImportedTree } from '../schema/history'
import {
  type FileImportReport,
  type ImportFile,
  ImportFilesRequest,
  type ImportProgressListener,
  ImportRequest,
} from '../schema/import'
import type { SessionMessage } from '../schema/messages'
import type { FileFingerprint } from '../schema/session'
import type { SessionlineDb } from '../store/db'
import { type ImportedWrite, importedFiles, writeImportedSession } from '../store/imported'

/**
 * The fold states of an imported session, derived from its rows alone: what a replay would
 * leave (no open turn; later native turns would continue the numbering) plus the import's
 * outline and usage. The cache calls this too when a fold's version changed, since an
 * imported session has no log to replay.
 */
export function importedFoldStates(rows: readonly SessionMessage[]): Folds {
  const outline = rowsOutline(rows)
  return {
    transcript: { ...initTranscript(), lastTurn: outline.at(-1)?.turn ?? 0 },
    turnOutline: { entries: listFrom(outline), open: undefined } satisfies OutlineState,
    usage: rowsUsage(rows),
    branching: branching.init(),
  }
}

/**
 * An imported session's rows and folds with its tree's head at `head` (docs/decisions/0037):
 * visibility and branch places by the file's rule, turns numbered again, folds derived anew.
 * `changed` lists the rows that differ from `rows`.
 */
export function importedAt(
  rows: readonly SessionMessage[],
  tree: ImportedTree,
  head: string | null,
): { rows: SessionMessage[]; changed: SessionMessage[]; folds: Folds } {
  const roles = new Map(rows.map((r) => [r.id, r.role]))
  const history = historyOfImport(tree, (id) => roles.get(id))
  const sorted = [...rows].sort((a, b) => a.seq - b.seq)
  const next = renumberTurns(placeImported(tree, history, head, sorted))
  const changed = next.filter((row, i) => row !== sorted[i])
  return { rows: next, changed, folds: importedFoldStates(next) }
}

/** Stores one parsed file (rows and folds are derived here, before the transaction opens). */
function writeParsed(
  db: SessionlineDb,
  parsed: ParsedTranscript,
  file: { name?: string; fingerprint?: FileFingerprint },
  at: number,
): Promise<ImportedWrite> {
  const stored = recordsToRows(parsed.records)
  const originFacts = importedOriginFacts(stored.session, parsed.skipped)
  return writeImportedSession(
    db,
    {
      ...stored,
      folds: importedFoldStates(stored.rows),
      originFacts,
      ...(stored.tree
        ? { tree: stored.tree, placedAt: (head) => importedAt(stored.rows, stored.tree!, head) }
        : {}),
    },
    file,
    at,
  )
}

/** Parses and stores one file given as text or a Blob (read in chunks). */
export async function importTranscriptInto(
  db: SessionlineDb,
  request: ImportRequest,
  now: () => number,
): Promise<ImportedWrite> {
  const { text, blob, name, format } = parseOrThrow(ImportRequest, request, 'importTranscript request')
  const options = format ? { format } : {}
  // A Blob encodes a string as UTF-8 itself (lone surrogates as U+FFFD, as TextEncoder does).
  const source = blob ?? new Blob([text ?? ''])
  const parsed =
    text !== undefined ? parseTranscript(text, options) : await parseTranscriptBlob(source, options)
  const fingerprint = await fingerprintOf(source)
  return writeParsed(db, parsed, { ...(name ? { name } : {}), fingerprint }, now())
}

/** The key that tells an unchanged file: its SHA-256 and size. */
const fileKey = (fp: FileFingerprint) => `${fp.sha256}:${fp.size}`

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
  const known = await importedFiles(db, fileKey)
  return importSessionFiles(
    checked,
    {
      lookup: (fp) => known.get(fileKey(fp)),
      async write(parsed, file) {
        const written = await writeParsed(
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
