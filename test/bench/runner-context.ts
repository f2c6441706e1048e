/**
 * Times what the runner spends preparing a provider request's context on a long session.
 * Not a test (no timing assertions): `npx tsx test/bench/runner-context.ts [turns]`.
 * Runs on fake-indexeddb in Node, so the figures say how the cost scales, not what a browser's
 * IndexedDB would take.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { createEngine } from '../../src/engine/engine'
import type { ModelProvider } from '../../src/engine/provider'
import { createScriptedProvider } from '../../src/engine/providers/scripted'
import { createDemoTools } from '../../src/engine/tools'
import type { SessionEvent } from '../../src/schema/events'

const TURNS = Number(process.argv[2] ?? 5000)
const BATCH_TURNS = 1000

/** One finished turn: a prompt, one answer with a tool call and its result. */
function turnEvents(turn: number): SessionEvent[] {
  const messageId = `a${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: { inputId: `u${turn}`, text: `question ${turn}`, delivery: 'queue', source: 'user' },
    },
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: `answer number ${turn} with a few words` } },
    { type: 'tool/call', data: { messageId, callId: `c${turn}`, name: 'clock', input: {} } },
    { type: 'assistant/end', data: { messageId, finish: 'tool-calls' } },
    { type: 'tool/result', data: { callId: `c${turn}`, output: { now: turn }, isError: false } },
    { type: 'step/end', data: { turn, step: 1 } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

async function main(): Promise<void> {
  const inner = createScriptedProvider({ kind: 'scripted', seed: 7, wordDelayMs: 0, toolRate: 1 })
  const calls: { at: number; afterStepStart: number; step: number; rows: number }[] = []
  let streamEnded = 0
  let stepStarted = 0
  const provider: ModelProvider = (request) =>
    (async function* () {
      const now = performance.now()
      calls.push({
        at: now - streamEnded,
        afterStepStart: now - stepStarted,
        step: request.step,
        rows: request.context.length,
      })
      yield* inner(request)
      streamEnded = performance.now()
    })()
  const engine = createEngine({
    dbName: `bench-${process.pid}`,
    indexedDB,
    IDBKeyRange,
    broadcast: false,
    provider,
    tools: createDemoTools(),
  })
  const { id } = await engine.createSession({ title: 'long' })
  let started = performance.now()
  for (let from = 1; from <= TURNS; from += BATCH_TURNS) {
    const events: SessionEvent[] = []
    for (let turn = from; turn < from + BATCH_TURNS && turn <= TURNS; turn++) events.push(...turnEvents(turn))
    await engine.append(id, events)
  }
  const rows = (await engine.loadThrough(id, { seq: 0 })).messages.length
  console.log(`seeded ${TURNS} turns (${rows} rows) in ${(performance.now() - started).toFixed(0)} ms`)

  started = performance.now()
  await engine.loadThrough(id, { seq: 0 })
  console.log(
    `one loadThrough({seq: 0}) of the whole transcript: ${(performance.now() - started).toFixed(0)} ms`,
  )

  // The runner calls the engine object it was built with: wrapping its methods here times them.
  const reads = { loadThrough: 0, loadThroughMs: 0, headReads: 0 }
  const { loadThrough, append } = engine
  engine.loadThrough = async (...args) => {
    const t = performance.now()
    try {
      return await loadThrough(...args)
    } finally {
      reads.loadThrough += 1
      reads.loadThroughMs += performance.now() - t
    }
  }
  engine.append = async (sessionId, events) => {
    if (events.length === 0) reads.headReads += 1
    const written = await append(sessionId, events)
    if (events[0]?.type === 'step/start') stepStarted = performance.now()
    return written
  }
  const { headSeq } = await engine.append(id, [])
  reads.headReads = 0
  const ended = new Promise<void>((resolve) => {
    void engine.watch(id, (change) => {
      if (!change.durable) return
      void engine.events(id, { afterSeq: headSeq }).then((events) => {
        if (events.some((e) => e.type === 'turn/end')) resolve()
      })
    })
  })
  started = performance.now()
  streamEnded = started
  await engine.admit(id, { text: 'what is 6 * 7?' })
  await ended
  console.log(
    `one turn with ${calls.length} provider requests: ${(performance.now() - started).toFixed(0)} ms`,
  )
  console.log(
    `  whole-transcript reads during the turn: ${reads.loadThrough} (${reads.loadThroughMs.toFixed(0)} ms); head reads: ${reads.headReads}`,
  )
  for (const call of calls) {
    console.log(
      `  step ${call.step}: ${call.rows} context rows; ${call.at.toFixed(0)} ms since the previous stream ended (step 1: since admit), ${call.afterStepStart.toFixed(1)} ms after its step/start was written`,
    )
  }
  await engine.close()
}

await main()
