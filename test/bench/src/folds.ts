/**
 * Fold throughput in Node (`fold-transcript`, `fold-outline`): events per second of a plain
 * replay of each fold over generated logs of 1,000 and 100,000 turns (27 events a turn: a
 * prompt, a tool step and an answer step with streamed deltas). A fold must run as fast at
 * 100,000 turns as at 1,000; a cost that grows with the session shows up as a falling figure.
 *
 *   node --expose-gc --import tsx test/bench/src/folds.ts <out.json> '{"turns":[1000,100000]}'
 *
 * Each figure is the median of several timed replays after warm-up replays (the first replays
 * of a short log measure the JIT, not the fold); a short log is replayed several times per
 * sample so that every sample folds at least ~1M events. Every fold and size is warmed up before
 * any is timed, and their samples are interleaved (one of each in turn), so that neither the
 * first figure (measured while the heap is still growing to its working size) nor a spell of
 * load on a shared machine falls on one figure alone. Time is this process's CPU time (user +
 * system, collector threads included), not wall time: the figure is events per CPU-second, which
 * a machine shared with other work does not distort the way it distorts a stopwatch.
 */
import { writeFileSync } from 'node:fs'
import { createTranscriptReplay, initTranscript } from '../../../src/core/transcript'
import { createOutlineReplay, turnOutline } from '../../../src/core/turn-outline'
import type { StoredEvent } from '../../../src/schema/events'

/**
 * A fold carried across batches of events, the way the engine's rebuild reads a long log
 * (REBUILD_BATCH events a read): only the fold's own state and one batch are alive at a time.
 */
interface Fold {
  start(): void
  add(batch: readonly StoredEvent[]): void
  /** Something derived from the end state, so the work cannot be optimized away. */
  end(): number
}

/**
 * The transcript fold as the engine's rebuild and `foldEvents` run it: a transient replay per
 * batch (core/transcript `createTranscriptReplay`), whose rows equal the pure fold's.
 */
function transcriptFold(): Fold {
  let state = initTranscript()
  let rows = 0
  const count = () => {
    rows++
  }
  return {
    start: () => {
      state = initTranscript()
      rows = 0
    },
    add(batch) {
      const replay = createTranscriptReplay(state, count)
      for (const event of batch) replay.add(event)
      state = replay.state()
    },
    end: () => rows + state.lastTurn,
  }
}

/**
 * The outline fold as `foldEvents` runs it: a transient replay per batch (core/turn-outline
 * `createOutlineReplay`), whose states equal the pure fold's.
 */
function outlineFold(): Fold {
  let state = turnOutline.init()
  return {
    start: () => {
      state = turnOutline.init()
    },
    add(batch) {
      const replay = createOutlineReplay(state)
      for (const event of batch) replay.add(event)
      state = replay.state()
    },
    end: () => turnOutline.view(state).length,
  }
}

const FOLDS = { transcript: transcriptFold, outline: outlineFold }

/** Events per batch, as the engine's rebuild reads them. */
const BATCH = 5000

/**
 * A log the way the engine writes one, in batches: every turn the same 27 events (a prompt, a
 * tool step, an answer step with streamed deltas), ids unique per turn.
 */
export function* generatedLog(turns: number, batchSize = BATCH): Generator<StoredEvent[]> {
  let batch: StoredEvent[] = []
  let seq = 0
  const push = (type: StoredEvent['type'], data: unknown) => {
    seq += 1
    batch.push({ sessionId: 'bench', seq, at: seq, type, data } as StoredEvent)
  }
  push('session/created', { title: 'folds' })
  for (let turn = 1; turn <= turns; turn++) {
    push('turn/start', { turn })
    push('user/message', {
      inputId: `u${turn}`,
      text: `question ${turn}: what changed since the last run?`,
      delivery: 'steer',
      source: 'user',
    })
    push('step/start', { turn, step: 1 })
    push('assistant/start', { messageId: `t${turn}`, turn, step: 1 })
    for (let d = 0; d < 8; d++) push('assistant/delta', { messageId: `t${turn}`, text: `thinking ${d} ` })
    push('tool/call', { messageId: `t${turn}`, callId: `c${turn}`, name: 'search', input: { q: `q${turn}` } })
    push('assistant/end', { messageId: `t${turn}`, finish: 'tool-calls' })
    push('tool/result', { callId: `c${turn}`, output: { hits: 3 }, isError: false })
    push('step/end', { turn, step: 1, usage: { input: 120, output: 12 } })
    push('step/start', { turn, step: 2 })
    push('assistant/start', { messageId: `a${turn}`, turn, step: 2 })
    for (let d = 0; d < 6; d++) push('assistant/delta', { messageId: `a${turn}`, text: `answer part ${d}. ` })
    push('assistant/end', { messageId: `a${turn}`, finish: 'stop' })
    push('step/end', { turn, step: 2, usage: { input: 140, output: 30 } })
    push('turn/end', { turn, reason: 'completed' })
    if (batch.length >= batchSize) {
      yield batch
      batch = []
    }
  }
  if (batch.length > 0) yield batch
}

const gc = (globalThis as { gc?: () => void }).gc
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const spent = process.cpuUsage(since)
  return (spent.user + spent.system) / 1e6
}

/**
 * One sample of `fold` over a log of `turns` turns: events per CPU-second of a whole replay (a
 * short log replayed until ~1M events), timing the fold and not the generation of its batches.
 */
function sample(fold: Fold, turns: number): { rate: number; events: number } {
  let spent = 0
  let folded = 0
  while (folded < 1_000_000) {
    fold.start()
    for (const batch of generatedLog(turns)) {
      const started = process.cpuUsage()
      fold.add(batch)
      spent += cpuSeconds(started)
      folded += batch.length
    }
    if (fold.end() < 0) throw new Error('unreachable')
  }
  return { rate: folded / spent, events: folded }
}

export interface FoldFigure {
  id: string
  name: string
  turns: number
  events: number
  value: number
  unit: 'events/s'
  /** The least events/s the target asks for. */
  atLeast: number
}

/** The median of `samples` samples of every fold at every size, interleaved, after two warm-ups of each. */
export function measureFolds(turnCounts: readonly number[], samples = 5): FoldFigure[] {
  const cases = turnCounts.flatMap((turns) =>
    Object.entries(FOLDS).map(([name, makeFold]) => ({
      name,
      turns,
      fold: makeFold(),
      rates: [] as number[],
      events: 0,
    })),
  )
  for (let w = 0; w < 2; w++) for (const c of cases) sample(c.fold, c.turns)
  for (let s = 0; s < samples; s++) {
    for (const c of cases) {
      gc?.()
      const { rate, events } = sample(c.fold, c.turns)
      c.rates.push(rate)
      c.events = events
    }
  }
  return cases.map((c) => ({
    id: `fold-${c.name}-${c.turns}`,
    name: `${c.name} fold, replay of ${c.turns.toLocaleString('en')} turns`,
    turns: c.turns,
    events: c.events,
    value: Math.round(median(c.rates)),
    unit: 'events/s',
    atLeast: 1_000_000,
  }))
}

const [out, request] = process.argv.slice(2)
if (out) {
  const { turns = [1000, 100_000], samples = 5 } = JSON.parse(request ?? '{}') as {
    turns?: number[]
    samples?: number
  }
  const folds = measureFolds(turns, samples)
  writeFileSync(out, JSON.stringify({ folds }))
  for (const f of folds) console.error(`[bench folds] ${f.id}: ${(f.value / 1e6).toFixed(2)}M events/s`)
}
