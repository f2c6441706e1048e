/**
 * Exporting a session as a file and importing a `sessionline` export back (docs/architecture.md §11,
 * docs/decisions/0032). What happens outside transactions lives here: reading Blobs, base64,
 * hashing, folding the log; the store reads and writes the session whole (store/session-files).
 *
 * @example
 *   const blob = await exportSessionFrom(db, 's1', 'sessionline')
 *   const [info] = await importSessionline(db, new Uint8Array(await blob.arrayBuffer()), putFolds)
 */
import { fromBase64, toBase64 } from '../core/base64'
import { type Folds, foldCheckedEvents, foldEvents, initFolds } from '../core/folds'
import { placeRows, replayTree } from '../core/history-tree'
import { renderMarkdown } from '../core/markdown-export'
import { utf8Bytes } from '../core/utf8'
import { detectExport } from '../import/detect'
import {
  type ExportedAttachment,
  parseSessionlineBody,
  type SessionlineContent,
  sessionlineBody,
  sessionlineHeader,
  splitSessionline,
} from '../import/sessionline'
import { SessionlineError } from '../schema/errors'
import { MAX_IMPORT_FILE_BYTES } from '../schema/limits'
import type { ExportFormat } from '../schema/portability'
import type { SessionInfo } from '../schema/session'
import type { PreparedAttachment } from '../store/attachments'
import { type SessionlineDb, type SessionRow, sessionInfo } from '../store/db'
import { readWholeSession, type SessionToWrite, writeWholeSession } from '../store/session-files'
import { inWrite } from '../store/transactions'
import { sha256Hex } from './attachments'
import { currentRows } from './cache/load'
import { notFound } from './session-cache'

/** The session as a file of `format`. */
export async function exportSessionFrom(
  db: SessionlineDb,
  sessionId: string,
  format: ExportFormat,
): Promise<Blob> {
  const stored = await readWholeSession(db, sessionId)
  if (!stored) throw notFound(sessionId)
  const native = stored.row.source === 'native'
  if (format === 'markdown') {
    // A native session's rows are its log folded (never a lagging copy); an imported one has only rows.
    const rows = native
      ? placeRows(foldEvents(initFolds(), stored.events).rows, replayTree(stored.events))
      : await currentRows(db, stored.row, stored.rows)
    return new Blob([renderMarkdown(stored.row, rows)], { type: 'text/markdown' })
  }
  const attachments = await Promise.all(
    stored.attachments.map(
      async (a): Promise<ExportedAttachment> => ({
        id: a.id,
        size: a.size,
        mediaType: a.data.type || 'application/octet-stream',
        data: toBase64(new Uint8Array(await a.data.arrayBuffer())),
      }),
    ),
  )
  const content: SessionlineContent = {
    session: sessionInfo(stored.row),
    events: stored.events,
    inputs: stored.inputs,
    rows: native ? [] : stored.rows,
    attachments,
  }
  const body = utf8Bytes(sessionlineBody(content))
  const lines = 1 + content.events.length + content.inputs.length + content.rows.length + attachments.length
  const header = sessionlineHeader(sessionId, await sha256Hex(body), lines)
  return new Blob([header, body], { type: 'application/jsonl' })
}

const invalid = (message: string, details?: Record<string, unknown>) =>
  new SessionlineError('invalid_input', `sessionline import: ${message}`, details)

/**
 * Stores the sessions a `sessionline` file holds, as they were: same ids, events, receipts, rows
 * and attachments. A file is one export or several back to back (docs/decisions/0032, amended:
 * "export all" concatenates them); each header's `lines` says where its export ends. A hash that
 * does not match, a line that does not parse, a log that does not fold or bytes that are not what
 * their id says are `invalid_input`; a session that exists (or comes twice) is a `conflict`.
 * All or nothing: every session is written in one transaction, none on any failure. Answers the
 * sessions in file order.
 */
export async function importSessionline(
  db: SessionlineDb,
  bytes: Uint8Array,
  putFolds: (sessionId: string, throughSeq: number, folds: Folds) => Promise<unknown> | undefined,
): Promise<SessionInfo[]> {
  const writes: SessionToWrite[] = []
  for (const part of splitExports(bytes)) writes.push(await checkedExport(part, putFolds))
  const rows = await inWrite(db, async () => {
    const written: SessionRow[] = []
    for (const write of writes) written.push(await writeWholeSession(db, write))
    return written
  })
  return rows.map(sessionInfo)
}

