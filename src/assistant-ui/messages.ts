/**
 * Timeline rows as assistant-ui messages (`ThreadMessageLike`), one per row with the row's id.
 * Rows are immutable, so each row object is converted once (the runtime caches by the same
 * object too).
 */
import type { AppendMessage, MessageStatus, ThreadMessageLike } from '@assistant-ui/react'
import type { ChatRow } from '../client/activity'
import { type AttachmentInput, attachmentUrl } from '../schema/attachments'
import type { Json } from '../schema/common'
import type { MessagePart, SessionMessage } from '../schema/messages'

type Content = Exclude<ThreadMessageLike['content'], string>
type ContentPart = Content[number]
type JsonObject = { readonly [key: string]: Json }

/** What `metadata.custom.sessionline` of a converted message says of its row. */
export interface SessionlineRowInfo {
  seq?: number
  turn?: number
  /** The row's status, or the input's state (`sending`, `pending`, `failed`) while it waits. */
  status: string
  summary?: true
}

const isJsonObject = (value: Json): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function partOf(part: MessagePart): ContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text }
    case 'reasoning':
      return { type: 'reasoning', text: part.text }
    case 'tool': {
      const args = isJsonObject(part.input) ? part.input : { input: part.input }
      // A denied call is settled: its output is the error the model was told.
      const settled =
        part.state === 'done' ||
        part.state === 'error' ||
        part.state === 'interrupted' ||
        part.state === 'denied'
      return {
        type: 'tool-call',
        toolCallId: part.callId,
        toolName: part.name,
        args,
        argsText: JSON.stringify(part.input),
        ...(settled
          ? {
              result:
                part.state === 'interrupted' ? 'interrupted before the tool answered' : (part.output ?? null),
              isError: part.state !== 'done',
            }
          : {}),
      }
    }
    case 'file':
      return part.mediaType.startsWith('image/')
        ? {
            type: 'image',
            id: part.attachmentId,
            image: attachmentUrl(part.attachmentId),
            filename: part.name,
          }
        : {
            type: 'file',
            id: part.attachmentId,
            filename: part.name,
            data: attachmentUrl(part.attachmentId),
            mimeType: part.mediaType,
            sourceType: 'url',
          }
  }
}

function statusOf(message: SessionMessage): MessageStatus {
  if (
    message.status === 'streaming' ||
    message.parts.some((p) => p.type === 'tool' && (p.state === 'running' || p.state === 'awaiting-approval'))
  )
    return { type: 'running' }
  if (message.status === 'interrupted') return { type: 'incomplete', reason: 'cancelled' }
  if (message.status === 'error') return { type: 'incomplete', reason: 'error' }
  if (message.finish === 'length') return { type: 'incomplete', reason: 'length' }
  return { type: 'complete', reason: message.finish === 'stop' ? 'stop' : 'unknown' }
}

function fromMessage(message: SessionMessage): ThreadMessageLike {
  const info: SessionlineRowInfo = { seq: message.seq, turn: message.turn, status: message.status }
  if (message.role === 'summary') info.summary = true
  const base = {
    id: message.id,
    createdAt: new Date(message.createdAt),
    metadata: { custom: { sessionline: info } },
  }
  if (message.role === 'assistant')
    return { ...base, role: 'assistant', content: message.parts.map(partOf), status: statusOf(message) }
  const text = message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('')
  return { ...base, role: message.role === 'user' ? 'user' : 'system', content: [{ type: 'text', text }] }
}

const converted = new WeakMap<ChatRow, ThreadMessageLike>()

/** The assistant-ui message of a row, converted once per row object. */
export function rowToThreadMessageLike(row: ChatRow): ThreadMessageLike {
  let message = converted.get(row)
  if (message === undefined) {
    message =
      row.kind === 'message'
        ? fromMessage(row.message)
        : {
            id: row.input.id,
            role: 'user',
            content: [
              { type: 'text', text: row.input.text },
              ...(row.input.attachments ?? []).flatMap((file) =>
                file.attachmentId === undefined
                  ? []
                  : [partOf({ type: 'file', ...file, attachmentId: file.attachmentId })],
              ),
            ],
            metadata: { custom: { sessionline: { status: row.input.state } satisfies SessionlineRowInfo } },
          }
    converted.set(row, message)
  }
  return message
}

/**
 * The attachments of an appended message as files to admit: an attachment's `File` when the
 * adapter kept it, else its image or file content (a data or blob URL, or base64), read on the page.
 */
export async function filesOfAppend(message: AppendMessage): Promise<AttachmentInput[]> {
  const out: AttachmentInput[] = []
  for (const attachment of message.attachments ?? []) {
    const mediaType = attachment.contentType || attachment.file?.type || 'application/octet-stream'
    if (attachment.file) {
      out.push({ name: attachment.name || attachment.file.name || 'file', mediaType, data: attachment.file })
      continue
    }
    for (const part of attachment.content ?? []) {
      const source =
        part.type === 'image'
          ? part.image
          : part.type === 'file'
            ? toUrl(part.data, part.mimeType)
            : undefined
      if (source === undefined || source.startsWith('sessionline-attachment:')) continue
      const type = part.type === 'file' ? part.mimeType : mediaType
      out.push({ name: attachment.name || 'file', mediaType: type, data: await (await fetch(source)).blob() })
    }
  }
  return out
}

/** A file part's `data` as a URL: itself when it is one, else base64 of `mimeType`. */
const toUrl = (data: string, mimeType: string) =>
  /^(data|blob|https?):/.test(data) ? data : `data:${mimeType};base64,${data}`

/** The text an appended (or edited) message carries. */
export function textOfAppend(message: AppendMessage): string {
  return message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n')
}
