/**
 * Network faults for sync tests: wrappers around `fetch` that fail the way a real network and a
 * real server fail, in front of the real Durable Streams server (test/sync/server.mjs).
 *
 * Each wrapper takes the `fetch` it wraps (default: `globalThis.fetch` as it is when the wrapper
 * is made, so a wrapper can itself be installed with `vi.stubGlobal('fetch', …)` without calling
 * itself) and returns a `fetch` with a `fired` count of the requests it interfered with.
 * Wrappers compose: `loseAcknowledgement({ fetch: countRequests().fetch })`.
 *
 * A lost connection is a `TypeError('fetch failed')`, as Node's and browsers' fetch report it,
 * with the fault named in its `cause`.
 *
 * @example
 * const lossy = loseAcknowledgement({ match: appends, times: 1 })
 * await expect(lossy(stream, { method: 'POST', body })).rejects.toThrow('fetch failed')
 * // …the append is in the stream all the same: the server committed it before the answer was lost.
 */

/** The `fetch` the wrappers take and give. */
export type Fetch = typeof globalThis.fetch

/** A request as a fault sees it, before anything is sent. */
export interface SentRequest {
  method: string
  url: string
  headers: Headers
}

/** Which requests a fault applies to. */
export type RequestMatch = (request: SentRequest) => boolean

/** A `fetch` that counts the requests its fault fired on. */
export type FaultyFetch = Fetch & { readonly fired: number }

/** Options every fault takes. */
export interface FaultOptions {
  /** The fetch underneath (default: `globalThis.fetch` when the wrapper is made). */
  fetch?: Fetch
  /** Only requests this accepts are interfered with (default: every request). */
  match?: RequestMatch
  /** How many matching requests to interfere with before passing every request through (default 1). */
  times?: number
}

/** Appends (POST), the requests that write. */
export const appends: RequestMatch = (request) => request.method === 'POST'

/** Reads (GET), catch-up and live. */
export const reads: RequestMatch = (request) => request.method === 'GET'

/** The error a dropped connection gives. */
export function networkError(fault: string): TypeError {
  return new TypeError('fetch failed', { cause: new Error(`test fault: ${fault}`) })
}

/** Method, URL and headers of a fetch call's arguments, without touching its body. */
export function describeRequest(input: Parameters<Fetch>[0], init?: RequestInit): SentRequest {
  const request = input instanceof Request ? input : undefined
  return {
    method: (init?.method ?? request?.method ?? 'GET').toUpperCase(),
    url: request ? request.url : String(input),
    headers: new Headers(init?.headers ?? request?.headers),
  }
}

/**
 * What every counted fault shares: which calls it takes and how many it took. `handle` may call
 * `spare()` when the call turns out not to be one it can interfere with, giving the turn back.
 */
function faulty(
  options: FaultOptions,
  handle: (
    inner: Fetch,
    input: Parameters<Fetch>[0],
    init: RequestInit | undefined,
    spare: () => void,
  ) => Promise<Response>,
): FaultyFetch {
  const inner = options.fetch ?? globalThis.fetch
  const match = options.match ?? (() => true)
  let left = options.times ?? 1
  let fired = 0
  const spare = () => {
    left++
    fired--
  }
  const wrapped: Fetch = (input, init) => {
    if (left <= 0 || !match(describeRequest(input, init))) return inner(input, init)
    left--
    fired++
    return handle(inner, input, init, spare)
  }
  return Object.defineProperty(wrapped, 'fired', { get: () => fired }) as FaultyFetch
}

/**
 * The request reaches the server and the server answers, but the answer never arrives: the
 * promise rejects after the real response came back. An append is committed though its sender
 * saw a failure; a retry must not write it twice.
 */
export function loseAcknowledgement(options: FaultOptions = {}): FaultyFetch {
  return faulty(options, async (inner, input, init) => {
    const response = await inner(input, init)
    await response.body?.cancel()
    throw networkError(`the answer (${response.status}) was lost after the server sent it`)
  })
}

/** The request never leaves: the promise rejects and the server sees nothing. */
export function loseRequest(options: FaultOptions = {}): FaultyFetch {
  return faulty(options, () => Promise.reject(networkError('the request was lost before it was sent')))
}

/** Options of {@link refuse}. */
export interface RefuseOptions extends FaultOptions {
  /** The status answered (default 503; 429 is the other one servers send with Retry-After). */
  status?: number
  /** Retry-After in seconds; omitted: no Retry-After header. */
  retryAfter?: number
}

