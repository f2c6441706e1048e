/**
 * The Durable Streams protocol as session sync speaks it, over `fetch` (docs/decisions/0036):
 * create a JSON stream, append one batch as an idempotent producer, read messages from an
 * offset (long-polling at the tail). Each call is one request and answers what happened or
 * throws a `StreamFailure` saying what kind of failure it was; retrying is the caller's.
 *
 * @example
 *   const stream = streamUrl('http://127.0.0.1:4437', 's1')
 *   await ensureStream(fetch, stream)
 *   const read = await readStream(fetch, stream, '-1', { live: false })
 */
import type { StreamFailureKind } from '../schema/sync'
import { retryAfterMs } from './backoff'

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>

export class StreamFailure extends Error {
  constructor(
    readonly kind: StreamFailureKind,
    message: string,
    readonly details: { status?: number; retryAfterMs?: number; expectedSeq?: number; epoch?: number } = {},
  ) {
    super(message)
    this.name = 'StreamFailure'
  }
}

/** The stream of one session on a server whose base URL is `base`. */
export const streamUrl = (base: string, sessionId: string) =>
  `${base.replace(/\/+$/, '')}/v1/stream/sessionline/${encodeURIComponent(sessionId)}`

async function send(fetchFn: FetchLike, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetchFn(url, init)
  } catch (error) {
    if ((error as { name?: string })?.name === 'AbortError') throw error
    throw new StreamFailure('network', `no answer from ${url}: ${(error as Error)?.message ?? error}`)
  }
}

/** The failure an unexpected status means. */
function failureOf(response: Response, now: number, what: string): StreamFailure {
  const status = response.status
  if (status === 429 || status >= 500) {
    const wait = retryAfterMs(response.headers.get('retry-after'), now)
    return new StreamFailure('busy', `${what}: the server answered ${status}`, {
      status,
      ...(wait !== undefined ? { retryAfterMs: wait } : {}),
    })
  }
  if (status === 404)
    return new StreamFailure('not_found', `${what}: the stream does not exist (404)`, { status })
  if (status === 410)
    return new StreamFailure('gone', `${what}: the server no longer holds that offset (410)`, { status })
  if (status === 403) {
    const epoch = Number(response.headers.get('producer-epoch'))
    return new StreamFailure('fenced', `${what}: a newer engine pushes for this device (403)`, {
      status,
      ...(Number.isInteger(epoch) ? { epoch } : {}),
    })
  }
  // A closed stream answers an append 409 with Stream-Closed (and no expected seq).
  if (status === 409 && response.headers.get('stream-closed') === 'true')
    return new StreamFailure('closed', `${what}: the stream is closed and takes no more appends (409)`, {
      status,
    })
  if (status === 409) {
    const expected = response.headers.get('producer-expected-seq')
    if (expected !== null && /^\d+$/.test(expected))
      return new StreamFailure('gap', `${what}: producer sequence gap (409)`, {
        status,
        expectedSeq: Number(expected),
      })
  }
  return new StreamFailure('refused', `${what}: the server refused it (${status})`, { status })
}

/**
 * Creates the session's JSON stream, or finds it there. PUT is idempotent only for the same
 * configuration: a stream made otherwise (forked on the server, given a TTL, closed) answers 409
 * without saying why, so a HEAD looks: an open JSON stream is used as it is, a closed one is
 * `closed`, anything else is refused.
 */
export async function ensureStream(fetchFn: FetchLike, url: string, now = Date.now()): Promise<void> {
  const response = await send(fetchFn, url, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
  })
  await response.body?.cancel().catch(() => undefined)
  if (response.status === 200 || response.status === 201) return
  const failure = failureOf(response, now, 'create the stream')
  if (response.status !== 409) throw failure
  const head = await send(fetchFn, url, { method: 'HEAD' })
  await head.body?.cancel().catch(() => undefined)
  if (head.status !== 200) throw failure
  if (head.headers.get('stream-closed') === 'true')
    throw new StreamFailure('closed', 'create the stream: it exists and is closed (409)', { status: 409 })
  const type = head.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase()
  if (type !== 'application/json') throw failure
}

/** Whether the server appended the message now or had it already (a retry of an append it took). */
export type AppendAnswer = 'appended' | 'duplicate'

/** Appends one message as producer `id` at `epoch`, `seq`. */
export async function appendMessage(
  fetchFn: FetchLike,
  url: string,
  message: unknown,
  producer: { id: string; epoch: number; seq: number },
  now = Date.now(),
): Promise<AppendAnswer> {
  const response = await send(fetchFn, url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'Producer-Id': producer.id,
      'Producer-Epoch': String(producer.epoch),
      'Producer-Seq': String(producer.seq),
    },
    // A JSON stream appends each element of an array as its own message: one batch, one message.
    body: JSON.stringify([message]),
  })
  await response.body?.cancel().catch(() => undefined)
  if (response.status === 200) return 'appended'
  if (response.status === 204) return 'duplicate'
  throw failureOf(response, now, 'append')
}

/**
 * Appends one message outside the producer's sequence (a runner claim or an input record): such
 * a message may land twice or not at all and every reader still folds the same, so it needs no
 * `(epoch, seq)` recorded before it is sent.
 */
export async function postMessage(
  fetchFn: FetchLike,
  url: string,
  message: unknown,
  now = Date.now(),
): Promise<void> {
  const response = await send(fetchFn, url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([message]),
  })
  await response.body?.cancel().catch(() => undefined)
  if (response.status !== 200 && response.status !== 204) throw failureOf(response, now, 'append')
}

/** Messages read from an offset, the offset after them and whether that is the tail. */
export interface StreamRead {
  messages: unknown[]
  nextOffset: string
  upToDate: boolean
  /** The stream is closed and these messages reach its end: nothing more will ever be read. */
  closed: boolean
}

/** Reads the messages after `offset` (`-1`: from the start); `live` waits at the tail for new ones. */
export async function readStream(
  fetchFn: FetchLike,
  url: string,
  offset: string,
  options: { live: boolean; signal?: AbortSignal },
  now = Date.now(),
): Promise<StreamRead> {
  const query = `?offset=${encodeURIComponent(offset)}${options.live ? '&live=long-poll' : ''}`
  const response = await send(fetchFn, `${url}${query}`, {
    method: 'GET',
    ...(options.signal ? { signal: options.signal } : {}),
  })
  if (response.status !== 200 && response.status !== 204) {
    await response.body?.cancel().catch(() => undefined)
    throw failureOf(response, now, 'read')
  }
  const nextOffset = response.headers.get('stream-next-offset')
  const upToDate = response.headers.get('stream-up-to-date') === 'true'
  // Sent only with the read that reaches the end of a closed stream.
  const closed = response.headers.get('stream-closed') === 'true'
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    if ((error as { name?: string })?.name === 'AbortError') throw error
    throw new StreamFailure('network', `read: the body broke off (${(error as Error)?.message ?? error})`)
  }
  if (nextOffset === null)
    throw new StreamFailure('bad_response', 'read: the answer has no Stream-Next-Offset')
  if (response.status === 204 || text === '') return { messages: [], nextOffset, upToDate: true, closed }
  let messages: unknown
  try {
    messages = JSON.parse(text)
  } catch {
    throw new StreamFailure('bad_response', 'read: the body is not JSON (truncated?)')
  }
  if (!Array.isArray(messages)) throw new StreamFailure('bad_response', 'read: the body is not a JSON array')
  return { messages, nextOffset, upToDate, closed }
}
