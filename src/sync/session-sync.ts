/**
 * Session sync through a Durable Streams server (docs/architecture.md §11, docs/decisions/0036): one loop
 * per synced session, in the worker, that cuts this device's settled events into outbox batches,
 * pushes them as an idempotent producer, and pulls (long-polling at the tail) what every device
 * pushed, committing each pull with its cursor and outbox in one transaction. The engine plugs
 * it in with `createEngine({ sync: createSessionSync() })`.
 *
 * Every request is bounded: failures wait a jittered, growing delay (the server's `Retry-After`
 * when it gives one) and `unsync` or closing the engine ends the wait and the request.
 *
 * @example
 *   const engine = createEngine({ sync: createSessionSync() })
 *   await engine.sync(sessionId, { url: 'http://127.0.0.1:4437' })
 */
import { nanoid } from 'nanoid'
import { claimantAt, foldCoordination } from '../core/sync-claim'
import type { SessionSync, SyncDriver, SyncHost, Unsubscribe } from '../engine/types'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { SessionMessage } from '../schema/messages'
import type { SyncOptions, SyncStatus } from '../schema/sync'
import type { SendMark, SyncStateRow } from '../store/db'
import {
  addToOutbox,
  commitCursor,
  commitPull,
  pendingCount,
  readSyncHead,
  readSyncView,
  recordSends,
  type SyncHead,
  startSyncState,
} from '../store/sync'
import { type BackoffPolicy, DEFAULT_BACKOFF, retryDelay } from './backoff'
import { batchedThrough, MAX_BATCH_EVENTS, planCursorPull, planCut, planPull } from './plan'
import { createRunnerClaim, DEFAULT_CLAIM_TTL_MS, type RunnerClaim } from './runner-claim'
import {
  appendMessage,
  ensureStream,
  type FetchLike,
  postMessage,
  readStream,
  StreamFailure,
  streamUrl,
} from './stream-http'

/** How `createSessionSync` talks and waits; every part can be replaced (tests inject faults and time). */
export interface SessionSyncOptions {
  /** Default: the global `fetch`. */
  fetch?: FetchLike
  /** Waits `ms` or until `signal` aborts (default: a timer). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  /** Jitter source in [0, 1) (default: Math.random). */
  random?: () => number
  backoff?: Partial<BackoffPolicy>
  /** Wait at the stream's tail with long-poll (default true); false: read again every `pollMs`. */
  live?: boolean
  /** Between reads when `live` is false, and between checks while a local turn runs (default 1000 ms). */
  pollMs?: number
  /** Events per batch unless one turn is longer (default 500). */
  maxBatchEvents?: number
  /** Ids of batches and of a device that was given none (default: nanoid). */
  newId?: () => string
  /**
   * How long this device's runner claim holds unless said again, in ms (default 30 s; renewed
   * half-way while this device has something to run, and for one ttl after, then left to
   * lapse). Devices' clocks must agree within a small part of it.
   */
  claimTtlMs?: number
}

const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })

const streaming = (row: SessionMessage) => row.status === 'streaming'

const isAbort = (error: unknown) => (error as { name?: string })?.name === 'AbortError'

/** Session sync for `createEngine({ sync })`. */
export function createSessionSync(options: SessionSyncOptions = {}): SessionSync {
  return { attach: (host) => createDriver(host, options) }
}

interface Loop {
  url: string
  status: SyncStatus
  stop(): Promise<void>
  /** Settles when the first round (push and pull) did, however it ended. */
  firstRound: Promise<void>
  /** The device whose runner claim holds now, as this loop folded the stream (null: none). */
  runner(): string | null
}

