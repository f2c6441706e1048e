/**
 * The contract page: runs the engine in a module worker (started by a factory, so `connect` can
 * replace it when it dies) and exposes `window.contract.call(name, args)` to the suite. Every
 * answer is plain JSON, `{ ok: true, value }` or `{ ok: false, error }`, so the three drivers
 * (Playwright, Puppeteer over BiDi, WebDriver classic) read it the same way.
 */
import { connect } from '../../../../src/client/connect'
import type { SessionlineClient, SessionView, TimelineSnapshot } from '../../../../src/client/types'
import { sharedOrDedicated } from '../../../../src/client/worker-choice'
import { createEngine } from '../../../../src/engine/engine'
import { isSessionlineError } from '../../../../src/schema/errors'
import type { SessionEvent } from '../../../../src/schema/events'
import type { InputReceipt } from '../../../../src/schema/inputs'
import type { SessionMessage } from '../../../../src/schema/messages'
import type { ProviderConfig } from '../../../../src/schema/provider'
import { type AuditReport, audit, readLog } from './audit'
import { chunkRowNames, compareWithFrozen, type FrozenVersion, loadFrozen, openNewerVersion } from './upgrade'

interface StartConfig {
  dbName: string
  sessionId: string
  provider: ProviderConfig
  heartbeatMs?: number
  heartbeatTimeoutMs?: number
  timeoutMs?: number
  startTimeoutMs?: number
  tail?: number
  /** A dedicated worker per tab (default), or one shared worker for every tab of the database. */
  mode?: 'dedicated' | 'shared'
}

interface Trace {
  at: number
  status: TimelineSnapshot['status']
  headSeq: number
}

let client: SessionlineClient | undefined
let view: SessionView | undefined
let sessionId = ''
let worker: Worker | undefined
/** The name of the shared worker this tab talks to now (shared mode). */
let sharedName: string | undefined
let workersStarted = 0
const traces: Trace[] = []
/** Per watched key: the kind of its row in every snapshot since `watchKey` ('none' when absent). */
const keyTraces = new Map<string, string[]>()
const acknowledged = new Map<string, InputReceipt>()
const cancelled = new Set<string>()
/** Ids whose cancel was sent and not answered yet (it may commit after this page is gone). */
const cancelling = new Set<string>()
const failedAdmits = new Map<string, string>()

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const codeOf = (error: unknown) => (isSessionlineError(error) ? error.code : String(error))

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what}: call start first`)
  return value
}

/** Resolves once `ok()` holds, checked at every snapshot and every 50 ms; rejects after `ms`. */
async function until(ok: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`)
    await sleep(50)
  }
}

function onSnapshot(): void {
  const s = need(view, 'view').getSnapshot()
  traces.push({ at: Date.now(), status: s.status, headSeq: s.headSeq })
  for (const [key, kinds] of keyTraces) {
    const row = s.rows.find((r) => r.key === key) ?? s.queued.find((input) => input.id === key)
    kinds.push(row === undefined ? 'none' : 'kind' in row ? row.kind : 'queued')
  }
}

function summary(s: TimelineSnapshot) {
  return {
    status: s.status,
    error: s.error?.code,
    headSeq: s.headSeq,
    rows: s.rows.map((row) =>
      row.kind === 'message'
        ? { key: row.key, kind: row.kind, role: row.message.role, seq: row.message.seq }
        : row.kind === 'input'
          ? { key: row.key, kind: row.kind, state: row.input.state }
          : { key: row.key, kind: row.kind, fromSeq: row.fromSeq, toSeq: row.toSeq },
    ),
    queued: s.queued.map((input) => ({ id: input.id, state: input.state })),
    outline: s.outline.length,
  }
}

/**
 * A row as text for comparing. A streaming row's text may run ahead of the log in the tab whose
 * worker streams it (live previews are not durable), so only its identity is compared.
 */
const rowText = (message: SessionMessage) =>
  JSON.stringify(
    message.status === 'streaming' ? { id: message.id, seq: message.seq, status: message.status } : message,
  )

/** The view's transcript rows as text (what a user sees), to compare two tabs. */
function viewDigest(): { headSeq: number; rows: string[] } {
  const s = need(view, 'view').getSnapshot()
  return {
    headSeq: s.headSeq,
    rows: s.rows.flatMap((row) => (row.kind === 'message' ? [rowText(row.message)] : [])),
  }
}

