/**
 * The `sessionline` export format (docs/architecture.md §11, docs/decisions/0032): JSON lines, a header
 * first, then the session, its durable log, its inbox, the rows of a session that has no log
 * (imported ones) and the attachment bytes in base64. Pure: text in, checked records out, and
 * back; hashing and storage are the engine's.
 *
 * ```
 * {"format":"sessionline","version":1,"sessionId":"s1","sha256":"…","lines":5}
 * {"kind":"session","session":{"id":"s1","title":"…",…}}
 * {"kind":"event","event":{"sessionId":"s1","seq":1,"at":…,"type":"session/created","data":{…}}}
 * {"kind":"input","input":{"id":"in-1",…,"status":"promoted",…}}
 * {"kind":"attachment","attachment":{"id":"<sha-256>","size":7,"mediaType":"image/png","data":"<base64>"}}
 * ```
 *
 * `sha256` is the SHA-256 (hex) of every byte after the header's newline; `lines` counts those
 * lines. The output is deterministic (no export time, records in a fixed order, each printed
 * as stored), and an import stores each record as the file has it, so exporting an imported
 * export again gives the same bytes.
 */
import { z } from 'zod'
import { AttachmentId, MediaType } from '../schema/attachments'
import { SessionlineError } from '../schema/errors'
import { SessionEvent, type StoredEvent } from '../schema/events'
import { InputReceipt } from '../schema/inputs'
import { SessionMessage } from '../schema/messages'
import { SessionInfo } from '../schema/session'

export const SESSIONLINE_FORMAT = 'sessionline'
export const SESSIONLINE_VERSION = 1

export const SessionlineHeader = z.strictObject({
  format: z.literal(SESSIONLINE_FORMAT),
  version: z.number().int().positive(),
  sessionId: z.string(),
  sha256: AttachmentId,
  lines: z.number().int().nonnegative(),
})
export type SessionlineHeader = z.infer<typeof SessionlineHeader>

/** An attachment as exported: its bytes in base64. */
export interface ExportedAttachment {
  id: string
  size: number
  mediaType: string
  /** Standard base64 of the bytes. */
  data: string
}

/** Everything a `sessionline` export holds of one session. */
export interface SessionlineContent {
  session: SessionInfo
  /** The durable log in seq order (empty for an imported session). */
  events: StoredEvent[]
  /** The inbox, every receipt, in admission order. */
  inputs: InputReceipt[]
  /** Rows no log produces (imported sessions), in seq order; empty for a native session. */
  rows: SessionMessage[]
  /** Sorted by id. */
  attachments: ExportedAttachment[]
}

const StoredEventLine = z
  .looseObject({
    sessionId: z.string(),
    seq: z.number().int().positive(),
    at: z.number().int().nonnegative(),
  })
  .transform((value, ctx): StoredEvent => {
    const { sessionId, seq, at, ...rest } = value
    const parsed = SessionEvent.safeParse(rest)
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: parsed.error.issues[0]?.message ?? 'not an event' })
      return z.NEVER
    }
    return { ...parsed.data, sessionId, seq, at } as StoredEvent
  })

const Line = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('session'), session: SessionInfo }),
  z.strictObject({ kind: z.literal('event'), event: StoredEventLine }),
  z.strictObject({ kind: z.literal('input'), input: InputReceipt }),
  z.strictObject({ kind: z.literal('row'), row: SessionMessage }),
  z.strictObject({
    kind: z.literal('attachment'),
    attachment: z.strictObject({
      id: AttachmentId,
      size: z.number().int().nonnegative(),
      mediaType: MediaType,
      data: z.string(),
    }),
  }),
])

/** One line: a record as stored, keys in the order its writer gave them. */
const line = (value: unknown) => JSON.stringify(value)

/** The lines after the header, each ending in a newline. */
export function sessionlineBody(content: SessionlineContent): string {
  const lines: string[] = [line({ kind: 'session', session: content.session })]
  for (const event of content.events) lines.push(line({ kind: 'event', event }))
  for (const input of content.inputs) lines.push(line({ kind: 'input', input }))
  for (const row of content.rows) lines.push(line({ kind: 'row', row }))
  for (const attachment of content.attachments) lines.push(line({ kind: 'attachment', attachment }))
  return `${lines.join('\n')}\n`
}