function createDriver(host: SyncHost, options: SessionSyncOptions): SyncDriver {
  const loops = new Map<string, Loop>()
  return {
    async sync(sessionId: string, request: SyncOptions): Promise<SyncStatus> {
      const info = await host.engine.getSession(sessionId)
      if (info && info.source !== 'native')
        throw new SessionlineError(
          'invalid_state',
          `session ${sessionId} was imported from ${info.source}: only native sessions sync (fork it to continue it here)`,
          { sessionId, source: info.source },
        )
      const running = loops.get(sessionId)
      if (running && running.url === request.url) return { ...running.status }
      if (running) {
        loops.delete(sessionId)
        await running.stop()
      }
      const loop = startLoop(host, options, sessionId, request)
      loops.set(sessionId, loop)
      await loop.firstRound
      return { ...loop.status }
    },
    async unsync(sessionId: string): Promise<void> {
      const loop = loops.get(sessionId)
      if (!loop) return
      loops.delete(sessionId)
      await loop.stop()
    },
    async status(sessionId: string): Promise<SyncStatus | undefined> {
      const loop = loops.get(sessionId)
      if (!loop) return undefined
      // Counted now: local writes go on while a stopped loop's status stays as it ended.
      const pending = await pendingCount(host.db, sessionId)
      const runner = loop.runner()
      return { ...loop.status, pending, ...(runner !== null ? { runner } : {}) }
    },
    async close(): Promise<void> {
      const all = [...loops.values()]
      loops.clear()
      await Promise.all(all.map((loop) => loop.stop()))
    },
  }
}

