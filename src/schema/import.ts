/**
 * Requests and reports of importing provider session files into the engine.
 *
 * @example
 *   await engine.importTranscript({ text, name: 'session.jsonl' })
 *   await engine.importFiles([{ file, path: 'sessions/2026/01/02/rollout-….jsonl' }], onProgress)
 */
import { z } from 'zod'
import { SerializedError } from './errors'
import { MAX_IMPORT_FILE_BYTES, MAX_IMPORT_FILES, MAX_PATH_LENGTH } from './limits'
import { FileFingerprint, Provider } from './session'

const isBlob = (value: unknown): value is Blob => typeof Blob !== 'undefined' && value instanceof Blob
const tooLarge = `the file is larger than ${MAX_IMPORT_FILE_BYTES} bytes`
const Path = z.string().max(MAX_PATH_LENGTH, `path is longer than ${MAX_PATH_LENGTH} characters`)
const FileBlob = z
  .custom<Blob>(isBlob, 'expected a Blob or File')
  .refine((blob) => blob.size <= MAX_IMPORT_FILE_BYTES, tooLarge)

/** One session file: its text, or a `Blob`/`File` read in chunks. Exactly one of the two. */
export const ImportRequest = z
  .strictObject({
    text: z.string().max(MAX_IMPORT_FILE_BYTES, tooLarge).optional(),
    blob: FileBlob.optional(),
    /** A file name or path, kept as the session's origin name. */
    name: Path.optional(),
    /** Skips format detection. */
    format: Provider.optional(),
  })
  .refine((r) => (r.text === undefined) !== (r.blob === undefined), {
    message: 'give exactly one of text or blob',
    path: ['text'],
  })
export type ImportRequest = z.input<typeof ImportRequest>

/** One file of a folder import; `path` is its path inside the folder (`webkitRelativePath`). */
export const ImportFile = z.strictObject({
  /** Over MAX_IMPORT_FILE_BYTES: that file's report says `failed`, the others go on. */
  file: z.custom<Blob>(isBlob, 'expected a Blob or File'),
  path: Path,
  lastModified: z.number().optional(),
})
export type ImportFile = z.infer<typeof ImportFile>
export const ImportFilesRequest = z
  .array(ImportFile)
  .max(MAX_IMPORT_FILES, `more than ${MAX_IMPORT_FILES} files in one import`)

export const FileImportStatus = z.enum(['imported', 'updated', 'unchanged', 'failed'])
export type FileImportStatus = z.infer<typeof FileImportStatus>

/** What became of one file. */
export const FileImportReport = z.strictObject({
  path: z.string(),
  status: FileImportStatus,
  format: Provider.optional(),
  sessionId: z.string().optional(),
  fingerprint: FileFingerprint.optional(),
  /** Lines skipped as unreadable (malformed JSON, over the line limit). */
  skippedLines: z.number().int().nonnegative().optional(),
  error: SerializedError.optional(),
})
export type FileImportReport = z.infer<typeof FileImportReport>

/** Progress of a folder import, reported after each file. */
export interface ImportProgress {
  done: number
  total: number
  report: FileImportReport
}
export type ImportProgressListener = (progress: ImportProgress) => void