/** The header line (with its newline) of a body of `lines` lines hashing to `sha256`. */
export function sessionlineHeader(sessionId: string, sha256: string, lines: number): string {
  const header: SessionlineHeader = {
    format: SESSIONLINE_FORMAT,
    version: SESSIONLINE_VERSION,
    sessionId,
    sha256,
    lines,
  }
  return `${JSON.stringify(header)}\n`
}

const invalid = (message: string, details?: Record<string, unknown>) =>
  new SessionlineError('invalid_input', `sessionline import: ${message}`, details)

/** Whether `firstLine` is the header of a `sessionline` export (any version). */
export function isSessionlineHeader(firstLine: string): boolean {
  try {
    const value = JSON.parse(firstLine) as { format?: unknown }
    return typeof value === 'object' && value !== null && value.format === SESSIONLINE_FORMAT
  } catch {
    return false
  }
}

/** Splits an export into its checked header and its body (unchecked against the hash yet). */
export function splitSessionline(text: string): { header: SessionlineHeader; body: string } {
  const end = text.indexOf('\n')
  if (end < 0) throw invalid('the file ends inside its header (truncated?)')
  let raw: unknown
  try {
    raw = JSON.parse(text.slice(0, end))
  } catch {
    throw invalid('the header is not JSON')
  }
  const version = (raw as { version?: unknown } | null)?.version
  if (typeof version === 'number' && version !== SESSIONLINE_VERSION)
    throw invalid(`version ${version} is not one this release reads (it reads ${SESSIONLINE_VERSION})`, {
      version,
    })
  const header = SessionlineHeader.safeParse(raw)
  if (!header.success) throw invalid(`the header is malformed: ${header.error.issues[0]?.message ?? ''}`)
  return { header: header.data, body: text.slice(end + 1) }
}

/**
 * The content of a body whose hash was checked: each line validated, the log dense from seq 1
 * and every line of the header's session. Throws `invalid_input` naming the first bad line.
 */
export function parseSessionlineBody(header: SessionlineHeader, body: string): SessionlineContent {
  const texts = body.split('\n')
  if (texts.pop() !== '') throw invalid('the last line has no newline (truncated?)')
  if (texts.length !== header.lines)
    throw invalid(`the header says ${header.lines} lines, the file has ${texts.length}`)
  let session: SessionInfo | undefined
  const content: Omit<SessionlineContent, 'session'> = { events: [], inputs: [], rows: [], attachments: [] }
  texts.forEach((text, i) => {
    const where = `line ${i + 2}`
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw invalid(`${where} is not JSON`, { line: i + 2 })
    }
    const parsed = Line.safeParse(value)
    if (!parsed.success)
      throw invalid(`${where}: ${parsed.error.issues[0]?.message ?? 'malformed'}`, { line: i + 2 })
    // Checked with the schema, kept as read: a record stored from the file prints back to the
    // same text (its keys in the file's order), so export -> import -> export gives the same bytes.
    const line = { ...parsed.data, ...(value as object) } as typeof parsed.data
    if (line.kind === 'session') {
      if (i !== 0) throw invalid(`${where}: the session line must come first`, { line: i + 2 })
      session = line.session
      return
    }
    if (!session) throw invalid('the session line must come first', { line: i + 2 })
    if (line.kind === 'event') {
      const expected = content.events.length + 1
      if (line.event.sessionId !== session.id || line.event.seq !== expected)
        throw invalid(`${where}: expected event ${expected} of session ${session.id}`, { line: i + 2 })
      content.events.push(line.event)
    } else if (line.kind === 'input') {
      if (line.input.sessionId !== session.id)
        throw invalid(`${where}: an input of another session`, { line: i + 2 })
      content.inputs.push(line.input)
    } else if (line.kind === 'row') {
      if (line.row.sessionId !== session.id)
        throw invalid(`${where}: a row of another session`, { line: i + 2 })
      content.rows.push(line.row)
    } else content.attachments.push(line.attachment)
  })
  if (!session) throw invalid('no session line')
  if (session.id !== header.sessionId)
    throw invalid('the header and the session line name different sessions')
  if (session.source === 'native' && content.events.length !== session.headSeq)
    throw invalid(`the log has ${content.events.length} events, the session says ${session.headSeq}`)
  return { session, ...content }
}
