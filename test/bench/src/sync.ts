/**
 * Sync throughput in Node, against the Durable Streams reference server in a process of its own
 * (test/sync/server.mjs, in memory; the bench runner starts it, or this script when run alone):
 *
 * - `sync-push`: 10,000 session events (the seeded session's turns, stamped as the engine stores
 *   them and as the export writes them, docs/decisions/0032) pushed into one new stream. The raw
 *   side is the floor: plain `fetch` POSTs of `pushBatch` events each, one at a time, with
 *   Producer headers (what an ordered, idempotent push needs at least). Events per second.
 * - `sync-converge`: two devices that each made `convergeEvents` events offline reconnect to
 *   one stream; time from the reconnect until both have read every event of the other. The raw
 *   side pushes both logs at once and reads the stream back on each device until it holds all.
 *
 *   node --import tsx test/bench/src/sync.ts <out.json> '{"pushEvents":10000,"pushBatch":100,"reps":3}'
 *
 * The sessionline sides plug in below ({@link sessionlinePush}, {@link sessionlineConverge})
 * once `engine.sync` lands (issue 29). Until then the step reports the raw figures only and says
 * so: a ratio needs both sides of the same run.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { StoredEvent } from '../../../src/schema/events'
import { chunks, Stamper, seededTurns } from './fixtures'

/** Where a side pushes: the server's stream base (a stream is `${streams}/<name>`). */
export interface SyncTarget {
  streams: string
}

/**
 * The sessionline side of `sync-push`, to be written when `engine.sync` lands: an engine (in
 * Node on fake-indexeddb, or in the bench page) holding a session of `events`, synced with
 * `engine.sync(sessionId, {url})` to a stream under `target.streams`, resolving when
 * `engine.syncStatus(sessionId)` reports `pending: 0`. Timed from the `sync` call.
 */
export const sessionlinePush:
  | ((target: SyncTarget, events: readonly StoredEvent[]) => Promise<void>)
  | undefined = undefined

/**
 * The sessionline side of `sync-converge`, to be written when `engine.sync` lands: two engines
 * (two devices) each holding `events[0]` / `events[1]` made offline on a session both know,
 * synced to one stream; resolving when both report the same head and `pending: 0`.
 */
export const sessionlineConverge:
  | ((target: SyncTarget, events: readonly [readonly StoredEvent[], readonly StoredEvent[]]) => Promise<void>)
  | undefined = undefined

/** What the step reports. */
export interface SyncFigure {
  id: 'sync-push' | 'sync-converge'
  name: string
  events: number
  /** JSON bytes of the events, as posted. */
  bytes: number
  batch: number
  /** Raw side: the median time, each repetition's, and events per second at the median. */
  raw: { median: number; all: number[]; eventsPerSecond: number }
  /** null until the sessionline side is plugged in. */
  sessionline: { median: number; all: number[]; eventsPerSecond: number } | null
  /** sessionline time ÷ raw time, in the same run; null without a sessionline side. */
  ratio: number | null
  note: string
}

const NOT_YET = 'sessionline side: not yet (engine.sync has not landed); raw figure only'

/** `count` events of the seeded session (prompts, tool calls, answers), stamped from seq 1. */
export function sessionEvents(sessionId: string, count: number, idPrefix = ''): StoredEvent[] {
  const stamper = new Stamper(sessionId, 1)
  const events: StoredEvent[] = []
  for (let turn = 1; events.length < count; turn += 50) {
    const at = Date.UTC(2026, 0, 1) + turn * 60_000
    events.push(...stamper.stamp(seededTurns(turn, turn + 49, idPrefix), at).events)
  }
  return events.slice(0, count)
}

const JSON_TYPE = { 'content-type': 'application/json' }

async function createStream(url: string): Promise<void> {
  const response = await fetch(url, { method: 'PUT', headers: JSON_TYPE })
  if (response.status !== 201) throw new Error(`creating ${url}: ${response.status}`)
}