/**
 * Answers `status` (503 by default) with a Retry-After, as an overloaded server or a proxy in
 * front of it does, without passing the request on: the server sees nothing.
 */
export function refuse(options: RefuseOptions = {}): FaultyFetch {
  const status = options.status ?? 503
  return faulty(options, async () => {
    const headers = new Headers({ 'content-type': 'text/plain' })
    if (options.retryAfter !== undefined) headers.set('retry-after', String(options.retryAfter))
    return new Response(status === 429 ? 'too many requests' : 'service unavailable', { status, headers })
  })
}

/** Options of {@link truncateBody}. */
export interface TruncateOptions extends FaultOptions {
  /** Bytes of the body that arrive. */
  bytes: number
  /**
   * 'error' (default): reading past them fails as a dropped connection does (`TypeError:
   * terminated`); 'clean': the body just ends there, as a broken proxy's does.
   */
  ending?: 'error' | 'clean'
}

/**
 * The server's real answer, status and headers intact, with only the first `bytes` bytes of its
 * body. Answers without a body (204, 304) pass through and do not count.
 */
export function truncateBody(options: TruncateOptions): FaultyFetch {
  const ending = options.ending ?? 'error'
  return faulty(options, async (inner, input, init, spare) => {
    const response = await inner(input, init)
    if (response.body === null) {
      spare()
      return response
    }
    const reader = response.body.getReader()
    let left = options.bytes
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) {
          controller.close() // the whole body was shorter than the cut
          return
        }
        if (value.byteLength < left) {
          left -= value.byteLength
          controller.enqueue(value)
          return
        }
        controller.enqueue(value.subarray(0, left))
        await reader.cancel()
        if (ending === 'clean') controller.close()
        else controller.error(new TypeError('terminated', { cause: networkError('the body was cut') }))
      },
      cancel: (reason) => reader.cancel(reason),
    })
    const { status, statusText, headers } = response
    return new Response(body, { status, statusText, headers })
  })
}

/** A network that can be switched off: see {@link offlineSwitch}. */
export interface OfflineSwitch {
  fetch: FaultyFetch
  /**
   * While true every request fails as a dropped connection; turning it on also cuts the requests
   * in flight (a long-poll, a body being read), as losing the network does.
   */
  offline: boolean
}

/** A `fetch` behind a switch that takes the network away and gives it back. */
export function offlineSwitch(options: Pick<FaultOptions, 'fetch'> = {}): OfflineSwitch {
  const inner = options.fetch ?? globalThis.fetch
  let offline = false
  let fired = 0
  // Requests whose answer may still be arriving. A finished one stays until the next switch-off,
  // which aborts it harmlessly: a test makes few enough requests for that not to matter.
  const inFlight = new Set<AbortController>()
  const wrapped: Fetch = async (input, init) => {
    if (offline) {
      fired++
      throw networkError('offline')
    }
    const cut = new AbortController()
    inFlight.add(cut)
    const theirs = init?.signal ?? (input instanceof Request ? input.signal : undefined)
    const signal = theirs ? AbortSignal.any([theirs, cut.signal]) : cut.signal
    try {
      const response = await inner(input, { ...init, signal })
      if (response.body === null) inFlight.delete(cut)
      return response
    } catch (error) {
      inFlight.delete(cut)
      throw error
    }
  }
  const fetch = Object.defineProperty(wrapped, 'fired', { get: () => fired }) as FaultyFetch
  return {
    fetch,
    get offline() {
      return offline
    },
    set offline(value: boolean) {
      offline = value
      if (!value) return
      for (const cut of inFlight) {
        if (!cut.signal.aborted) fired++
        cut.abort(networkError('offline'))
      }
      inFlight.clear()
    },
  }
}

/** A `fetch` that records every request passed through it. */
export interface CountedFetch {
  fetch: Fetch
  /** Every request so far, in the order they were made. */
  readonly requests: readonly SentRequest[]
  /** How many requests so far (matching `match`, when given). */
  count(match?: RequestMatch): number
}

/** Counts and records the requests made through it, and passes each one on unchanged. */
export function countRequests(options: Pick<FaultOptions, 'fetch'> = {}): CountedFetch {
  const inner = options.fetch ?? globalThis.fetch
  const requests: SentRequest[] = []
  return {
    fetch: (input, init) => {
      requests.push(describeRequest(input, init))
      return inner(input, init)
    },
    requests,
    count: (match) => (match ? requests.filter(match).length : requests.length),
  }
}