/** A message row as the history scenarios compare it: where it sits in the tree, not its text. */
const rowPlace = (message: SessionMessage) => ({
  id: message.id,
  seq: message.seq,
  role: message.role,
  status: message.status,
  visibility: message.visibility,
  branch: message.branch ?? null,
  files: message.parts.flatMap((part) => (part.type === 'file' ? [part.attachmentId] : [])),
})

/** Bytes made in the page: the PNG signature, then `size - 8` bytes from `seed`. */
function madeBytes(seed: number, size: number): Uint8Array<ArrayBuffer> {
  const random = mulberry32(seed)
  const bytes = new Uint8Array(size)
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  for (let i = 8; i < size; i++) bytes[i] = Math.floor(random() * 256)
  return bytes
}

async function sha256Hex(data: BufferSource): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data))
  return [...digest].map((byte) => byte.toString(16).padStart(2, '0')).join('')
}

/** Waits until session `id` has no open turn and nothing pending. */
async function idle(c: SessionlineClient, id: string, ms: number): Promise<void> {
  await until(
    async () => {
      const [session, pending] = await Promise.all([c.getSession(id), c.pending(id)])
      if (!session || pending.length > 0) return false
      const last = await c.events(id, { afterSeq: Math.max(0, session.headSeq - 1) })
      return last.at(-1)?.type === 'turn/end'
    },
    ms,
    'the runner to go idle',
  )
}

/** Admits sent and not answered yet. */
let admitsInFlight = 0

/** Where the fault round under way is, said when it misses its deadline. */
let roundPhase = 'not started'

async function admit(text: string, options: { id: string; delivery?: 'steer' | 'queue' }) {
  admitsInFlight++
  try {
    const receipt = await need(view, 'view').admit(text, options)
    acknowledged.set(receipt.id, receipt)
    return { receipt }
  } catch (error) {
    failedAdmits.set(options.id, codeOf(error))
    return { error: codeOf(error) }
  } finally {
    admitsInFlight--
  }
}

function turnEvents(turn: number): SessionEvent[] {
  const messageId = `a-${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: { inputId: `u-${turn}`, text: `question ${turn}`, delivery: 'steer', source: 'user' },
    },
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: `answer ${turn}` } },
    { type: 'assistant/end', data: { messageId, finish: 'stop' } },
    { type: 'step/end', data: { turn, step: 1 } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

async function auditNow(): Promise<AuditReport & { view: string[] }> {
  const c = need(client, 'client')
  roundPhase = 'audit: reading the log until it holds still'
  const report = audit(await readLog(c, sessionId, 20_000), acknowledged.keys(), cancelled)
  roundPhase = `audit: the view reaching seq ${report.headSeq} (after ${report.reads} reads)`
  // The view reaches the log's head and shows its tail (what the engine serves, active rows).
  const problems: string[] = []
  try {
    await until(() => need(view, 'view').getSnapshot().headSeq >= report.headSeq, 10_000, 'the view')
    // Compared at one head: a commit between the two reads (the runner goes on) means read again,
    // until a deadline rather than for a number of tries (a slow browser reads a running log).
    roundPhase = `audit: the view and the engine's tail at one head (log at seq ${report.headSeq})`
    let compared = false
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline && !compared) {
      const page = await c.page(sessionId, { limit: 1000 })
      const digest = viewDigest()
      if (digest.headSeq !== page.headSeq) {
        await sleep(20)
        continue
      }
      compared = true
      const tail = page.messages.slice(-digest.rows.length).map(rowText)
      if (JSON.stringify(digest.rows) !== JSON.stringify(tail))
        problems.push('the view rows differ from the tail the engine serves')
    }
    if (!compared) problems.push('the view never showed the head the engine serves')
    const s = view!.getSnapshot()
    if (s.status !== 'ready') problems.push(`the view is ${s.status}`)
  } catch (error) {
    problems.push(String(error))
  }
  return { ...report, problems: [...report.problems, ...problems], view: problems }
}

/**
 * One round of the fault injection: a steer starts a streamed turn, more inputs are admitted at
 * random moments, and the worker is terminated at a random moment among them. Resolves after
 * the fresh worker serves the view again and every admit settled, with the audit.
 */
