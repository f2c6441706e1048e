/**
 * The page's entry point: wraps a worker (or a MessagePort, or any Comlink endpoint) that runs
 * `exposeEngine`, and returns a client with every engine call plus `open`, which gives a live
 * `SessionView` of one session.
 *
 * Every call has a deadline (`timeoutMs`), and when the worker fails (an `error` event on the
 * worker, or `close` on a port) every pending and later call rejects with `worker_gone` instead
 * of waiting forever.
 *
 * @example
 *   const worker = new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' })
 *   const client = connect(worker)
 *   const { id } = await client.createSession({ title: 'Scratch' })
 *   const view = client.open(id) // renders 'loading', then the tail
 */
import type { Endpoint } from 'comlink'
import { isSessionlineError } from '../schema/errors'
import { registerErrorTransfer } from '../wire/errors'
import { ENGINE_METHODS } from '../wire/protocol'
import { workerGone, wrapEngine } from '../wire/remote-engine'
import { createSessionView } from './session-view'
import type { OpenOptions, SessionlineClient, SessionView } from './types'

export interface ConnectOptions {
  /** Deadline of every call in ms (default 60 000; 0: none). A call past it rejects `timeout`. */
  timeoutMs?: number
}

/** A Worker and a MessagePort are both endpoints; named here so the signature reads as intended. */
export type ConnectTarget = Worker | MessagePort | Endpoint

type FailureSource = Pick<EventTarget, 'addEventListener' | 'removeEventListener'>

const FAILURE_EVENTS = ['error', 'close'] as const

export function connect(target: ConnectTarget, options: ConnectOptions = {}): SessionlineClient {
  registerErrorTransfer() // this realm's half: the worker registers its own
  const remote = wrapEngine(target as Endpoint, { timeoutMs: options.timeoutMs ?? 60_000 })
  const views = new Set<SessionView>()
  let closed = false

  const source = target as FailureSource
  const onFailure = (event: Event) => {
    const message = (event as ErrorEvent).message
    remote.fail(
      workerGone(
        event.type === 'close'
          ? 'the worker connection closed'
          : `the worker failed${message ? `: ${message}` : ''}`,
      ),
    )
  }
  for (const type of FAILURE_EVENTS) source.addEventListener(type, onFailure)
  // A worker built from another version of the library cannot serve this page: fail every call
  // with that reason rather than with puzzling errors later. A slow first answer is no failure.
  remote.handshake().catch((error: unknown) => {
    if (isSessionlineError(error) && error.code === 'unsupported_format') remote.fail(error)
  })

  const client = {} as SessionlineClient
  const calls = client as unknown as Record<string, unknown>
  for (const method of ENGINE_METHODS) {
    if (method === 'close') continue
    calls[method] = remote[method].bind(remote)
  }
  client.open = (sessionId: string, openOptions?: OpenOptions): SessionView => {
    const view = createSessionView(client, sessionId, openOptions)
    if (closed) {
      view.dispose()
      return view
    }
    const dispose = view.dispose
    const tracked: SessionView = {
      ...view,
      dispose() {
        views.delete(tracked)
        dispose()
      },
    }
    views.add(tracked)
    return tracked
  }
  client.close = async () => {
    if (closed) return
    closed = true
    for (const view of [...views]) view.dispose()
    for (const type of FAILURE_EVENTS) source.removeEventListener(type, onFailure)
    remote.fail(workerGone('the client was closed'))
    remote.release()
  }
  return client
}