/**
 * The exports of a file, each from its header through its last line. Where a header's line count
 * runs past the end, the rest of the file is its export: its hash then refuses it as truncated.
 */
function splitExports(bytes: Uint8Array): Uint8Array[] {
  const parts: Uint8Array[] = []
  let start = 0
  while (start < bytes.length) {
    const newline = bytes.indexOf(10, start)
    if (newline < 0) throw invalid('the file ends inside its header (truncated?)')
    const { header } = splitSessionline(decodeUtf8(bytes.subarray(start, newline + 1)))
    let end = newline + 1
    for (let line = 0; line < header.lines && end < bytes.length; line++) {
      const next = bytes.indexOf(10, end)
      end = next < 0 ? bytes.length : next + 1
    }
    parts.push(bytes.subarray(start, end))
    start = end
  }
  if (parts.length === 0) throw invalid('the file is empty')
  return parts
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw invalid('the file is not UTF-8 text')
  }
}

/** One export checked whole (hash, lines, log, bytes) and made ready to write. */
async function checkedExport(
  bytes: Uint8Array,
  putFolds: (sessionId: string, throughSeq: number, folds: Folds) => Promise<unknown> | undefined,
): Promise<SessionToWrite> {
  const newline = bytes.indexOf(10)
  const bodyBytes = bytes.subarray(newline + 1)
  const { header } = splitSessionline(decodeUtf8(bytes.subarray(0, newline + 1)))
  if ((await sha256Hex(bodyBytes)) !== header.sha256)
    throw invalid('the content does not match the hash in its header (truncated or changed)')
  const content = parseSessionlineBody(header, decodeUtf8(bodyBytes))
  const attachments = await Promise.all(content.attachments.map(decodeAttachment))
  const native = content.session.source === 'native'
  if (native && content.rows.length > 0) throw invalid('a native session carries rows; its log makes them')
  // A native session's rows and folds are its log folded, checked event by event, and its rows
  // placed by its history tree (the plain fold knows no head: every row would read visible).
  const folded = native ? foldCheckedEvents(initFolds(), content.events) : undefined
  if (folded) folded.rows = placeRows(folded.rows, replayTree(content.events))
  return {
    session: content.session,
    events: content.events,
    inputs: content.inputs,
    rows: folded ? folded.rows : content.rows,
    attachments,
    // An imported session's folds are derived from its rows when it is first loaded.
    putFolds: () => folded && putFolds(content.session.id, content.session.headSeq, folded.folds),
  }
}

async function decodeAttachment(a: ExportedAttachment): Promise<PreparedAttachment> {
  let bytes: Uint8Array<ArrayBuffer>
  try {
    bytes = fromBase64(a.data) as Uint8Array<ArrayBuffer>
  } catch {
    throw invalid(`attachment ${a.id} is not base64`, { attachmentId: a.id })
  }
  if (bytes.length !== a.size || (await sha256Hex(bytes)) !== a.id)
    throw invalid(`attachment ${a.id}: its bytes are not the ones its id names`, { attachmentId: a.id })
  return { id: a.id, size: a.size, data: new Blob([bytes], { type: a.mediaType }) }
}

/** How far into a file its format shows: a header line is far shorter. */
const HEAD_BYTES = 4096

/**
 * The bytes of an import request when they are a `sessionline` export (told by its header line,
 * src/import/detect.ts), else undefined: the file is another tool's.
 */
export async function sessionlineBytes(request: unknown): Promise<Uint8Array | undefined> {
  const { text, blob, format } = (request ?? {}) as { text?: unknown; blob?: unknown; format?: unknown }
  if (format !== undefined) return undefined
  if (typeof text === 'string') {
    const end = text.indexOf('\n')
    return detectExport(end < 0 ? text : text.slice(0, end)) ? utf8Bytes(text) : undefined
  }
  if (typeof Blob === 'undefined' || !(blob instanceof Blob)) return undefined
  if (blob.size > MAX_IMPORT_FILE_BYTES) return undefined
  const head = await blob.slice(0, HEAD_BYTES).text()
  const end = head.indexOf('\n')
  if (!detectExport(end < 0 ? head : head.slice(0, end))) return undefined
  return new Uint8Array(await blob.arrayBuffer())
}
