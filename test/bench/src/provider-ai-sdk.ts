/**
 * provider-ai-sdk: what `fromLanguageModel` costs per streamed delta. Both sides read the same
 * mock model stream (specification v4 parts: one text delta a word, then `finish`) and append
 * the same `assistant/delta` events to one engine, one append every `providerBatch` deltas:
 * sessionline through the adapter (part schemas, the abort race, the async generator), the
 * reference by reading the stream itself and switching on the part type. The appends are the
 * same work on both sides, so the ratio is the adapter's share of a streamed answer.
 */
import type { Engine } from '../../../src/engine/types'
import { fromLanguageModel } from '../../../worker/index'
import type { BenchConfig } from './config'
import { type BenchEnv, freshEngine } from './env'
import { type Comparison, compare, figure } from './stats'

const DB_NAME = 'bench-provider-ai-sdk'
const WORD = 'word '

/** The parts of one answer, built once and streamed afresh per request. */
function answerParts(deltas: number): object[] {
  const parts: object[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
  ]
  for (let i = 0; i < deltas; i++) parts.push({ type: 'text-delta', id: 't', delta: WORD })
  parts.push(
    { type: 'text-end', id: 't' },
    {
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: deltas, text: deltas, reasoning: undefined },
      },
    },
  )
  return parts
}

/** A stream of `parts`, a part per pull, as a provider's transform stream hands them on. */
function streamOf(parts: readonly object[]): ReadableStream<never> {
  let at = 0
  return new ReadableStream<never>({
    pull(controller) {
      if (at < parts.length) controller.enqueue(parts[at++] as never)
      else controller.close()
    },
  })
}

/** Appends the streamed text as the runner persists it: one event per `batch` deltas, in order. */
function deltaSink(engine: Engine, sessionId: string, messageId: string, batch: number) {
  let text = ''
  let count = 0
  const flush = async () => {
    if (text === '') return
    const events = [{ type: 'assistant/delta' as const, data: { messageId, text } }]
    text = ''
    await engine.append(sessionId, events)
  }
  return {
    async add(delta: string) {
      text += delta
      if (++count % batch === 0) await flush()
    },
    flush,
  }
}

export async function runProviderAiSdk(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const engine = await freshEngine(env, DB_NAME)
  try {
    const parts = answerParts(cfg.providerDeltas)
    const model = {
      specificationVersion: 'v4',
      provider: 'bench',
      modelId: 'mock',
      doStream: async () => ({ stream: streamOf(parts) }),
    }
    const provider = fromLanguageModel(model)
    const { id: sessionId } = await engine.createSession({ title: 'provider-ai-sdk' })
    await engine.admit(sessionId, { text: 'stream', delivery: 'steer' })
    const [prompt] = await engine.promote(sessionId, 'settled')
    const turn = prompt!.turn
    let step = 0

    /** One answer on `side`, timed from the request to the last append. */
    async function answer(side: 'sessionline' | 'raw'): Promise<number> {
      step += 1
      const messageId = `${side}-${step}`
      await engine.append(sessionId, [
        { type: 'step/start', data: { turn, step } },
        { type: 'assistant/start', data: { messageId, turn, step } },
      ])
      const sink = deltaSink(engine, sessionId, messageId, cfg.providerBatch)
      const started = performance.now()
      if (side === 'sessionline') {
        const request = {
          sessionId,
          turn,
          step,
          context: [],
          tools: [],
          signal: new AbortController().signal,
        }
        for await (const chunk of provider(request)) if (chunk.type === 'text') await sink.add(chunk.text)
      } else {
        const { stream } = await model.doStream()
        const reader = stream.getReader()
        while (true) {
          const next = await reader.read()
          if (next.done) break
          const part = next.value as { type: string; delta?: string }
          if (part.type === 'text-delta' && part.delta) await sink.add(part.delta)
        }
      }
      await sink.flush()
      const elapsed = performance.now() - started
      await engine.append(sessionId, [
        { type: 'assistant/end', data: { messageId, finish: 'stop' } },
        { type: 'step/end', data: { turn, step } },
      ])
      return elapsed
    }

    await answer('sessionline') // warm both paths once
    await answer('raw')
    const times = { sessionline: [] as number[], raw: [] as number[] }
    for (let rep = 0; rep < cfg.providerReps; rep++) {
      // Sides alternate which goes first, so neither always meets a warmer database.
      const order = rep % 2 === 0 ? (['sessionline', 'raw'] as const) : (['raw', 'sessionline'] as const)
      for (const side of order) times[side].push(await answer(side))
    }
    env.log(`provider-ai-sdk: ${cfg.providerReps} answers of ${cfg.providerDeltas} deltas per side`)
    return [
      compare(
        {
          id: 'provider-ai-sdk',
          name: 'fromLanguageModel per streamed delta vs the raw stream',
          op: `a text delta (answers of ${cfg.providerDeltas}, appended every ${cfg.providerBatch})`,
          target: 1.2,
          note: 'reference: the same mock v4 stream read directly, the same appends',
        },
        figure(times.sessionline, cfg.providerDeltas),
        figure(times.raw, cfg.providerDeltas),
      ),
    ]
  } finally {
    await engine.close()
  }
}
