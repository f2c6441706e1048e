/**
 * Sync throughput against a Durable Streams server already running (the runner starts
 * test/sync/server.mjs, in memory, in a process of its own). Portable: the browser run calls it
 * in the bench worker on Chromium's IndexedDB, `--node` and `src/sync.ts` in Node on
 * fake-indexeddb. Both sides run in the same place, with the same `fetch`.
 *
 * - `sync-push`: a session of about 10,000 events (the seeded session's whole turns, appended
 *   through the engine before the clock starts) synced to a new stream: from `engine.sync` until
 *   its status is `live` with `pending: 0` (its batches pushed, read back and confirmed). The raw
 *   side is the floor: plain `fetch` POSTs of **the very messages our sync posted** (read back
 *   from the untimed warm-up's stream: same count, same events per message, same bytes), one at
 *   a time, with Producer headers, after the same PUT. Events per second.
 * - `sync-converge`: two engines (two databases) share a session; each stops syncing, appends
 *   about 1,000 events of whole turns, and both call `sync` again at once: from there until both
 *   are `live`, `pending: 0`, on the same head. The raw side posts both devices' messages (again
 *   the warm-up's, per device) at once and reads the stream on each device until it holds all.
 */
import type { Engine } from '../../../src/engine/types'
import { createEngine } from '../../../src/index'
import type { SyncStatus } from '../../../src/schema/sync'
import { createSessionSync } from '../../../src/sync'
import type { BenchEnv } from './env'
import { seededTurn } from './fixtures'
import { openRaw } from './raw'

/** Where a side pushes: the server's stream base (a stream is `${streams}/<name>`). */
export interface SyncTarget {
  streams: string
}

/** One side's figure: the median time, each repetition's, and events per second at the median. */
export interface SyncSide {
  median: number
  all: number[]
  eventsPerSecond: number
}

/** What the step reports. */
export interface SyncFigure {
  id: 'sync-push' | 'sync-converge'
  name: string
  events: number
  /** JSON bytes of the messages, as posted. */
  bytes: number
  /** The most events in one POST (our cut: at most 500 unless one turn is longer, ending between turns). */
  batch: number
  /** POSTs per repetition, the same on both sides. */
  posts: number
  /** Where the engine's IndexedDB was. */
  where: string
  raw: SyncSide
  sessionline: SyncSide | null
  /** sessionline time ÷ raw time, in the same run; null without a sessionline side. */
  ratio: number | null
  note: string
}

export interface SyncRequest {
  /** The stream base of a running server (`${url}/v1/stream`). */
  streams: string
  pushEvents?: number
  convergeEvents?: number
  reps?: number
  steps?: ('sync-push' | 'sync-converge')[]
}

/** The environment of a run: IndexedDB for the engines and raw Dexie (to delete databases), and a label. */
export type SyncEnv = Pick<BenchEnv, 'dexie' | 'engine' | 'log'> & { where: string }

const JSON_TYPE = { 'content-type': 'application/json' }

/** The seeded session's whole turns from `from`, until they hold at least `events` events. */
function wholeTurns(from: number, events: number, idPrefix: string) {
  const out: ReturnType<typeof seededTurn> = []
  let turn = from
  while (out.length < events) out.push(...seededTurn(turn++, idPrefix))
  return { events: out, nextTurn: turn }
}

async function createStream(url: string): Promise<void> {
  const response = await fetch(url, { method: 'PUT', headers: JSON_TYPE })
  if (response.status !== 201 && response.status !== 200)
    throw new Error(`creating ${url}: ${response.status}`)
}

/** POSTs each body as one message, in order, one request in flight, as producer `producer`. */
async function pushRaw(url: string, bodies: readonly string[], producer: string) {
  let seq = 0
  for (const body of bodies) {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        ...JSON_TYPE,
        'producer-id': producer,
        'producer-epoch': '0',
        'producer-seq': String(seq++),
      },
      body,
    })
    if (response.status !== 200)
      throw new Error(`append to ${url}: ${response.status} ${await response.text()}`)
  }
}

