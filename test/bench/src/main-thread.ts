/**
 * (15b–d) The page's main thread while the long session opens cold and jumps to turn 1, while a
 * search runs as the user types over the search corpus (`searchRows` rows: 100,000 in the full
 * run), and while a session file imports: sessionline with the engine
 * in the worker (the page holds a `connect()` client and a `SessionView`), against an app on
 * Dexie `liveQuery` in the page (the peers' chat, docs/decisions/0023) doing what it can of the
 * same. A long task is one Chromium reports to `PerformanceObserver` ('longtask': over 50 ms);
 * total blocking time is the sum of each one's time beyond 50 ms; the frame gap is the longest
 * time between two animation frames. Neither side renders DOM: the figures are what the data
 * layer leaves of the page.
 */
import Dexie, { liveQuery, type Table } from 'dexie'
import type { SessionlineClient, SessionView } from '../../../src/client/types'
import type { BenchConfig } from './config'
import { LONG_SESSION } from './env'
import { promptText, prose } from './fixtures'

/** One workload's reading of the main thread. */
export interface MainThreadReading {
  longTasks: number
  longestMs: number
  tbtMs: number
  longestFrameGapMs: number
}

const tasks: { start: number; duration: number }[] = []
let frameGap = 0
let lastFrame = 0
let recording = false
let recordingSince = 0

/**
 * Collects the garbage the harness left on the page before a workload is recorded: seeding the
 * liveQuery chat puts hundreds of thousands of rows through the page's heap, and a major
 * collection it makes due would otherwise land in whichever workload runs next (the bench runs
 * Chromium with `--expose-gc`; without it, nothing is collected).
 */
async function settleHeap(): Promise<void> {
  ;(globalThis as { gc?: () => void }).gc?.()
  await new Promise((r) => setTimeout(r, 100))
}

function frame(now: number) {
  if (recording && lastFrame) frameGap = Math.max(frameGap, now - lastFrame)
  lastFrame = now
  requestAnimationFrame(frame)
}

/** Starts observing long tasks and frames on this page (once). */
export function startRecorder(): void {
  if (
    typeof PerformanceObserver === 'undefined' ||
    !PerformanceObserver.supportedEntryTypes?.includes('longtask')
  )
    throw new Error('this browser reports no long tasks')
  new PerformanceObserver((list) => {
    // Entries arrive after their task: one that began before the recording is not the workload's.
    for (const entry of list.getEntries())
      if (recording && entry.startTime >= recordingSince)
        tasks.push({ start: entry.startTime, duration: entry.duration })
  }).observe({ type: 'longtask' })
  requestAnimationFrame(frame)
}

/** The main thread while `work` runs, from its start to a frame after it ends. */
async function record(work: () => Promise<unknown>): Promise<MainThreadReading> {
  await settleHeap()
  tasks.length = 0
  frameGap = 0
  lastFrame = 0
  recordingSince = performance.now()
  recording = true
  try {
    await work()
    // Long task entries arrive after their task; two frames let the last ones in.
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))
    await new Promise((r) => setTimeout(r, 50))
  } finally {
    recording = false
  }
  let longestMs = 0
  let tbtMs = 0
  for (const t of tasks) {
    longestMs = Math.max(longestMs, t.duration)
    tbtMs += Math.max(0, t.duration - 50)
  }
  return { longTasks: tasks.length, longestMs, tbtMs, longestFrameGapMs: frameGap }
}

function until(view: SessionView, ok: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!ok()) return
      stop()
      resolve()
    }
    const stop = view.subscribe(check)
    check()
  })
}

interface Message {
  id: string
  sessionId: string
  seq: number
  role: string
  text: string
}
type Chat = Dexie & { messages: Table<Message, string> }
const LIVE_DB = 'bench-main-thread-livequery'
const openChat = () => {
  const db = new Dexie(LIVE_DB) as Chat
  db.version(1).stores({ messages: 'id, [sessionId+seq]' })
  return db
}

/**
 * A session as a Dexie chat app stores it, added to the chat: per turn a prompt of about 90
 * characters and an answer of about 400, every fourth turn a tool row too (the shapes of
 * src/fixtures.ts), `turns` turns or until `maxRows` rows. Returns the rows written.
 */
async function seedLiveQuery(db: Chat, sessionId: string, turns: number, maxRows = Number.POSITIVE_INFINITY) {
  let seq = 0
  let batch: Message[] = []
  const add = (message: Omit<Message, 'sessionId' | 'seq'>) => {
    if (seq < maxRows) batch.push({ ...message, sessionId, seq: ++seq })
  }
  for (let turn = 1; turn <= turns && seq < maxRows; turn++) {
    add({ id: `${sessionId}-u${turn}`, role: 'user', text: promptText(turn) })
    if (turn % 4 === 0) add({ id: `${sessionId}-t${turn}`, role: 'tool', text: prose(turn + 7, 120) })
    add({ id: `${sessionId}-a${turn}`, role: 'assistant', text: prose(turn, 400) })
    if (batch.length >= 5_000) {
      await db.messages.bulkPut(batch)
      batch = []
    }
  }
  await db.messages.bulkPut(batch)
  return seq
}

/** The liveQuery chat's search corpus: one session of `searchRows` rows. */
const CORPUS_SESSION = 'corpus'