function startLoop(
  host: SyncHost,
  options: SessionSyncOptions,
  sessionId: string,
  request: SyncOptions,
): Loop {
  const { db } = host
  const fetchFn: FetchLike = options.fetch ?? ((input, init) => fetch(input, init))
  const sleep = options.sleep ?? defaultSleep
  const random = options.random ?? Math.random
  const policy = { ...DEFAULT_BACKOFF, ...options.backoff }
  const newId = options.newId ?? (() => nanoid())
  const live = options.live ?? true
  const pollMs = options.pollMs ?? 1000
  const maxBatchEvents = options.maxBatchEvents ?? MAX_BATCH_EVENTS
  const stream = streamUrl(request.url, sessionId)

  const stopped = new AbortController()
  /** Aborted by a local commit or a stop: a long-poll or a wait ends so the commit is pushed now. */
  let poke = new AbortController()
  stopped.signal.addEventListener('abort', () => poke.abort(), { once: true })
  let dirty = true
  let unwatch: Unsubscribe | undefined
  let ensured = false
  let upToDate = false
  let producer: SyncStateRow | undefined
  /** Who runs the session's turns across devices (set once the producer is known). */
  let claims: RunnerClaim | undefined
  /** Wakes the loop when its claim is due for renewal, or another's lapses while input waits here. */
  let claimTimer: ReturnType<typeof setTimeout> | undefined
  const wakeAt = (at: number | undefined) => {
    clearTimeout(claimTimer)
    claimTimer = undefined
    if (at === undefined || stopped.signal.aborted) return
    claimTimer = setTimeout(() => poke.abort(), Math.max(0, at - host.now()))
  }
  let firstDone: () => void = () => undefined
  const firstRound = new Promise<void>((resolve) => {
    firstDone = resolve
  })

  const loop: Loop = {
    url: request.url,
    status: { state: 'pulling', pending: 0 },
    firstRound,
    runner: () => (claims ? claimantAt(claims.claim, host.now()) : null),
    async stop() {
      stopped.abort()
      poke.abort()
      await done
    },
  }

  /** The last round failed: the state stays `offline` (or `error`) until one succeeds. */
  let failing = false
  /**
   * The stream was closed (by anyone: the protocol lets any writer end a stream). Nothing more is
   * sent to it; what it holds up to its end is still read and folded, then the loop stops.
   */
  let closed = false
  /** A read reached the end of the closed stream: nothing more will come. */
  let readToEnd = false

  /** Progress of a round; while retrying after a failure the state says the failure instead. */
  function progress(state: SyncStatus['state'], view?: SyncHead, error?: SyncStatus['error']) {
    if (!failing) setStatus(state, view, error)
  }

  function setStatus(state: SyncStatus['state'], view?: SyncHead, error?: SyncStatus['error']) {
    const pending = view
      ? Math.max(0, (view.row?.headSeq ?? 0) - (view.state?.canonicalSeq ?? 0))
      : loop.status.pending
    const skipped = view?.state?.skipped ?? loop.status.skipped ?? 0
    const next: SyncStatus = {
      state,
      pending,
      ...(skipped > 0 ? { skipped } : {}),
      ...(error ? { error } : {}),
    }
    const changed = JSON.stringify(next) !== JSON.stringify(loop.status)
    loop.status = next
    if (changed) host.publishStatus(sessionId, { ...next })
  }

  async function watchLocal(): Promise<void> {
    if (unwatch || stopped.signal.aborted) return
    try {
      unwatch = await host.engine.watch(sessionId, (change) => {
        // Text streaming into a running turn cannot be pushed before the turn ends: only other
        // commits (a promotion, a turn's end, a head move) wake the loop.
        // A status change (ours) is not a commit either.
        if (change.sync !== undefined || !change.durable) return
        if (!change.reset && change.rows.length > 0 && change.rows.every(streaming)) return
        dirty = true
        poke.abort()
      })
    } catch {
      // The session is not here yet: the first pull that creates it watches it then.
    }
  }

  /** Another engine on this database took over this session's sync (its epoch is newer). */
  const fencedHere = () =>
    new StreamFailure('fenced', 'another engine on this database took over syncing this session')

  /**
   * Cuts this device's settled events into batches and pushes what is unacknowledged. Answers
   * the session's row, cursor and outbox as they stand after it (what the pull goes on from),
   * or undefined when the session is not here.
   */
  async function cutAndPush(): Promise<SyncHead | undefined> {
    // A commit from here on sets it again, and the read below may miss it: the pull then reads
    // without waiting at the tail, and the loop comes round to cut it.
    dirty = false
    // The log is read only when it holds events past what is canonical or cut: an idle session's
    // round reads its row, cursor and (empty) outbox, never its events.
    let view: SyncHead = await readSyncHead(db, sessionId)
    if (view.state?.epoch !== producer!.epoch) throw fencedHere()
    if (!view.row) return undefined
    if (!ensured && !closed) {
      await ensureStream(fetchFn, stream, host.now())
      ensured = true
    }
    if (view.row.headSeq > batchedThrough(view)) {
      const whole = await readSyncView(db, sessionId)
      if (whole.state?.epoch !== producer!.epoch) throw fencedHere()
      view = whole
      const cut = whole.row ? planCut(whole, newId, maxBatchEvents) : []
      if (whole.row && cut.length > 0) {
        const expect = { rev: whole.row.rev, outboxLength: whole.outbox.length }
        // Added only when nothing moved since the read: the outbox is then the one read plus the
        // cut, and reading its ~1.5 MB back per 10,000 events would only say so again.
        if (await addToOutbox(db, sessionId, expect, cut))
          view = { ...whole, outbox: [...whole.outbox, ...cut] }
        else view = await readSyncHead(db, sessionId)
      }
    }
    const p = producer!
    const unacked = view.outbox.filter((entry) => !entry.acked)
    // A closed stream takes nothing: the batches stay in the outbox, pending.
    if (unacked.length === 0 || stopped.signal.aborted || closed) return view
    progress('pushing', view)
    // Every batch's seq is recorded before the first is sent, in one transaction: a retry after
    // a lost answer sends each with the same seq (a 204 duplicate where it had arrived). A batch
    // recorded in this epoch keeps its seq; the seqs grow along the outbox.
    const seqs = unacked.map((entry) =>
      entry.sent?.epoch === p.epoch ? entry.sent.seq : p.nextProducerSeq++,
    )
    const sends = (from: number) => {
      const marks: Record<string, SendMark> = {}
      for (let i = from; i < unacked.length; i++) {
        const { sent } = unacked[i]!
        if (sent?.epoch !== p.epoch || sent.seq !== seqs[i])
          marks[unacked[i]!.batch.batchId] = { sent: { epoch: p.epoch, seq: seqs[i]! } }
      }
      return marks
    }
    const record = async (marks: Record<string, SendMark>) => {
      if (Object.keys(marks).length === 0) return
      if (!(await recordSends(db, sessionId, p, marks))) throw fencedHere()
    }
    await record(sends(0))
    /** Acknowledgements, recorded together once the round's POSTs are done (or one failed). */
    const acks: Record<string, SendMark> = {}
    try {
      for (let i = 0; i < unacked.length && !stopped.signal.aborted; i++) {
        const entry = unacked[i]!
        for (let gaps = 0; ; gaps++) {
          try {
            await appendMessage(
              fetchFn,
              stream,
              entry.batch,
              { id: p.deviceId, epoch: p.epoch, seq: seqs[i]! },
              host.now(),
            )
            break
          } catch (error) {
            // The server expects another seq (a seq was skipped or lost): this batch and the
            // ones after it take its count on, recorded before the retry. Bounded.
            if (!(error instanceof StreamFailure) || error.kind !== 'gap' || gaps >= 3) throw error
            const expected = error.details.expectedSeq!
            for (let j = i; j < unacked.length; j++) seqs[j] = expected + (j - i)
            p.nextProducerSeq = expected + (unacked.length - i)
            await record(sends(i))
          }
        }
        acks[entry.batch.batchId] = { sent: { epoch: p.epoch, seq: seqs[i]! }, acked: true }
      }
    } catch (error) {
      // What was acknowledged stays so (else it is sent again and answered as a duplicate).
      if (Object.keys(acks).length > 0) await recordSends(db, sessionId, p, acks).catch(() => false)
      throw error
    }
    await record(acks)
    const pushed = view.outbox.map((entry) => {
      const mark = acks[entry.batch.batchId]
      return mark ? { ...entry, sent: mark.sent, acked: true } : entry
    })
    return { ...view, outbox: pushed }
  }

  const endOfStream = () => {
    readToEnd = true
    return new StreamFailure(
      'closed',
      "the stream was closed: it takes no more appends; this device's events stay pending here",
    )
  }

  /**
   * A stopped loop (`error`, `fenced`) keeps its status's `pending` counting local writes until
   * `unsync`, so a view shows them waiting: one count per local commit, no request.
   */
  async function countPendingUntilStopped(): Promise<void> {
    while (!stopped.signal.aborted) {
      poke = new AbortController() // a local commit aborts it (watchLocal), as does a stop
      const pending = await pendingCount(db, sessionId).catch(() => loop.status.pending)
      if (pending !== loop.status.pending) {
        loop.status = { ...loop.status, pending }
        host.publishStatus(sessionId, { ...loop.status })
      }
      const { signal } = poke
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve()
        else signal.addEventListener('abort', () => resolve(), { once: true })
      })
    }
  }

  /**
   * One read of the stream, committed; false when it must wait for a local turn to settle. The
   * log is read and folded only when the read brought a batch: claims, inputs and an empty
   * long-poll move the cursor (and the claim) alone. `pushed`: the head as the push left it,
   * read just before (an idle round reads it once).
   */
  async function pull(pushed: SyncHead | undefined): Promise<boolean> {
    const head = pushed ?? (await readSyncHead(db, sessionId))
    if (!head.state || head.state.epoch !== producer!.epoch) throw fencedHere()
    const from = head.state.offset
    const waiting = head.outbox.some((o) => !o.acked)
    const tail = live && upToDate && !dirty && !waiting
    progress(upToDate && !waiting ? 'live' : 'pulling', head)
    if (!stopped.signal.aborted) poke = new AbortController()
    let read: Awaited<ReturnType<typeof readStream>>
    try {
      read = await readStream(fetchFn, stream, from, { live: tail, signal: poke.signal }, host.now())
    } catch (error) {
      if (isAbort(error)) return true // a local commit or a stop: the loop goes round
      throw error
    }
    if (read.messages.length === 0 && read.nextOffset === from) {
      upToDate = read.upToDate
      // A long-poll at the end of a closed stream answers at once: reading on would spin.
      if (read.closed) throw endOfStream()
      if (!tail && !live && upToDate) await sleep(pollMs, poke.signal)
      return true
    }
    // The claim is kept with the cursor: both move in the pull's one transaction.
    const coordination = foldCoordination(claims!.claim, read.messages)
    const cursor = planCursorPull(head.state, read.messages, read.nextOffset, coordination.claim)
    if (cursor !== undefined) {
      if (!(await commitCursor(db, sessionId, from, cursor))) {
        const now = await readSyncHead(db, sessionId)
        if (now.state?.epoch !== producer!.epoch) throw fencedHere()
        return true // the cursor moved meanwhile: read again from where it stands
      }
      upToDate = read.upToDate
      await claims!.afterPull(coordination, false)
      if (read.closed) throw endOfStream()
      failing = false
      // Nothing of the log or the outbox moved: the status is the one read before, its skips counted.
      setStatus(upToDate && !waiting ? 'live' : 'pulling', { ...head, state: cursor })
      return true
    }
    const view = await readSyncView(db, sessionId)
    if (view.state?.epoch !== producer!.epoch) throw fencedHere()
    if (view.state.offset !== from) return true // moved meanwhile: read again from where it stands
    const plan = planPull(view, read.messages, read.nextOffset, host.putFolds)
    if (plan.kind === 'not-settled') return false
    let committed: boolean
    try {
      committed = await commitPull(db, {
        ...plan.commit,
        state: { ...plan.commit.state, claim: coordination.claim },
      })
    } catch (error) {
      // Rows whose ids another session holds: retrying cannot help.
      if (isSessionlineError(error) && error.code === 'conflict')
        throw new StreamFailure('conflict', error.message)
      throw error
    }
    if (!committed) {
      const now = await readSyncView(db, sessionId)
      if (now.state?.epoch !== producer!.epoch) throw fencedHere()
      return true // the log moved meanwhile: read again from the same offset
    }
    upToDate = read.upToDate
    await claims!.afterPull(coordination, true)
    if (plan.rewritten) {
      await host.logRewritten(sessionId)
      await watchLocal()
    } else if (plan.appended) {
      const { rows, fromHead } = plan.appended
      await host.logAppended(sessionId, rows, fromHead, plan.commit.state.canonicalSeq)
    }
    // Folded whole and committed: what the closed stream held is all here, and nothing follows.
    if (read.closed) throw endOfStream()
    const after = await readSyncHead(db, sessionId)
    const dropped = plan.dropped[0]
    failing = false
    setStatus(
      upToDate && !after.outbox.some((o) => !o.acked) ? 'live' : 'pulling',
      after,
      dropped && { code: 'dropped', message: `batch ${dropped.batchId} no longer folds: ${dropped.reason}` },
    )
    return true
  }

  const done = (async () => {
    try {
      producer = await startSyncState(db, sessionId, request.url, newId, request.deviceId)
    } catch (error) {
      setStatus('error', undefined, {
        code: error instanceof SessionlineError ? error.code : 'internal',
        message: (error as Error)?.message ?? String(error),
      })
      firstDone()
      return
    }
    claims = createRunnerClaim({
      host,
      sessionId,
      device: producer.deviceId,
      ttlMs: options.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS,
      post: (message) => postMessage(fetchFn, stream, message, host.now()),
      initial: producer.claim ?? null,
    })
    let attempt = 0
    /** Receipts whose rows arrived before this engine stopped, not yet promoted: swept once. */
    let swept = false
    while (!stopped.signal.aborted) {
      try {
        if (!swept) {
          await claims.sweep()
          swept = true
        }
        await watchLocal()
        const settled = await pull(await cutAndPush())
        attempt = 0
        if (failing) {
          failing = false
          setStatus(upToDate ? 'live' : 'pulling')
        }
        // At the tail the claims read are all there are: claim, renew, send inputs, gate.
        if (upToDate && !stopped.signal.aborted) wakeAt(await claims.round(loop.status.pending > 0))
        firstDone()
        // A local turn is running: its events go out (and others' come in) once it ends.
        if (!settled) await sleep(pollMs, stopped.signal)
      } catch (error) {
        if (stopped.signal.aborted) break
        const failure =
          error instanceof StreamFailure
            ? error
            : new StreamFailure('local', (error as Error)?.message ?? String(error))
        const detail = { code: failure.kind, message: failure.message }
        // The stream does not answer: this device runs its own turns (they may become branches).
        wakeAt(undefined)
        await claims.offline()
        const view = await readSyncView(db, sessionId).catch(() => undefined)
        // A closed stream refused an append (or a PUT): read what it holds to its end first.
        if (failure.kind === 'closed' && !readToEnd) {
          closed = true
          continue
        }
        // Terminal: a newer engine owns the pushing, or the stream is gone, closed or refuses
        // us. The local log stays as it is and keeps serving reads and writes.
        const terminal =
          failure.kind === 'fenced'
            ? 'fenced'
            : failure.kind === 'not_found' ||
                failure.kind === 'gone' ||
                failure.kind === 'refused' ||
                failure.kind === 'closed' ||
                failure.kind === 'conflict'
              ? 'error'
              : undefined
        if (terminal) {
          setStatus(terminal, view, detail)
          firstDone()
          await countPendingUntilStopped()
          break
        }
        failing = true
        const retried = failure.kind === 'bad_response' || failure.kind === 'local' ? 'error' : 'offline'
        setStatus(retried, view, detail)
        firstDone()
        const wait = retryDelay(attempt++, {
          random,
          policy,
          ...(failure.details.retryAfterMs !== undefined
            ? { retryAfterMs: failure.details.retryAfterMs }
            : {}),
        })
        await sleep(wait, stopped.signal)
      }
    }
    firstDone()
    wakeAt(undefined)
    claims.release()
    unwatch?.()
  })()

  return loop
}