/** Reads the stream from the start, then long-polls, until it holds `count` messages. */
async function readUntil(url: string, count: number): Promise<void> {
  let offset = '-1'
  let seen = 0
  while (seen < count) {
    const live = offset === '-1' ? '' : '&live=long-poll'
    const response = await fetch(`${url}?offset=${encodeURIComponent(offset)}${live}`)
    if (response.status === 200) seen += ((await response.json()) as unknown[]).length
    else if (response.status !== 204) throw new Error(`read ${url}: ${response.status}`)
    offset = response.headers.get('stream-next-offset') ?? offset
  }
  if (seen !== count) throw new Error(`read ${url}: ${seen} messages, expected ${count}`)
}

/** A batch as our sync posts it (only what the bench looks at). */
interface PostedBatch {
  device: string
  events: unknown[]
}

/** A stream's messages, whole. */
async function messagesIn(url: string): Promise<PostedBatch[]> {
  const response = await fetch(`${url}?offset=-1`)
  if (response.status !== 200) throw new Error(`read ${url}: ${response.status}`)
  return (await response.json()) as PostedBatch[]
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

function figure(times: number[], events: number): SyncSide {
  const m = median(times)
  return { median: m, all: times, eventsPerSecond: Math.round(events / (m / 1000)) }
}

/** The server's base URL (what `engine.sync` takes) from its stream base. */
const baseOf = (target: SyncTarget) => target.streams.replace(/\/v1\/stream\/?$/, '')
/** The stream `engine.sync` uses for a session (as `streamUrl` in src/sync/stream-http.ts builds it). */
const streamOf = (target: SyncTarget, sessionId: string) =>
  `${target.streams}/sessionline/${encodeURIComponent(sessionId)}`

let databases = 0
/** An engine with sync on a fresh database. */
async function syncEngine(env: SyncEnv, what: string): Promise<{ engine: Engine; drop(): Promise<void> }> {
  const dbName = `bench-sync-${what}-${++databases}`
  await openRaw(dbName, env.dexie).delete()
  const engine = createEngine({ ...env.engine, dbName, sync: createSessionSync() })
  return {
    engine,
    async drop() {
      await engine.close()
      await openRaw(dbName, env.dexie).delete()
    },
  }
}

const settled = (s: SyncStatus | undefined) => s?.state === 'live' && s.pending === 0

/**
 * Resolves once `done()` holds; checked on every sync status change of the session on any of
 * `engines` (and every 25 ms, in case the last change came before the check could see it).
 * Rejects when a sync stops on `error` or `fenced`.
 */
async function until(
  engines: readonly Engine[],
  sessionId: string,
  done: () => Promise<boolean>,
  timeoutMs = 120_000,
): Promise<void> {
  let wake: () => void = () => undefined
  let failed: Error | undefined
  const stops = await Promise.all(
    engines.map((engine) =>
      engine
        .watch(sessionId, (change) => {
          const s = change.sync
          if (!s) return
          if (s.state === 'error' || s.state === 'fenced')
            failed = new Error(`sync ${s.state}: ${s.error?.code} ${s.error?.message}`)
          wake()
        })
        // A device that pulls the session has nothing to watch yet: the 25 ms checks serve it.
        .catch(() => () => undefined),
    ),
  )
  const deadline = Date.now() + timeoutMs
  try {
    for (;;) {
      if (failed) throw failed
      if (await done()) return
      if (Date.now() > deadline) throw new Error(`sync: not done after ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 25)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  } finally {
    for (const stop of stops) stop()
  }
}

let sessions = 0

/**
 * One timed sessionline push: a fresh database holding a session of whole turns (appended
 * untimed), then `sync` until live with nothing pending. Answers the time, the head and the
 * stream it pushed to.
 */
async function sessionlinePush(env: SyncEnv, target: SyncTarget, events: number) {
  const device = await syncEngine(env, 'push')
  const { engine } = device
  try {
    const sessionId = `bench-push-${++sessions}`
    await engine.createSession({ id: sessionId, title: 'sync push' })
    const turns = wholeTurns(1, events - 1, 'p-').events
    // Appended 2,000 events a call, as an app that seeded it would; untimed.
    for (let i = 0; i < turns.length; ) {
      let end = Math.min(turns.length, i + 2000)
      while (end < turns.length && turns[end]!.type !== 'turn/start') end++
      await engine.append(sessionId, turns.slice(i, end))
      i = end
    }
    const head = (await engine.getSession(sessionId))!.headSeq
    const started = performance.now()
    await engine.sync(sessionId, { url: baseOf(target) })
    await until([engine], sessionId, async () => settled(await engine.syncStatus(sessionId)))
    const ms = performance.now() - started
    const stream = streamOf(target, sessionId)
    const posted = await messagesIn(stream)
    const pushed = posted.reduce((n, m) => n + m.events.length, 0)
    if (pushed !== head) throw new Error(`sync-push: the stream holds ${pushed} events, the session ${head}`)
    return { ms, head, posted }
  } finally {
    await device.drop()
  }
}

/**
 * One timed convergence: device A makes a session of one turn and syncs it, device B syncs and
 * pulls it; both stop syncing and append `events` (whole turns, each device its own ids), then
 * both sync again at once and the clock runs until both are live, nothing pending, same head.
 */
async function sessionlineConverge(env: SyncEnv, target: SyncTarget, events: number) {
  const a = await syncEngine(env, 'converge-a')
  const b = await syncEngine(env, 'converge-b')
  try {
    const sessionId = `bench-converge-${++sessions}`
    const url = baseOf(target)
    await a.engine.createSession({ id: sessionId, title: 'sync converge' })
    await a.engine.append(sessionId, seededTurn(1, 's-'))
    await a.engine.sync(sessionId, { url })
    await until([a.engine], sessionId, async () => settled(await a.engine.syncStatus(sessionId)))
    const shared = (await a.engine.getSession(sessionId))!.headSeq
    await b.engine.sync(sessionId, { url })
    await until([b.engine], sessionId, async () => {
      const [status, info] = await Promise.all([
        b.engine.syncStatus(sessionId),
        b.engine.getSession(sessionId),
      ])
      return settled(status) && info?.headSeq === shared
    })
    await Promise.all([a.engine.unsync(sessionId), b.engine.unsync(sessionId)])
    const offline = [wholeTurns(2, events, 'a-').events, wholeTurns(2, events, 'b-').events] as const
    await a.engine.append(sessionId, offline[0])
    await b.engine.append(sessionId, offline[1])
    const both = [a.engine, b.engine]
    const started = performance.now()
    await Promise.all(both.map((engine) => engine.sync(sessionId, { url })))
    await until(both, sessionId, async () => {
      const [sa, sb, ia, ib] = await Promise.all([
        a.engine.syncStatus(sessionId),
        b.engine.syncStatus(sessionId),
        a.engine.getSession(sessionId),
        b.engine.getSession(sessionId),
      ])
      return settled(sa) && settled(sb) && ia !== undefined && ia.headSeq === ib?.headSeq
    })
    const ms = performance.now() - started
    const head = (await a.engine.getSession(sessionId))!.headSeq
    // Both logs hold the shared turn, both offline runs and a `history/head` per rebased batch.
    const least = shared + offline[0].length + offline[1].length
    if (head <= least) throw new Error(`sync-converge: head ${head}, expected more than ${least}`)
    const posted = await messagesIn(streamOf(target, sessionId))
    return { ms, offlineEvents: offline[0].length + offline[1].length, posted: posted.slice(1) }
  } finally {
    await Promise.all([a.drop(), b.drop()])
  }
}

/** The same messages, one body per POST, as our sync sent them (`[message]`: one message each). */
const bodiesOf = (messages: readonly PostedBatch[]) => messages.map((m) => JSON.stringify([m]))
const bytesOf = (bodies: readonly string[]) => bodies.reduce((n, b) => n + b.length, 0)
const largest = (messages: readonly PostedBatch[]) => Math.max(...messages.map((m) => m.events.length))

/** Runs the requested sync steps; every repetition on fresh streams and fresh databases. */
export async function measureSync(env: SyncEnv, request: SyncRequest): Promise<SyncFigure[]> {
  const {
    pushEvents = 10_000,
    convergeEvents = 1_000,
    reps = 3,
    steps = ['sync-push', 'sync-converge'],
  } = request
  const target = { streams: request.streams }
  const figures: SyncFigure[] = []
  let streamNo = 0
  const fresh = async (name: string) => {
    const url = `${target.streams}/${name}-${Date.now()}-${++streamNo}`
    await createStream(url)
    return url
  }
  const timed = async (run: () => Promise<void>) => {
    const started = performance.now()
    await run()
    return performance.now() - started
  }

  if (steps.includes('sync-push')) {
    env.log('sync-push: warm-up (untimed)')
    // The warm-up's stream gives the raw side its bodies: the messages our sync posted.
    const warm = await sessionlinePush(env, target, pushEvents)
    const bodies = bodiesOf(warm.posted)
    await pushRaw(await fresh('warm-up'), bodies, 'warm-up')
    const raw: number[] = []
    const ours: number[] = []
    for (let rep = 0; rep < reps; rep++) {
      // The sides alternate which goes first, as the browser steps do.
      const order = [
        async () => {
          const url = `${target.streams}/push-raw-${Date.now()}-${++streamNo}`
          raw.push(
            await timed(async () => {
              await createStream(url)
              await pushRaw(url, bodies, 'device-a')
            }),
          )
          if ((await messagesIn(url)).length !== bodies.length)
            throw new Error('sync-push: raw messages missing')
        },
        async () => {
          const run = await sessionlinePush(env, target, pushEvents)
          if (run.posted.length !== bodies.length || run.head !== warm.head)
            throw new Error(
              `sync-push: ${run.posted.length} POSTs of ${run.head} events, the warm-up made ${bodies.length} of ${warm.head}`,
            )
          ours.push(run.ms)
        },
      ]
      for (const side of rep % 2 ? order.reverse() : order) await side()
      env.log(
        `sync-push rep ${rep}: sessionline ${ours.at(-1)?.toFixed(0)} ms, raw ${raw.at(-1)?.toFixed(0)} ms`,
      )
    }
    const sessionline = figure(ours, warm.head)
    figures.push({
      id: 'sync-push',
      name: `push a ${warm.head.toLocaleString('en')}-event session to a new stream`,
      events: warm.head,
      bytes: bytesOf(bodies),
      batch: largest(warm.posted),
      posts: bodies.length,
      where: env.where,
      raw: figure(raw, warm.head),
      sessionline,
      ratio: sessionline.median / median(raw),
      note: '',
    })
  }

  if (steps.includes('sync-converge')) {
    env.log('sync-converge: warm-up (untimed)')
    const warm = await sessionlineConverge(env, target, convergeEvents)
    const devices = [...new Set(warm.posted.map((m) => m.device))]
    const perDevice = devices.map((d) => bodiesOf(warm.posted.filter((m) => m.device === d)))
    const all = perDevice.flat()
    const raw: number[] = []
    const ours: number[] = []
    for (let rep = 0; rep < reps; rep++) {
      const order = [
        async () => {
          const url = await fresh('converge-raw')
          raw.push(
            await timed(async () => {
              await Promise.all(
                perDevice.map((bodies, i) =>
                  pushRaw(url, bodies, `device-${i}`).then(() => readUntil(url, all.length)),
                ),
              )
            }),
          )
        },
        async () => ours.push((await sessionlineConverge(env, target, convergeEvents)).ms),
      ]
      for (const side of rep % 2 ? order.reverse() : order) await side()
      env.log(
        `sync-converge rep ${rep}: sessionline ${ours.at(-1)?.toFixed(0)} ms, raw ${raw.at(-1)?.toFixed(0)} ms`,
      )
    }
    const sessionline = figure(ours, warm.offlineEvents)
    figures.push({
      id: 'sync-converge',
      name: `two devices, ${warm.offlineEvents.toLocaleString('en')} offline events in all: reconnect to equal heads`,
      events: warm.offlineEvents,
      bytes: bytesOf(all),
      batch: largest(warm.posted),
      posts: all.length,
      where: env.where,
      raw: figure(raw, warm.offlineEvents),
      sessionline,
      ratio: sessionline.median / median(raw),
      note: '',
    })
  }
  return figures
}