async function faultRound({ seed, round }: { seed: number; round: number }) {
  const random = mulberry32(seed * 7919 + round)
  const before = workersStarted
  const count = 3 + Math.floor(random() * 3)
  const offsets = Array.from({ length: count }, (_, i) => (i === 0 ? 0 : Math.floor(random() * 600))).sort(
    (a, b) => a - b,
  )
  const killAt = 30 + Math.floor(random() * 500)
  const ids = offsets.map((_, i) => `r${round}-${i}`)
  roundPhase = 'admitting around the kill'
  const sent = offsets.map((offset, i) =>
    sleep(offset).then(() =>
      admit(`round ${round} input ${i}`, { id: ids[i]!, delivery: random() < 0.6 ? 'steer' : 'queue' }),
    ),
  )
  const killed = sleep(killAt).then(() => {
    const shown = need(view, 'view').getSnapshot().rows
    const streaming = shown.some((row) => row.kind === 'message' && row.message.status === 'streaming')
    const inFlight = admitsInFlight
    worker?.terminate() // the injection: as the browser kills a worker, no event anywhere
    return { streaming, inFlight }
  })
  const answers = await Promise.all(sent)
  const atKill = await killed
  roundPhase = 'a fresh worker serving the view'
  await until(
    () => workersStarted > before && need(view, 'view').getSnapshot().status === 'ready',
    20_000,
    'a fresh worker serving the view',
  ).catch((error: unknown) => {
    const s = need(view, 'view').getSnapshot()
    throw new Error(
      `${String(error)} (workers ${before} → ${workersStarted}, view ${s.status} ${s.error?.message ?? ''})`,
    )
  })
  const report = await auditNow()
  const ok = answers.filter((a) => 'receipt' in a).length
  return {
    round,
    killAtMs: killAt,
    streamingAtKill: atKill.streaming,
    admitsInFlightAtKill: atKill.inFlight,
    // Sent after the kill, so to the dead worker (it is noticed only after heartbeatTimeoutMs).
    admittedAfterKill: offsets.filter((offset) => offset > killAt).length,
    admitted: count,
    acknowledged: ok,
    failed: count - ok,
    lost: report.lost.length,
    headSeq: report.headSeq,
    auditReads: report.reads,
    problems: report.problems,
  }
}

interface ChaosOps {
  admit: number
  cancel: number
  edit: number
  promote: number
  refused: number
  unexpected: string[]
}
let chaos: { done: boolean; ops: ChaosOps; lastOpAt: number; error?: string } | undefined

/** Admits, cancels, edits and promotes in random order for `durationMs`, a few calls in flight. */
async function runChaos({ seed, durationMs, tag }: { seed: number; durationMs: number; tag: string }) {
  const random = mulberry32(seed)
  const ops: ChaosOps = { admit: 0, cancel: 0, edit: 0, promote: 0, refused: 0, unexpected: [] }
  const state = { done: false, ops, lastOpAt: Date.now() }
  chaos = state
  const c = need(client, 'client')
  const v = need(view, 'view')
  const mine = () =>
    [...v.getSnapshot().queued, ...v.getSnapshot().rows.flatMap((r) => (r.kind === 'input' ? [r.input] : []))]
      .filter((input) => input.id.startsWith(`${tag}-`) && input.state === 'pending')
      .map((input) => input.id)
  const refusal = (error: unknown) => {
    const code = codeOf(error)
    // An input promoted or cancelled meanwhile, or a promote at the wrong moment, is refused.
    if (code === 'invalid_state' || code === 'not_found' || code === 'conflict') ops.refused++
    else ops.unexpected.push(code)
  }
  const end = Date.now() + durationMs
  let next = 0
  const inFlight = new Set<Promise<unknown>>()
  while (Date.now() < end) {
    const pick = random()
    let op: Promise<unknown>
    const ids = mine()
    const target = ids[Math.floor(random() * ids.length)]
    if (pick < 0.45 || target === undefined) {
      const id = `${tag}-${next++}`
      op = admit(`${tag} says ${next}`, { id, delivery: random() < 0.75 ? 'steer' : 'queue' }).then((a) => {
        if ('receipt' in a) ops.admit++
        else refusal(a.error)
      })
    } else if (pick < 0.65) {
      cancelling.add(target)
      op = v
        .cancel(target)
        .then(() => {
          cancelled.add(target)
          ops.cancel++
        }, refusal)
        .finally(() => cancelling.delete(target))
    } else if (pick < 0.9) {
      op = v.edit(target, `${target} edited ${Math.floor(random() * 1000)}`).then(() => {
        ops.edit++
      }, refusal)
    } else {
      op = c.promote(sessionId, 'checkpoint').then(() => {
        ops.promote++
      }, refusal)
    }
    const tracked = op.finally(() => {
      state.lastOpAt = Date.now()
      inFlight.delete(tracked)
    })
    inFlight.add(tracked)
    if (inFlight.size >= 3) await Promise.race(inFlight)
    await sleep(Math.floor(random() * 100))
  }
  await Promise.all(inFlight)
  state.done = true
}

