/**
 * Readies an input's attachments for storing (docs/decisions/0031): checks each against the
 * engine's limits, reads its bytes and hashes them (SHA-256, the attachment's id), and gives the
 * `file` parts the receipt carries. Runs before the write transaction opens: awaiting
 * `crypto.subtle` inside one would commit it early.
 */
import {
  type AttachmentInput,
  type AttachmentLimits,
  byteSize,
  type FilePart,
  mediaTypeAccepted,
} from '../schema/attachments'
import { SessionlineError } from '../schema/errors'
import { MAX_ATTACHMENT_BYTES, MAX_INPUT_ATTACHMENT_BYTES } from '../schema/limits'
import type { PreparedAttachment } from '../store/attachments'

export const DEFAULT_ATTACHMENT_LIMITS: AttachmentLimits = {
  maxFileBytes: MAX_ATTACHMENT_BYTES,
  maxInputBytes: MAX_INPUT_ATTACHMENT_BYTES,
}

/** SHA-256 of `bytes` in lowercase hex. */
export async function sha256Hex(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource))
  let hex = ''
  for (const b of digest) hex += b.toString(16).padStart(2, '0')
  return hex
}

const refuse = (message: string, details: Record<string, unknown>) =>
  new SessionlineError('invalid_input', `admit request: ${message}`, details)

/**
 * Throws `invalid_input` for the first attachment over a limit or of a type not accepted, before
 * any byte is read: nothing is written for a refused input.
 */
export function checkAttachments(files: readonly AttachmentInput[], limits: AttachmentLimits): void {
  let total = 0
  files.forEach((file, index) => {
    const size = byteSize(file.data)
    const path = ['attachments', index]
    if (size > limits.maxFileBytes)
      throw refuse(
        `attachments[${index}] (${file.name}) is ${size} bytes, over the limit of ${limits.maxFileBytes}`,
        {
          path: [...path, 'data'],
          size,
          limit: limits.maxFileBytes,
        },
      )
    if (!mediaTypeAccepted(file.mediaType, limits.mediaTypes))
      throw refuse(`attachments[${index}] (${file.name}) is ${file.mediaType}, not an accepted type`, {
        path: [...path, 'mediaType'],
        mediaType: file.mediaType,
        accepted: limits.mediaTypes,
      })
    total += size
  })
  if (total > limits.maxInputBytes)
    throw refuse(`the attachments are ${total} bytes together, over the limit of ${limits.maxInputBytes}`, {
      path: ['attachments'],
      size: total,
      limit: limits.maxInputBytes,
    })
}

/** The stored form of each file (bytes as a Blob of its media type, keyed by hash) and its part. */
export async function prepareAttachments(
  files: readonly AttachmentInput[],
  limits: AttachmentLimits,
): Promise<{ parts: FilePart[]; stored: PreparedAttachment[] }> {
  checkAttachments(files, limits)
  const prepared = await Promise.all(
    files.map(async (file) => {
      const mediaType = file.mediaType.toLowerCase()
      const blob =
        file.data instanceof Blob
          ? file.data.type === mediaType
            ? file.data
            : file.data.slice(0, file.data.size, mediaType)
          : new Blob([file.data as ArrayBuffer], { type: mediaType })
      const bytes = file.data instanceof Blob ? await file.data.arrayBuffer() : (file.data as ArrayBuffer)
      const id = await sha256Hex(bytes)
      const part: FilePart = { type: 'file', attachmentId: id, name: file.name, mediaType, size: blob.size }
      return { part, stored: { id, size: blob.size, data: blob } }
    }),
  )
  return { parts: prepared.map((p) => p.part), stored: prepared.map((p) => p.stored) }
}
