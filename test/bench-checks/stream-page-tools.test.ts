/**
 * The stream-page-tools benchmark (test/bench/src/stream-page-tools.ts) on fake-indexeddb: not
 * its timings (those stay in `npm run bench`), but that both sides log the same calls, every
 * call is timed once, and the view saw each, which is what makes its ratios comparable.
 */
import { IDBKeyRange, IDBObjectStore, indexedDB } from 'fake-indexeddb'
import { expect, it } from 'vitest'
import { connect } from '../../src/index'
import { exposeEngine } from '../../worker/index'
import { NODE } from '../bench/src/config'
import { type BenchEnv, freshEngine } from '../bench/src/env'
import { runStreamPageTools, STREAM_PAGE_TOOLS_SESSION } from '../bench/src/stream-page-tools'

const env: BenchEnv = {
  dexie: { indexedDB, IDBKeyRange },
  engine: { indexedDB, IDBKeyRange },
  log: () => undefined,
  objectStore: IDBObjectStore,
}

it('reads the calls through fromLanguageModel and raw alike, logs the same calls on both sides and times each once', async () => {
  const channel = new MessageChannel()
  const engine = exposeEngine(await freshEngine(env, 'bench-check-stream-page-tools'), channel.port1)
  const client = connect(channel.port2)
  try {
    const cfg = { ...NODE, streamPageRows: 60, seedTurnsPerWrite: 20, toolCalls: 7, toolReps: 2 }
    const comparisons = await runStreamPageTools(client, cfg, () => undefined)
    expect(comparisons.map((c) => c.id)).toEqual([
      'stream-page-tools',
      'provider-ai-sdk-tools',
      'provider-ai-sdk-tools-read',
    ])
    const [latency, perCall] = comparisons
    // Each side: toolReps timed steps of toolCalls calls, each seen by the view once.
    expect(latency!.sessionline.reps).toBe(14)
    expect(latency!.raw.reps).toBe(14)
    expect(perCall!.sessionline.reps).toBe(2)
    expect(perCall!.sessionline.opsPerRep).toBe(7)
    // The reads without appends: three times the steps, each side.
    expect(comparisons[2]!.raw.reps).toBe(6)

    const page = await client.page(STREAM_PAGE_TOOLS_SESSION, { limit: 20 })
    const answers = page.messages.filter((m) => /^(sessionline|raw)-\d+$/.test(m.id))
    // The warm-up step of each side and toolReps steps each: 2 + 2 × 2.
    expect(answers.map((m) => m.id.split('-')[0]).sort()).toEqual([
      ...Array(3).fill('raw'),
      ...Array(3).fill('sessionline'),
    ])
    const calls = (id: string) =>
      answers
        .find((m) => m.id === id)!
        .parts.map((part) => (part.type === 'tool' ? [part.name, part.input, part.state] : part.type))
    // The step number is in the call ids only: the adapter and the raw read log the same calls.
    expect(calls('sessionline-1')).toHaveLength(7)
    expect(calls('sessionline-1')[3]).toEqual(['lookup', { query: 'item 3', page: 3 }, 'done'])
    expect(calls('raw-2')).toEqual(calls('sessionline-1'))
    // Steps: warm-ups 1 and 2, then sessionline-3, raw-4, raw-5, sessionline-6 (sides alternate first).
    expect(calls('raw-5')).toEqual(calls('sessionline-6'))
  } finally {
    await client.close()
    await engine.close()
    channel.port1.close()
    channel.port2.close()
  }
})
