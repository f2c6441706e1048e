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
 * sample so that every sample folds at least ~1M events. Time is this process's CPU time (user +
 * system, collector threads included), not wall time: the figure is events per CPU-second, which
 * a machine shared with other work does not distort the way it distorts a stopwatch.
 */
import { writeFileSync } from 'node:fs'
import { createTranscriptReplay, initTranscript } from '../../../src/core/transcript'
import { turnOutline } from '../../../src/core/turn-outline'
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

function outlineFold(): Fold {
  let state = turnOutline.init()
  return {
    start: () => {
      state = turnOutline.init()
    },
    add(batch) {
      for (const event of batch) state = turnOutline.apply(state, event)
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
 * Events per CPU-second of `fold` over a log of `turns` turns: the median of `samples` samples,
 * each a whole replay (a short log replayed until ~1M events), timing the fold and not the
 * generation of its batches.
 */
function throughput(fold: Fold, turns: number, samples: number): { value: number; events: number } {
  let events = 0
  const sample = () => {
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
    events = folded
    return folded / spent
  }
  for (let w = 0; w < 2; w++) sample()
  const rates: number[] = []
  for (let s = 0; s < samples; s++) {
    gc?.()
    rates.push(sample())
  }
  return { value: median(rates), events }
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

export function measureFolds(turnCounts: readonly number[], samples = 5): FoldFigure[] {
  const figures: FoldFigure[] = []
  for (const turns of turnCounts) {
    for (const [name, makeFold] of Object.entries(FOLDS)) {
      const { value, events } = throughput(makeFold(), turns, samples)
      figures.push({
        id: `fold-${name}-${turns}`,
        name: `${name} fold, replay of ${turns.toLocaleString('en')} turns`,
        turns,
        events,
        value: Math.round(value),
        unit: 'events/s',
        atLeast: 1_000_000,
      })
    }
  }
  return figures
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