/** liveQuery of the session's messages, as `useLiveQuery` would subscribe; resolves when `ok`. */
function observe(
  db: Chat,
  sessionId: string,
  filter: ((m: Message) => boolean) | undefined,
  ok: (rows: Message[]) => boolean,
) {
  let stop = () => {}
  const done = new Promise<Message[]>((resolve, reject) => {
    const sub = liveQuery(() => {
      const range = db.messages
        .where('[sessionId+seq]')
        .between([sessionId, Dexie.minKey], [sessionId, Dexie.maxKey], true, true)
      return (filter ? range.filter(filter) : range).toArray()
    }).subscribe({
      next: (rows) => {
        if (ok(rows)) resolve(rows)
      },
      error: reject,
    })
    stop = () => sub.unsubscribe()
  })
  return { done, stop: () => stop() }
}

/** How the page reaches the worker's engines (page.ts). */
export interface MainThreadLinks {
  /** A new engine on the seeded long session: a cold open. */
  long(): Promise<{ client: SessionlineClient; close(): Promise<void> }>
  /** A new engine on an empty database of its own. */
  fresh(): Promise<{ client: SessionlineClient; close(): Promise<void> }>
  /** A new engine on the search corpus of `searchRows` rows (the one (8) built, its index stored). */
  corpus(): Promise<{ client: SessionlineClient; close(): Promise<void> }>
  log(message: string): void
}

/** The keystrokes of a search typed at `KEY_MS` a key: the opening words of a prompt. */
const KEY_MS = 120
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface MainThreadResult {
  coldOpen: { sessionline: MainThreadReading; liveQuery: MainThreadReading; rows: number; liveRows: number }
  search: { sessionline: MainThreadReading; liveQuery: MainThreadReading; query: string; rows: number }
  import: { sessionline: MainThreadReading; bytes: number }
}

export async function runMainThread(links: MainThreadLinks, cfg: BenchConfig): Promise<MainThreadResult> {
  startRecorder()
  links.log(
    `seeding the liveQuery chat with ${cfg.seedTurns.toLocaleString('en')} turns and a ${cfg.searchRows.toLocaleString('en')}-row corpus`,
  )
  await Dexie.delete(LIVE_DB)
  const seeding = openChat()
  const liveRows = await seedLiveQuery(seeding, LONG_SESSION, cfg.seedTurns)
  const corpusRows = await seedLiveQuery(seeding, CORPUS_SESSION, Number.POSITIVE_INFINITY, cfg.searchRows)
  seeding.close()

  // (b) cold open and a jump to turn 1.
  let rows = 0
  const slOpen = await record(async () => {
    const link = await links.long()
    try {
      const view = link.client.open(LONG_SESSION)
      await until(view, () => view.getSnapshot().status !== 'loading' && view.getSnapshot().rows.length > 0)
      const outline = await link.client.projection(LONG_SESSION, 'turnOutline')
      const first = outline[0]!
      await view.jumpTo(first.seq)
      rows = view.getSnapshot().rows.length
      view.dispose()
    } finally {
      await link.close()
    }
  })
  const liveOpen = await record(async () => {
    const db = openChat()
    const seen = observe(db, LONG_SESSION, undefined, (r) => r.length === liveRows)
    await seen.done
    seen.stop()
    db.close()
  })

  // (d) search as you type over the corpus, on a warm engine (its index built and stored before,
  // untimed) and a warm connection; liveQuery filters the corpus session's rows per key.
  const words = promptText(3).split(/\s+/).slice(0, 3).join(' ')
  const corpus = await links.corpus()
  let slSearch: MainThreadReading
  try {
    await corpus.client.search(words, { limit: 50 })
    slSearch = await record(async () => {
      const pending: Promise<unknown>[] = []
      for (let n = 1; n <= words.length; n++) {
        pending.push(corpus.client.search(words.slice(0, n), { limit: 50 }))
        await sleep(KEY_MS)
      }
      await Promise.all(pending)
    })
  } finally {
    await corpus.close()
  }
  const db = openChat()
  await db.messages.count()
  const liveSearch = await record(async () => {
    let current: ReturnType<typeof observe> | undefined
    for (let n = 1; n <= words.length; n++) {
      current?.stop()
      const q = words.slice(0, n).toLowerCase()
      current = observe(
        db,
        CORPUS_SESSION,
        (m) => m.text.toLowerCase().includes(q),
        () => true,
      )
      await sleep(KEY_MS)
    }
    await current?.done
    current?.stop()
  })
  db.close()

  // (c) an import of the long session's own export into a fresh database.
  const link = await links.long()
  const file = await link.client.exportSession(LONG_SESSION)
  await link.close()
  const into = await links.fresh()
  let slImport: MainThreadReading
  try {
    slImport = await record(() => into.client.importTranscript({ blob: file }))
  } finally {
    await into.close()
  }
  await Dexie.delete(LIVE_DB)
  return {
    coldOpen: { sessionline: slOpen, liveQuery: liveOpen, rows, liveRows },
    search: { sessionline: slSearch, liveQuery: liveSearch, query: words, rows: corpusRows },
    import: { sessionline: slImport, bytes: file.size },
  }
}