/** POSTs `events` in batches, in order, one request in flight, as producer `producer`. */
async function pushRaw(url: string, events: readonly StoredEvent[], batch: number, producer: string) {
  let seq = 0
  for (const part of chunks(events, batch)) {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        ...JSON_TYPE,
        'producer-id': producer,
        'producer-epoch': '0',
        'producer-seq': String(seq++),
      },
      body: JSON.stringify(part),
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

/** Reads a stream whole; checks that the work measured was done. */
async function messagesIn(url: string): Promise<number> {
  const response = await fetch(`${url}?offset=-1`)
  return ((await response.json()) as unknown[]).length
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function timed(run: () => Promise<void>): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

function figure(times: number[], events: number) {
  const m = median(times)
  return { median: m, all: times, eventsPerSecond: Math.round(events / (m / 1000)) }
}

/** Both sides' figures and their ratio; the raw one alone (and says so) until ours exists. */
function sides(raw: number[], ours: number[], events: number) {
  if (ours.length === 0) return { raw: figure(raw, events), sessionline: null, ratio: null, note: NOT_YET }
  const sessionline = figure(ours, events)
  return { raw: figure(raw, events), sessionline, ratio: sessionline.median / median(raw), note: '' }
}

/** The server in a child process, so that its work does not share this event loop. */
async function startServer(): Promise<{ target: SyncTarget; stop: () => Promise<void> }> {
  const script = fileURLToPath(new URL('../../sync/server.mjs', import.meta.url))
  const child: ChildProcess = spawn(process.execPath, [script, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise((done) => child.once('exit', done))
  let output = ''
  const streams = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the sync server did not start: ${output}`)), 15_000)
    child.stdout?.on('data', (d) => {
      output += d
      const found = /streams: (\S+)\/<name>\n/.exec(output)?.[1]
      if (found) {
        clearTimeout(timer)
        resolve(found)
      }
    })
    child.once('exit', () => reject(new Error(`the sync server exited: ${output}`)))
  })
  return {
    target: { streams },
    stop: async () => {
      child.kill('SIGTERM')
      await exited
    },
  }
}

export interface SyncRequest {
  /** The stream base of a server already running (the bench runner starts one); omitted: one is started here. */
  streams?: string
  pushEvents?: number
  pushBatch?: number
  convergeEvents?: number
  reps?: number
  steps?: ('sync-push' | 'sync-converge')[]
}

/** Runs the requested sync steps; every repetition on a fresh stream. */
export async function measureSync(request: SyncRequest = {}): Promise<SyncFigure[]> {
  const {
    pushEvents = 10_000,
    pushBatch = 100,
    convergeEvents = 1_000,
    reps = 3,
    steps = ['sync-push', 'sync-converge'],
  } = request
  const server = request.streams
    ? { target: { streams: request.streams }, stop: async () => {} }
    : await startServer()
  const figures: SyncFigure[] = []
  let streamNo = 0
  const fresh = async (name: string) => {
    const url = `${server.target.streams}/${name}-${++streamNo}`
    await createStream(url)
    return url
  }
  try {
    if (steps.includes('sync-push')) {
      const events = sessionEvents('bench-sync', pushEvents)
      await pushRaw(await fresh('warm-up'), events.slice(0, 1000), pushBatch, 'warm-up')
      const times: number[] = []
      const ours: number[] = []
      for (let rep = 0; rep < reps; rep++) {
        // The sides alternate which goes first, as the browser steps do.
        const order = [
          async () => {
            const url = await fresh('push')
            times.push(await timed(() => pushRaw(url, events, pushBatch, 'device-a')))
            if ((await messagesIn(url)) !== events.length) throw new Error('sync-push: raw events missing')
          },
          async () => {
            if (!sessionlinePush) return
            ours.push(await timed(() => sessionlinePush!(server.target, events)))
          },
        ]
        for (const side of rep % 2 ? order.reverse() : order) await side()
      }
      figures.push({
        id: 'sync-push',
        name: `push ${pushEvents.toLocaleString('en')} events to a new stream`,
        events: events.length,
        bytes: JSON.stringify(events).length,
        batch: pushBatch,
        ...sides(times, ours, events.length),
      })
    }
    if (steps.includes('sync-converge')) {
      const a = sessionEvents('bench-converge', convergeEvents, 'a-')
      const b = sessionEvents('bench-converge', convergeEvents, 'b-')
      const total = a.length + b.length
      const times: number[] = []
      const ours: number[] = []
      for (let rep = 0; rep < reps; rep++) {
        const url = await fresh('converge')
        times.push(
          await timed(async () => {
            await Promise.all([
              pushRaw(url, a, pushBatch, 'device-a').then(() => readUntil(url, total)),
              pushRaw(url, b, pushBatch, 'device-b').then(() => readUntil(url, total)),
            ])
          }),
        )
        if (sessionlineConverge) ours.push(await timed(() => sessionlineConverge!(server.target, [a, b])))
      }
      figures.push({
        id: 'sync-converge',
        name: `two devices, ${convergeEvents.toLocaleString('en')} offline events each: reconnect to equal heads`,
        events: total,
        bytes: JSON.stringify(a).length + JSON.stringify(b).length,
        batch: pushBatch,
        ...sides(times, ours, total),
      })
    }
  } finally {
    await server.stop()
  }
  return figures
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [out, request] = process.argv.slice(2)
  if (!out) throw new Error('usage: sync.ts <out.json> [request JSON]')
  const sync = await measureSync(JSON.parse(request ?? '{}') as SyncRequest)
  writeFileSync(out, `${JSON.stringify({ sync }, null, 2)}\n`)
}
