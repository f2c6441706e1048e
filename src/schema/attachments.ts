/**
 * Attachments (docs/architecture.md §11, docs/decisions/0031): what a caller hands `admit` (bytes with a
 * name and a media type) and the `file` part that receipts, `user/message` events and user rows
 * carry in their place. The bytes are stored once per content, under their SHA-256 in hex.
 *
 * @example
 *   await engine.admit(sessionId, {
 *     text: 'what is on this screenshot?',
 *     attachments: [{ name: 'shot.png', mediaType: 'image/png', data: blob }],
 *   })
 */
import { z } from 'zod'
import { MAX_ATTACHMENT_NAME, MAX_ATTACHMENTS } from './limits'

/** A SHA-256 digest in lowercase hex: the id of an attachment's bytes. */
export const AttachmentId = z.string().regex(/^[0-9a-f]{64}$/, 'not a SHA-256 hex digest')
export type AttachmentId = z.infer<typeof AttachmentId>

/** `type/subtype` with optional parameters, as RFC 6838 allows them (lowercased on the way in). */
export const MediaType = z
  .string()
  .max(255)
  .regex(
    /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(\s*;.*)?$/i,
    'not a media type (type/subtype)',
  )
  .transform((t) => t.toLowerCase())

export const AttachmentName = z
  .string()
  .min(1, 'name is empty')
  .max(MAX_ATTACHMENT_NAME, `name is longer than ${MAX_ATTACHMENT_NAME} characters`)

/** A stored attachment as a message part: what the bytes are, never the bytes themselves. */
export const FilePart = z.strictObject({
  type: z.literal('file'),
  attachmentId: AttachmentId,
  name: AttachmentName,
  mediaType: MediaType,
  size: z.number().int().nonnegative(),
})
export type FilePart = z.infer<typeof FilePart>

/** Bytes a caller hands over: a Blob (or File) or an ArrayBuffer; a Blob survives Comlink by structured clone. */
export const AttachmentData = z.custom<Blob | ArrayBuffer>(
  (value) =>
    (typeof Blob !== 'undefined' && value instanceof Blob) ||
    value instanceof ArrayBuffer ||
    Object.prototype.toString.call(value) === '[object ArrayBuffer]',
  'data must be a Blob or an ArrayBuffer',
)

/** One attachment of an `admit` request. */
export const AttachmentInput = z.strictObject({
  name: AttachmentName,
  mediaType: MediaType,
  data: AttachmentData,
})
export type AttachmentInput = z.input<typeof AttachmentInput>

export const AttachmentInputs = z
  .array(AttachmentInput)
  .max(MAX_ATTACHMENTS, `more than ${MAX_ATTACHMENTS} attachments in one input`)

/** The byte size of an attachment's data. */
export const byteSize = (data: Blob | ArrayBuffer): number =>
  typeof (data as Blob).size === 'number' ? (data as Blob).size : (data as ArrayBuffer).byteLength

/**
 * Limits an engine enforces on attachments (`createEngine({attachments})`); see the defaults
 * MAX_ATTACHMENT_BYTES and MAX_INPUT_ATTACHMENT_BYTES.
 */
export interface AttachmentLimits {
  /** Largest single file, in bytes. */
  maxFileBytes: number
  /** Largest sum of one input's files, in bytes. */
  maxInputBytes: number
  /**
   * Media types accepted, exactly (`image/png`) or by type (`image/*`); default: any. A file
   * of another type is refused with `invalid_input`.
   */
  mediaTypes?: readonly string[]
}

/** Whether `mediaType` is one `accepted` names (no list: every type is). */
export function mediaTypeAccepted(mediaType: string, accepted: readonly string[] | undefined): boolean {
  if (!accepted) return true
  const essence = mediaType.split(';')[0]?.trim().toLowerCase() ?? ''
  const type = essence.split('/')[0]
  return accepted.some((a) => {
    const want = a.toLowerCase()
    return want === essence || want === '*/*' || want === `${type}/*`
  })
}

/**
 * The URL an adapter gives a file part (`sessionline-attachment:<id>`): stable across reloads,
 * unlike a `blob:` URL; the page resolves it with `attachment(id)` into an object URL of its own.
 */
export const attachmentUrl = (attachmentId: string): string => `sessionline-attachment:${attachmentId}`
