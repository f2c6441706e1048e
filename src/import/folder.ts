/**
 * Importing a sessions folder (a directory picker or `<input webkitdirectory>`): find the
 * session files in the layouts the tools write, fingerprint each, and decide per file whether
 * it is new, changed or unchanged. Storage is the caller's: it passes `lookup` and `write`.
 *
 * Layouts recognized (anywhere inside the chosen folder):
 * - Pi: `sessions/--<cwd>--/<time>_<id>.jsonl`
 * - Claude Code: `projects/<project>/<session>.jsonl`, and sub-agents' own files
 *   (`agent-<id>.jsonl` beside it up to 2.0, `<session>/subagents/agent-<id>.jsonl` from 2.1):
 *   each imports as a session of its own, linked to its parent, never in the parent's place
 * - Codex: `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`
 * Any other `.jsonl` file is read and recognized by its content; other files are ignored.
 *
 * @example
 *   const reports = await importSessionFiles(files, { lookup, write }, ({ done, total }) => …)
 */
import { isSessionlineError, type SerializedError, SessionlineError } from '../schema/errors'
import type { FileImportReport, ImportFile, ImportProgressListener } from '../schema/import'
import { MAX_IMPORT_FILE_BYTES } from '../schema/limits'
import type { FileFingerprint, Provider } from '../schema/session'
import { type ParsedTranscript, parseTranscriptBlob } from './index'

export interface DiscoveredFile extends ImportFile {
  /** The format its place in the folder implies; `undefined`: recognized by content. */
  format?: Provider
}

const segmentsOf = (path: string) => path.split(/[\\/]+/).filter((s) => s !== '')

/** The provider whose layout `path` follows, `null` for a file to leave out, `undefined` for unknown. */
export function layoutFormat(path: string): Provider | null | undefined {
  const segments = segmentsOf(path)
  const name = segments.at(-1) ?? ''
  if (!name.endsWith('.jsonl')) return null
  const parent = segments.at(-2) ?? ''
  if (/^rollout-.+\.jsonl$/.test(name)) return 'codex'
  if (/^--.*--$/.test(parent)) return 'pi'
  const projects = segments.lastIndexOf('projects')
  if (projects >= 0 && projects < segments.length - 1) return 'claude'
  return undefined
}

/** The session files among `files`, each with the format its layout implies. */
export function discoverSessionFiles(files: readonly ImportFile[]): DiscoveredFile[] {
  const found: DiscoveredFile[] = []
  for (const file of files) {
    const format = layoutFormat(file.path)
    if (format === null) continue
    found.push(format === undefined ? { ...file } : { ...file, format })
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

const hex = (buffer: ArrayBuffer) =>
  Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('')

/** Size, last modification and SHA-256 of a file's bytes (Web Crypto: Node 20 and browsers). */
export async function fingerprintOf(blob: Blob, lastModified?: number): Promise<FileFingerprint> {
  const digest = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer())
  const modified = lastModified ?? (blob as Partial<File>).lastModified
  return {
    size: blob.size,
    ...(modified === undefined ? {} : { lastModified: modified }),
    sha256: hex(digest),
  }
}

export interface FolderStore {
  /** The session already imported from a file with these bytes, if any. */
  lookup(fingerprint: FileFingerprint): Promise<string | undefined> | string | undefined
  /** Stores one parsed file; says whether the session was new or replaced. */
  write(
    parsed: ParsedTranscript,
    file: { path: string; fingerprint: FileFingerprint },
  ): Promise<{ sessionId: string; status: 'imported' | 'updated' }>
}

function serialize(error: unknown): SerializedError {
  if (isSessionlineError(error)) return error.toJSON()
  const message = error instanceof Error ? error.message : String(error)
  return new SessionlineError('internal', message).toJSON()
}

/** Parses with the layout's format, falling back to detection when the file is not what its place says. */
async function parseFile(file: DiscoveredFile): Promise<ParsedTranscript> {
  if (file.format === undefined) return parseTranscriptBlob(file.file)
  try {
    return await parseTranscriptBlob(file.file, { format: file.format })
  } catch (error) {
    if (isSessionlineError(error) && error.code === 'unsupported_format')
      return parseTranscriptBlob(file.file)
    throw error
  }
}

/** Imports every session file of a folder, one at a time, reporting after each. */
export async function importSessionFiles(
  files: readonly ImportFile[],
  store: FolderStore,
  onProgress?: ImportProgressListener,
): Promise<FileImportReport[]> {
  const found = discoverSessionFiles(files)
  const reports: FileImportReport[] = []
  for (const file of found) {
    let report: FileImportReport
    let fingerprint: FileFingerprint | undefined
    try {
      // Fingerprinting reads the whole file: refuse one too large before reading a byte.
      if (file.file.size > MAX_IMPORT_FILE_BYTES) {
        throw new SessionlineError(
          'invalid_input',
          `${file.path}: the file is larger than ${MAX_IMPORT_FILE_BYTES} bytes`,
          { size: file.file.size, limit: MAX_IMPORT_FILE_BYTES },
        )
      }
      fingerprint = await fingerprintOf(file.file, file.lastModified)
      const known = await store.lookup(fingerprint)
      if (known !== undefined) {
        report = { path: file.path, status: 'unchanged', sessionId: known, fingerprint }
      } else {
        const parsed = await parseFile(file)
        const { sessionId, status } = await store.write(parsed, { path: file.path, fingerprint })
        report = {
          path: file.path,
          status,
          format: parsed.format,
          sessionId,
          fingerprint,
          ...(parsed.skipped.length > 0
            ? { skippedLines: parsed.skippedLines, skipped: parsed.skipped }
            : {}),
        }
      }
    } catch (error) {
      report = {
        path: file.path,
        status: 'failed',
        ...(fingerprint ? { fingerprint } : {}),
        error: serialize(error),
      }
    }
    reports.push(report)
    onProgress?.({ done: reports.length, total: found.length, report })
  }
  return reports
}
