/**
 * The bytes of the files a model request's context carries, read once per attachment id before
 * the request is built. Both providers send them: the OpenAI-compatible one as data URLs, the AI
 * SDK one as file parts.
 */
import type { ProviderRequest } from '../provider'

/** The bytes of the files the context's user rows carry, by attachment id. */
export type AttachedFiles = ReadonlyMap<string, Uint8Array>

/**
 * Reads the bytes of every file the context's visible user rows carry, once per attachment id.
 * A file whose bytes are gone (or a host that serves none) is left out of the map; the prompt
 * then says so in text rather than failing the step.
 */
export async function attachedFiles(
  request: Pick<ProviderRequest, 'context' | 'attachment'>,
): Promise<AttachedFiles> {
  const files = new Map<string, Uint8Array>()
  const { attachment } = request
  if (!attachment) return files
  for (const row of request.context) {
    if (row.role !== 'user' || row.visibility !== 'visible') continue
    for (const part of row.parts) {
      if (part.type !== 'file' || files.has(part.attachmentId)) continue
      const blob = await attachment(part.attachmentId)
      if (blob) files.set(part.attachmentId, new Uint8Array(await blob.arrayBuffer()))
    }
  }
  return files
}
