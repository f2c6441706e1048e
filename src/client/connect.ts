/**
 * The page's entry point: wraps a worker (or a MessagePort, or any Comlink endpoint) that runs
 * `exposeEngine`, and returns a client with every engine call plus `open`, which gives a live
 * `SessionView` of one session.
 *
 * Every call has a deadline (`timeoutMs`). A worker that dies says nothing when the browser
 * terminates it, so the page also checks that it answers (a heartbeat with its own deadline)
 * and listens for its `error` event. When the worker is gone, every pending call rejects with
 * `worker_gone`. Given a factory instead of a worker, `connect` then starts a fresh worker and
 * re-opens every view: its subscriptions come back, inputs the old worker never acknowledged are
 * re-sent by id (an admit is idempotent by id, so nothing is admitted twice), and the view's
 * status is `reconnecting` meanwhile. `watch` subscriptions made on the client come back too,
 * with one `reset` change that says the listener may have missed commits. The last `configure`
 * this client made is made again on the fresh worker before any other call reaches it, so a
 * restart never runs a turn on the worker's default model.
 *
 * A SharedWorker works too (`connect(() => new SharedWorker(url, { type: 'module' }))`): every
 * tab then talks to one engine (docs/decisions/0035). `sharedOrDedicated` picks it where the
 * browser has SharedWorker and a dedicated worker per tab elsewhere.
 *
 * @example
 *   const client = connect(
 *     () => new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' }),
 *   )
 *   const { id } = await client.createSession({ title: 'Scratch' })
 *   const view = client.open(id) // renders 'loading', then the tail
 */
import type { ChangeListener, Unsubscribe } from '../engine/types'
import { isSessionlineError, type SessionlineError } from '../schema/errors'
import type { ConfigureRequest } from '../schema/provider'
import type { WatchOptions } from '../schema/requests'
import { type FirstScreenOptions, firstScreenReader } from '../store/first-screen'
import { registerErrorTransfer } from '../wire/errors'
import { ENGINE_METHODS } from '../wire/protocol'
import { type RemoteEngine, workerGone, wrapEngine } from '../wire/remote-engine'
import { openSessionView, VIEW_ENGINE_METHODS, type ViewConnection, type ViewEngine } from './session-view'
import type { OpenOptions, SessionlineClient, SessionView } from './types'
import { type ConnectTarget, type Wire, type WorkerFactory, type WorkerStart, wireOf } from './worker-target'

export type { ConnectTarget, WorkerFactory, WorkerStart }

export interface ConnectOptions {
  /** Deadline of every call in ms (default 60 000; 0: none). A call past it rejects `timeout`. */
  timeoutMs?: number
  /** How often the page checks that the worker still answers, in ms (default 2 000; 0: never). */
  heartbeatMs?: number
  /** A check unanswered for this long (ms, default 10 000) means the worker is gone. */
  heartbeatTimeoutMs?: number
  /** How long a fresh worker may take to answer at all (ms, default 15 000): starting one is slow. */
  startTimeoutMs?: number
  /** With a factory: fresh workers that may fail to answer in a row before giving up (default 3). */
  maxRestarts?: number
  /**
   * Hears what fails with no call to reject: the last `configure` refused by a fresh worker
   * (which then runs its own default). Default: `console.error`.
   */
  onError?: (error: unknown) => void
  /**
   * The database the worker's engine uses (its `dbName`). Given, every view reads its first screen
   * (the tail, or what a `loadThrough` in the opening task asks, and the pending inputs) straight
   * from that database on the page, read-only, while the worker starts; the worker's own read then
   * takes over, adding to what is shown, never taking from it (docs/decisions/0038). The outline
   * and the rail come with the worker's read. Without it, the worker reads the first screen.
   */
  dbName?: string
  /** Where the page's first read finds IndexedDB (Node passes fake-indexeddb's); the global one by default. */
  indexedDB?: FirstScreenOptions['indexedDB']
  IDBKeyRange?: FirstScreenOptions['IDBKeyRange']
}

const FAILURE_EVENTS = ['error', 'close'] as const