/**
 * Runs `use` on a fresh connection of this page to `dbName` (not the engine's, which lives in
 * the worker), and closes it once `use` has settled.
 */
function withOwnConnection<T>(dbName: string, use: (db: IDBDatabase) => Promise<T>): Promise<T> {
  return new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName)
    request.onerror = () => reject(request.error)
    request.onsuccess = () => resolve(request.result)
  }).then((db) => use(db).finally(() => db.close()))
}

/** Settles with a request's result (its error: rejects). */
const answerOf = <T>(request: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })

/**
 * A read over every table of `dbName` from a fresh connection of this page. A transaction begun
 * before it with any overlapping scope (a dead worker's included) must end before it starts, so
 * it answers only once storage is free.
 */
const probeStorage = (dbName: string): Promise<void> =>
  withOwnConnection(dbName, async (db) => {
    const stores = [...db.objectStoreNames]
    if (stores.length > 0) await answerOf(db.transaction(stores, 'readonly').objectStore(stores[0]!).count())
  })

/** The probes `monitorStorage` made that took a while (`ms` undefined: not answered yet). */
const storageProbes: { at: number; ms?: number }[] = []
let monitoring = false

/**
 * Keeps one storage probe in flight, a fresh one 250 ms after the last answered, and keeps those
 * that took over a second. A wait that fails can then tell whether storage stopped answering
 * while it waited: the WebKit stall may end on its own before the wait gives up, so a probe asked
 * only afterwards can miss it.
 */
function monitorStorage(dbName: string): void {
  if (monitoring) return
  monitoring = true
  const next = () => {
    const probe: { at: number; ms?: number } = { at: Date.now() }
    storageProbes.push(probe)
    const done = () => {
      probe.ms = Date.now() - probe.at
      if (probe.ms <= 1_000) storageProbes.splice(storageProbes.indexOf(probe), 1)
      setTimeout(next, 250)
    }
    probeStorage(dbName).then(done, done)
  }
  next()
}

