/**
 * `admit-under-load` (issue 28): what a user's admit waits while the same worker is busy with
 * the two heaviest things it does in the background, against the same admits with nothing else
 * running. Both sides are a fresh engine on one database holding the search corpus (`searchRows`
 * demo-seeded rows, seeded once here, untimed):
 *
 * - loaded: an answer streams into a session of its own at STREAM_CHARS_PER_SECOND (an append of
 *   a delta every STREAM_TICK_MS, sized by the time elapsed, so a late tick catches up), and a
 *   search builds every session's index from its rows (the stored index dropped first); admits
 *   into a third session, one every ADMIT_EVERY_MS, from the build's start until it answers;
 * - alone: `admitCalls` admits into a fresh session, one every ADMIT_EVERY_MS.
 *
 * A repetition's figure is the p95 of its admits; the sides alternate which goes first, after an
 * untimed warm-up repetition of each, and the headline is the median of the repetitions' p95s.
 */
import { PERSIST_DELAY } from '../../../src/engine/search/index'
import type { Engine } from '../../../src/engine/types'
import { createEngine } from '../../../src/index'
import { openDb } from '../../../src/store/db'
import type { BenchConfig } from './config'
import type { BenchEnv } from './env'
import { newSessionId } from './env'
import { promptText, prose } from './fixtures'
import { seedCorpus } from './search'
import { type Comparison, compare, figure } from './stats'

export const UNDER_LOAD_DB = 'bench-under-load'
/** The stream the issue names: 5,000 characters a second. */
export const STREAM_CHARS_PER_SECOND = 5000
/** One delta append this often (a runner flushing a fast model's text). */
const STREAM_TICK_MS = 50
/**
 * Admits start this far apart: 100 a second, far more than a person sends, yet with gaps. Admits
 * issued back to back measured the page lock instead: a write waits for the read transaction
 * in flight over its tables, the build's next read for the write, and the two went in lockstep,
 * the build one page further per admit and every admit one page read slower.
 */
const ADMIT_EVERY_MS = 10

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function p95(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] ?? 0
}

/** An answer streamed into a fresh session of `engine` until `stop` is called; what it wrote. */
async function startStream(engine: Engine, rep: number) {
  const { id } = await engine.createSession({ id: newSessionId('under-load-stream', rep) })
  await engine.admit(id, { id: `${id}-in1`, text: promptText(1), delivery: 'steer' })
  await engine.promote(id, 'settled')
  const messageId = `${id}-m1`
  await engine.append(id, [
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn: 1, step: 1 } },
  ])
  let running = true
  let chars = 0
  let appends = 0
  const started = performance.now()
  const done = (async () => {
    while (running) {
      await sleep(STREAM_TICK_MS)
      const due = Math.floor(((performance.now() - started) * STREAM_CHARS_PER_SECOND) / 1000) - chars
      if (due <= 0) continue
      await engine.append(id, [{ type: 'assistant/delta', data: { messageId, text: prose(appends, due) } }])
      chars += due
      appends++
    }
  })()
  return {
    async stop() {
      running = false
      await done
      const seconds = (performance.now() - started) / 1000
      return { chars, appends, seconds }
    },
  }
}

/**
 * Admits into a fresh session of `engine`, one every ADMIT_EVERY_MS (or right after the one
 * before, when that took longer), while `more()`; each one's ms.
 */
async function admitWhile(engine: Engine, rep: number, more: (done: number) => boolean): Promise<number[]> {
  const { id } = await engine.createSession({ id: newSessionId('under-load-admit', rep) })
  // The session's first write is paid outside the timing on both sides.
  await engine.admit(id, { id: `${id}-warm`, text: prose(0, 100), delivery: 'steer' })
  const times: number[] = []
  const started = performance.now()
  for (let i = 0; more(times.length); i++) {
    const wait = started + i * ADMIT_EVERY_MS - performance.now()
    if (wait > 0) await sleep(wait)
    const t0 = performance.now()
    await engine.admit(id, { id: `${id}-in${i}`, text: prose(i, 100), delivery: 'steer' })
    times.push(performance.now() - t0)
  }
  return times
}