/** One worker and the wire to it; a fresh link replaces it when the worker dies. */
interface Link {
  wire: Wire
  remote: RemoteEngine
  lost: boolean
  /** Resolves once the worker answered its handshake (never rejects). */
  answered: Promise<boolean>
  detach(): void
}

/** The view reads that are small whatever the session (not `loadThrough`, which may page far). */
const SMALL_READS = ['page', 'firstRead', 'pending', 'projection', 'outline', 'watch'] as const
type SmallRead = (typeof SMALL_READS)[number]
const isSmallRead = (method: string): method is SmallRead =>
  (SMALL_READS as readonly string[]).includes(method)

/** A `watch` made on the client: re-subscribed on every fresh worker. */
interface ClientWatch {
  sessionId: string
  listener: ChangeListener
  options: WatchOptions | undefined
  stop: Unsubscribe | undefined
  done: boolean
}

const isWorkerGone = (error: unknown) => isSessionlineError(error) && error.code === 'worker_gone'

export function connect(
  target: ConnectTarget | WorkerFactory,
  options: ConnectOptions = {},
): SessionlineClient {
  registerErrorTransfer() // this realm's half: the worker registers its own
  const factory = typeof target === 'function' ? target : undefined
  const timeoutMs = options.timeoutMs ?? 60_000
  const heartbeatMs = options.heartbeatMs ?? 2_000
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 10_000
  const startTimeoutMs = Math.max(options.startTimeoutMs ?? 15_000, heartbeatTimeoutMs)
  const maxRestarts = options.maxRestarts ?? 3
  const onError = options.onError ?? ((error: unknown) => console.error('sessionline:', error))
  /** The last `configure` a worker accepted from this client: a fresh worker gets it first. */
  let configured: ConfigureRequest | undefined
  const firstScreens =
    options.dbName === undefined
      ? undefined
      : firstScreenReader(options.dbName, {
          ...(options.indexedDB && { indexedDB: options.indexedDB }),
          ...(options.IDBKeyRange && { IDBKeyRange: options.IDBKeyRange }),
        })
  // Opened before the first worker is started: the page's open then comes before the engine's.
  firstScreens?.prepare()
  const views = new Map<SessionView, ViewConnection>()
  const watches = new Set<ClientWatch>()
  let closed = false
  /** Fresh workers in a row that never answered. */
  let failedStarts = 0
  let restartTimer: ReturnType<typeof setTimeout> | undefined
  /** Why the client has no worker any more and will not start one. */
  let gone: SessionlineError | undefined
  /** Set while a fresh worker is about to start: calls made meanwhile go to it. */
  let restarting: Promise<void> | undefined
  /** Workers started so far, and why the last one was given up (what a factory is told). */
  let starts = 0
  let lostAs: WorkerStart['after']
  // Told to the worker on every check: a shared worker lets go of a tab silent for much longer.
  const finite = (ms: number) => (Number.isFinite(ms) && ms > 0 ? ms : 0)
  const hello = { heartbeatMs: finite(heartbeatMs), heartbeatTimeoutMs: finite(heartbeatTimeoutMs) }
  const start = (): ConnectTarget => factory!({ restarts: starts++, after: lostAs })

  function open(target: ConnectTarget): Link {
    const wire = wireOf(target)
    const remote = wrapEngine(wire.endpoint, { timeoutMs, handshakeTimeoutMs: startTimeoutMs })
    let heartbeat: ReturnType<typeof setTimeout> | undefined
    const onFailure = (event: Event) => {
      const message = (event as ErrorEvent).message
      lose(
        link,
        event.type === 'close'
          ? 'the worker connection closed'
          : `the worker failed${message ? `: ${message}` : ''}`,
      )
    }
    const link: Link = {
      wire,
      remote,
      lost: false,
      answered: Promise.resolve(false),
      detach() {
        clearTimeout(heartbeat)
        for (const source of wire.failureSources)
          for (const type of FAILURE_EVENTS) source.removeEventListener?.(type, onFailure)
      },
    }
    for (const source of wire.failureSources)
      for (const type of FAILURE_EVENTS) source.addEventListener?.(type, onFailure)

    /** Resolves whether a running worker answered a check within heartbeatTimeoutMs. */
    const answers = () =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), heartbeatTimeoutMs)
        remote.handshake(hello).then(
          () => {
            clearTimeout(timer)
            resolve(true)
          },
          (error: unknown) => {
            clearTimeout(timer)
            resolve(isWorkerGone(error)) // already lost: nothing more to do here
          },
        )
      })
    const beat = () => {
      if (heartbeatMs <= 0 || link.lost) return
      heartbeat = setTimeout(() => {
        void answers().then((answered) => {
          if (answered) beat()
          else lose(link, `the worker did not answer within ${heartbeatTimeoutMs} ms`)
        })
      }, heartbeatMs)
    }
    link.answered = remote.handshake(hello).then(
      () => {
        beat()
        return true
      },
      (error: unknown) => {
        // A worker built from another version of the library cannot serve this page: fail every
        // call with that reason rather than with puzzling errors later.
        if (isSessionlineError(error) && error.code === 'unsupported_format') {
          link.lost = true
          link.detach()
          gone = error
          remote.fail(error)
          for (const view of views.values()) view.connectionFailed(error)
        } else if (!isWorkerGone(error)) {
          lose(link, `the worker did not start within ${startTimeoutMs} ms`, 'unanswered')
        }
        return false
      },
    )
    return link
  }

  let link = open(factory ? start() : (target as ConnectTarget))

  function lose(dead: Link, reason: string, after: NonNullable<WorkerStart['after']> = 'gone'): void {
    if (dead.lost || dead !== link) return
    lostAs = after
    dead.lost = true
    dead.detach()
    const error = workerGone(reason)
    const restart = factory !== undefined && !closed && failedStarts < maxRestarts
    if (!restart) gone = error
    // Views hear first, so the calls failing just below already know a fresh worker is coming.
    for (const view of views.values()) {
      if (restart) view.connectionLost()
      else view.connectionFailed(error)
    }
    dead.remote.fail(error)
    // Comlink's release waits for an answer a dead worker never sends: terminate instead (a
    // shared worker cannot be terminated from a page: its port is closed).
    dead.wire.end()
    if (!restart) return
    // The first restart is immediate; a worker that keeps failing to start gets a growing pause.
    const pause = failedStarts === 0 ? 0 : Math.min(100 * 2 ** failedStarts, 2_000)
    let started: () => void = () => undefined
    restarting = new Promise((resolve) => {
      started = resolve
    })
    const waiting = restarting
    restartTimer = setTimeout(() => {
      restartTimer = undefined
      if (closed) {
        restarting = undefined
        started()
        return
      }
      const fresh = open(start())
      link = fresh
      failedStarts++
      // Calls wait until the fresh worker has the configuration the dead one had (or is lost
      // too, and the next restart makes them wait again).
      void reconfigure(fresh).then((answered) => {
        if (restarting === waiting) restarting = undefined
        started()
        if (!answered || fresh !== link || fresh.lost || closed) return
        failedStarts = 0
        for (const view of views.values()) view.reconnected()
        for (const watch of watches) void resubscribe(watch, fresh)
      })
    }, pause)
  }

  /** Whether `fresh` answered; once it has, it is given the last configuration first. */
  async function reconfigure(fresh: Link): Promise<boolean> {
    if (!(await fresh.answered)) return false
    const request = configured
    if (request === undefined || fresh.lost) return true
    try {
      await fresh.remote.configure(request)
    } catch (error) {
      if (!isWorkerGone(error)) onError(error)
    }
    return true
  }

  async function resubscribe(watch: ClientWatch, on: Link): Promise<void> {
    if (watch.done) return
    try {
      // A fresh feed: its first change of a streaming row is whole (a reset follows anyway).
      const stop = await on.remote.watch(watch.sessionId, watch.listener, watch.options)
      if (watch.done || on !== link) {
        stop()
        return
      }
      watch.stop = stop
      const info = await on.remote.getSession(watch.sessionId)
      if (watch.done) return
      // Commits made while no worker listened were never pushed: tell the listener to re-read.
      watch.listener({
        sessionId: watch.sessionId,
        durable: true,
        headSeq: info?.headSeq ?? 0,
        rows: [],
        inputs: [],
        views: {},
        reset: true,
      })
    } catch {
      // The fresh worker died too: the next one subscribes again.
    }
  }

  /** The worker a call goes to: the current one, or the fresh one about to start. */
  async function current(): Promise<RemoteEngine> {
    // A fresh worker that is lost before it answered starts another restart: wait for that one.
    while (restarting) await restarting
    return link.remote
  }
  type Call = (...args: unknown[]) => Promise<unknown>
  const through =
    (method: Exclude<(typeof ENGINE_METHODS)[number], 'close'>): Call =>
    async (...args) => {
      const remote = await current()
      return (remote[method] as Call).apply(remote, args)
    }

  /**
   * A view's small read: one past its deadline while the heartbeat still answers means the
   * worker's storage is wedged (seen in WebKit right after a worker was terminated: the fresh
   * worker answered, its first IndexedDB read never did). With a factory, that worker is replaced.
   */
  const read =
    (method: SmallRead): Call =>
    async (...args) => {
      const remote = await current()
      const used = link
      try {
        return await (remote[method] as Call).apply(remote, args)
      } catch (error) {
        const wedged = isSessionlineError(error) && error.code === 'timeout'
        if (wedged && factory && link === used)
          lose(link, `the worker answers but ${method} did not within ${timeoutMs} ms`, 'wedged')
        throw error
      }
    }

  /** What views call: always the current worker, so a re-opened view talks to the fresh one. */
  const viewEngine = {} as ViewEngine
  for (const method of VIEW_ENGINE_METHODS)
    (viewEngine as unknown as Record<string, Call>)[method] = isSmallRead(method)
      ? read(method)
      : through(method)

  const client = {} as SessionlineClient
  const calls = client as unknown as Record<string, unknown>
  for (const method of ENGINE_METHODS) {
    if (method === 'close' || method === 'watch') continue
    calls[method] = through(method)
  }
  client.configure = async (request) => {
    await (await current()).configure(request)
    configured = request
  }
  // Browsers offer `navigator.storage.persist()` to pages only: ask from here, the worker answers elsewhere.
  const askWorkerToPersist = calls.persist as SessionlineClient['persist']
  client.persist = () => {
    const manager = (globalThis as { navigator?: { storage?: { persist?: () => Promise<boolean> } } })
      .navigator?.storage
    return typeof manager?.persist === 'function' ? manager.persist() : askWorkerToPersist()
  }
  client.watch = async (sessionId, listener, watchOptions) => {
    const stop = await (await current()).watch(sessionId, listener, watchOptions)
    const watch: ClientWatch = { sessionId, listener, options: watchOptions, stop, done: false }
    watches.add(watch)
    return () => {
      if (watch.done) return
      watch.done = true
      watches.delete(watch)
      watch.stop?.()
    }
  }
  client.open = (sessionId: string, openOptions?: OpenOptions): SessionView => {
    const { view, connection } = openSessionView(viewEngine, sessionId, openOptions, {
      onDispose: () => views.delete(view),
      // A view opened while the worker is gone or being replaced waits for a worker, as before.
      ...(firstScreens && !gone && !link.lost && { startFirstScreen: firstScreens.start }),
    })
    if (closed) {
      view.dispose()
      return view
    }
    views.set(view, connection)
    // A view opened while the worker is being replaced waits for the fresh one like the others.
    if (gone) connection.connectionFailed(gone)
    else if (link.lost) connection.connectionLost()
    return view
  }
  client.close = async () => {
    if (closed) return
    closed = true
    clearTimeout(restartTimer)
    restarting = undefined
    for (const view of [...views.keys()]) view.dispose()
    firstScreens?.close()
    for (const watch of [...watches]) watch.done = true
    watches.clear()
    link.lost = true
    link.detach()
    link.remote.fail(workerGone('the client was closed'))
    link.remote.release()
  }
  return client
}