const api: Record<string, (args: never) => unknown> = {
  features: () => ({
    sharedWorker: typeof SharedWorker === 'function',
    locks: typeof navigator.locks?.request === 'function',
    broadcastChannel: typeof BroadcastChannel === 'function',
    indexedDB: typeof indexedDB !== 'undefined',
    storageEstimate: typeof navigator.storage?.estimate === 'function',
    userAgent: navigator.userAgent,
  }),

  async start(config: StartConfig) {
    sessionId = config.sessionId
    const workerName = JSON.stringify({ dbName: config.dbName, provider: config.provider })
    const mode = config.mode ?? 'dedicated'
    if (mode === 'shared' && typeof SharedWorker !== 'function')
      throw new Error('this browser has no SharedWorker')
    client = connect(
      sharedOrDedicated({
        name: workerName,
        prefer: mode,
        shared(name) {
          workersStarted++
          sharedName = name
          return new SharedWorker(new URL('./worker.ts', import.meta.url), { type: 'module', name })
        },
        dedicated() {
          workersStarted++
          worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: workerName })
          return worker
        },
      }),
      {
        timeoutMs: config.timeoutMs ?? 30_000,
        heartbeatMs: config.heartbeatMs ?? 200,
        heartbeatTimeoutMs: config.heartbeatTimeoutMs ?? 2_000,
        startTimeoutMs: config.startTimeoutMs,
        maxRestarts: 5,
      },
    )
    if (!(await client.getSession(sessionId))) await client.createSession({ id: sessionId })
    view = client.open(sessionId, { tail: config.tail ?? 200 })
    view.subscribe(onSnapshot)
    await until(() => view!.getSnapshot().status === 'ready', 20_000, 'the view to be ready')
    return { workersStarted }
  },

  admit: ({ text, id, delivery }: { text: string; id: string; delivery?: 'steer' | 'queue' }) =>
    admit(text, { id, delivery }),
  async cancel({ id }: { id: string }) {
    await need(view, 'view').cancel(id)
    cancelled.add(id)
    return true
  },
  async edit({ id, text }: { id: string; text: string }) {
    await need(view, 'view').edit(id, text)
    return true
  },
  async appendTurns({ from, count }: { from: number; count: number }) {
    const events = Array.from({ length: count }, (_, i) => turnEvents(from + i)).flat()
    const { headSeq } = await need(client, 'client').append(sessionId, events)
    return { headSeq, at: Date.now() }
  },
  snapshot: () => summary(need(view, 'view').getSnapshot()),
  digest: () => viewDigest(),
  traces: () => traces,
  watchKey({ key }: { key: string }) {
    keyTraces.set(key, [])
    return true
  },
  keyTrace: ({ key }: { key: string }) => keyTraces.get(key) ?? [],
  received: () => ({
    acknowledged: [...acknowledged.keys()],
    cancelled: [...cancelled],
    cancelling: [...cancelling],
    failed: Object.fromEntries(failedAdmits),
  }),
  kill() {
    worker?.terminate()
    return { at: Date.now(), workersStarted }
  },
  workers: () => workersStarted,
  /** Shared mode: the name of the shared worker this tab talks to now. */
  sharedWorker: () => sharedName ?? null,
  /** Shared mode: makes the shared worker this tab talks to stuck (see worker.ts). */
  makeStuck() {
    const channel = new BroadcastChannel('contract-stuck')
    channel.postMessage(need(sharedName, 'shared worker'))
    channel.close()
    return true
  },
  /**
   * Whether the database answers a fresh connection of this page (opened here, not in the
   * worker) with a read of all its tables within `ms`: false when a transaction of some
   * connection, begun before this read, still holds one of them.
   */
  storageAnswers: ({ dbName, ms }: { dbName: string; ms: number }) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      probeStorage(dbName).then(
        () => {
          clearTimeout(timer)
          resolve(true)
        },
        () => resolve(false),
      )
    }),
  /** The stored status of each of `ids`' receipts, read from the page's own connection (absent: none). */
  receiptStatuses: ({ dbName, ids }: { dbName: string; ids: string[] }) =>
    withOwnConnection(dbName, async (db) => {
      const store = db.transaction('inputs', 'readonly').objectStore('inputs')
      const receipts = await Promise.all(ids.map((id) => answerOf(store.get(id))))
      const statuses: Record<string, string> = {}
      receipts.forEach((receipt, i) => {
        if (receipt) statuses[ids[i]!] = (receipt as { status: string }).status
      })
      return statuses
    }),
  /** Probes the database from this page from now on, one probe at a time (see `storageStalls`). */
  monitorStorage({ dbName }: { dbName: string }) {
    monitorStorage(dbName)
    return true
  },
  /** Probes that took longer than `overMs` (or have not answered for that long), oldest first. */
  storageStalls: ({ overMs }: { overMs: number }) => {
    const now = Date.now()
    return storageProbes
      .map((probe) => ({ at: probe.at, ms: probe.ms ?? now - probe.at, answered: probe.ms !== undefined }))
      .filter((probe) => probe.ms > overMs)
  },
  /** Waits until the log has no open turn and nothing pending (the runner finished its work). */
  async waitIdle({ ms, session }: { ms: number; session?: string }) {
    await idle(need(client, 'client'), session ?? sessionId, ms)
    return true
  },
  /** The view's message rows with their places in the history tree (no text). */
  places: () =>
    need(view, 'view')
      .getSnapshot()
      .rows.flatMap((row) => (row.kind === 'message' ? [rowPlace(row.message)] : [])),
  /** History: user row `messageId` again as `text` under `id`, through the view (its receipt counts as acknowledged). */
  async resend({ messageId, text, id }: { messageId: string; text: string; id: string }) {
    const receipt = await need(view, 'view').resend(messageId, { text, id })
    acknowledged.set(receipt.id, receipt)
    return { id: receipt.id, status: receipt.status }
  },
  async regenerate({ messageId }: { messageId: string }) {
    await need(view, 'view').regenerate(messageId)
    return true
  },
  /**
   * What an engine that never served this page reads: one made here in the page (host-driven,
   * so it runs and recovers nothing), on `dbName`, closed after. Every row (inactive ones too)
   * with its place, and the visible rows as the view compares them.
   */
  async freshEngine({ dbName }: { dbName: string }) {
    const engine = createEngine({ dbName, broadcast: false })
    try {
      const all = await engine.page(sessionId, { limit: 1000, includeInactive: true })
      const visible = await engine.page(sessionId, { limit: 1000 })
      return {
        headSeq: visible.headSeq,
        all: all.messages.map(rowPlace),
        visible: visible.messages.map(rowText),
      }
    } finally {
      await engine.close()
    }
  },
  /**
   * Admits `text` with one image made in the page (`madeBytes(seed, size)`) into `session`
   * (default: this view's, through the view; another: through the client, created if missing).
   * Answers the receipt's file parts and the SHA-256 of the bytes handed over.
   */
  async admitFile({
    id,
    text,
    seed,
    size,
    session,
  }: {
    id: string
    text: string
    seed: number
    size: number
    session?: string
  }) {
    const bytes = madeBytes(seed, size)
    const sha256 = await sha256Hex(bytes)
    const attachments = [{ name: `made-${seed}.png`, mediaType: 'image/png', data: new Blob([bytes]) }]
    let receipt: InputReceipt
    if (session === undefined || session === sessionId) {
      receipt = await need(view, 'view').admit(text, { id, delivery: 'steer', attachments })
      acknowledged.set(receipt.id, receipt)
    } else {
      const c = need(client, 'client')
      if (!(await c.getSession(session))) await c.createSession({ id: session })
      receipt = await c.admit(session, { text, id, delivery: 'steer', attachments })
    }
    return { sha256, files: receipt.attachments ?? [] }
  },
  /** `attachment(id)` read here: its bytes' SHA-256, size and type, or null when it is gone. */
  async attachmentDigest({ id }: { id: string }) {
    const blob = await need(client, 'client').attachment(id)
    if (!blob) return null
    return { sha256: await sha256Hex(await blob.arrayBuffer()), size: blob.size, type: blob.type }
  },
  async deleteSession({ session }: { session: string }) {
    await need(client, 'client').deleteSession(session)
    return true
  },
  async waitHead({ seq, ms }: { seq: number; ms: number }) {
    await until(() => need(view, 'view').getSnapshot().headSeq >= seq, ms, `the view to reach seq ${seq}`)
    return summary(view!.getSnapshot())
  },
  audit: () => auditNow(),
  async log() {
    const log = await readLog(need(client, 'client'), sessionId)
    return {
      events: log.events.map((e) => ({ seq: e.seq, at: e.at, type: e.type, data: e.data })),
      pending: log.pending.map((r) => r.id),
    }
  },
  // The waits after the admits (a fresh worker 20 s, the log holding still 20 s, the view 10 + 5 s)
  // fit inside `ms` once the admits have settled (each within the call deadline), so a round
  // that misses it says which wait it was in, not just that it was late.
  async faultRound(args: { seed: number; round: number; ms: number }) {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const s = need(view, 'view').getSnapshot()
        const state = `view ${s.status}${s.error ? ` (${s.error.code}: ${s.error.message})` : ''} at seq ${s.headSeq}, ${workersStarted} workers started, ${admitsInFlight} admits in flight`
        reject(new Error(`round ${args.round} did not end within ${args.ms} ms: ${roundPhase}; ${state}`))
      }, args.ms)
    })
    try {
      return await Promise.race([faultRound(args), late])
    } finally {
      clearTimeout(timer)
    }
  },
  startChaos(args: { seed: number; durationMs: number; tag: string }) {
    runChaos(args).catch((error: unknown) => {
      if (chaos) chaos.error = String(error)
    })
    return true
  },
  chaosStatus: () => chaos,
  async loadFrozen({ dbName, version }: { dbName: string; version?: FrozenVersion }) {
    await loadFrozen(dbName, version)
    return true
  },
  chunkRowNames: ({ dbName }: { dbName: string }) => chunkRowNames(dbName),
  compareFrozen: () => compareWithFrozen(need(client, 'client')),
  openNewerVersion: ({ dbName }: { dbName: string }) => openNewerVersion(dbName),
  async stop() {
    await client?.close()
    client = undefined
    worker?.terminate()
    return true
  },
}

async function call(
  name: string,
  args: unknown,
): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  try {
    const method = api[name]
    if (!method) throw new Error(`no contract method ${name}`)
    return { ok: true, value: (await method(args as never)) ?? null }
  } catch (error) {
    const code = isSessionlineError(error) ? `${error.code}: ` : ''
    return { ok: false, error: `${code}${error instanceof Error ? error.message : String(error)}` }
  }
}

;(window as unknown as { contract: unknown }).contract = { call }
document.documentElement.dataset.contract = 'ready'