/** Runs in the worker: `admit-under-load`. */
export async function runAdmitUnderLoad(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  env.log(`admit-under-load: seeding a corpus of ${cfg.searchRows} rows`)
  const seeded = await seedCorpus(env, cfg, UNDER_LOAD_DB)
  await seeded.engine.close()
  const db = openDb(UNDER_LOAD_DB, env.engine)
  const open = () => createEngine({ ...env.engine, dbName: UNDER_LOAD_DB })
  const alone: number[][] = []
  const loaded: number[][] = []
  const builds: number[] = []
  const streamed: { chars: number; appends: number; seconds: number }[] = []

  const aloneRep = async (rep: number) => {
    const engine = open()
    try {
      return await admitWhile(engine, rep, (done) => done < cfg.admitCalls)
    } finally {
      await engine.close()
    }
  }
  const loadedRep = async (rep: number) => {
    // The stored index goes, so the search below builds every session's index from its rows.
    await db.search.clear()
    const engine = open()
    try {
      const stream = await startStream(engine, rep)
      // Let the stream reach its pace (and its session's index its first sync) before the build.
      await sleep(4 * STREAM_TICK_MS)
      let building = true
      const t0 = performance.now()
      const build = engine.search('retry policy').finally(() => {
        building = false
      })
      const times = await admitWhile(engine, rep, (done) => building || done === 0)
      await build
      const buildMs = performance.now() - t0
      const wrote = await stream.stop()
      return { times, buildMs, wrote }
    } finally {
      // Closing writes the built index; the next loaded repetition drops it again.
      await engine.close()
    }
  }

  try {
    for (let rep = -1; rep < cfg.underLoadReps; rep++) {
      env.log(`admit-under-load: repetition ${rep < 0 ? 'warm-up' : rep + 1} of ${cfg.underLoadReps}`)
      const order = rep % 2 === 0 ? (['alone', 'loaded'] as const) : (['loaded', 'alone'] as const)
      for (const side of order) {
        if (side === 'alone') {
          const times = await aloneRep(rep)
          if (rep >= 0) alone.push(times)
        } else {
          const { times, buildMs, wrote } = await loadedRep(rep)
          if (rep >= 0) {
            loaded.push(times)
            builds.push(buildMs)
            streamed.push(wrote)
          }
        }
        // What the last engine left in the background (its index written) is over before the next.
        await sleep(PERSIST_DELAY / 4)
      }
    }
  } finally {
    db.close()
  }

  const perRep = (reps: number[][]) => reps.map(p95)
  const pooled = (reps: number[][]) => p95(reps.flat())
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
  const mid = (xs: number[]) => sorted(xs)[xs.length >> 1] ?? 0
  const charsPerSecond = streamed.map((s) => s.chars / s.seconds)
  const admitsLoaded = loaded.map((t) => t.length)
  const ms = (x: number) => `${x.toFixed(1)} ms`
  return [
    compare(
      {
        id: 'admit-under-load',
        name: `admit p95 while a ${STREAM_CHARS_PER_SECOND.toLocaleString('en-US')} chars/s stream and a ${seeded.rows.toLocaleString('en-US')}-row index build run, vs alone`,
        op: 'admit (p95 of a repetition)',
        target: 2,
        note:
          `pooled p95 ${ms(pooled(loaded))} loaded vs ${ms(pooled(alone))} alone; ` +
          `an admit every ${ADMIT_EVERY_MS} ms: ${mid(admitsLoaded)} per loaded repetition [${Math.min(...admitsLoaded)}–${Math.max(...admitsLoaded)}] during a build of ${Math.round(mid(builds))} ms ` +
          `(${Math.round((mid(builds) * 100_000) / seeded.rows)} ms per 100,000 rows), ${cfg.admitCalls} alone; ` +
          `the stream wrote ${Math.round(mid(charsPerSecond)).toLocaleString('en-US')} chars/s in ${mid(streamed.map((s) => s.appends))} appends; ` +
          'raw: the same admits on a fresh engine with nothing else running',
      },
      figure(perRep(loaded), 1),
      figure(perRep(alone), 1),
    ),
  ]
}
