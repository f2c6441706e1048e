/**
 * stream-page-tools: a turn whose model calls `toolCalls` tools in one step, with a view holding
 * a window of `streamPageRows` rows. The model is the AI SDK's own `MockLanguageModelV4`
 * (`ai/test`), streaming each call as a provider does (input start, delta and end, then the
 * call); sessionline reads it through `fromLanguageModel`, the reference reads the same stream
 * raw (a switch on the part type and `JSON.parse` of the input), and both append each call as
 * the runner logs it (`tool/call`, one append a call, awaited). Every call is timed from the
 * moment the stream hands its part over to the first snapshot of the view that shows it
 * (`stream-page-tools`, p95), and the whole step per call (`provider-ai-sdk-tools`): the appends
 * are the same work on both sides, so the ratios are the adapter's share of a tool call.
 */
import { MockLanguageModelV4 } from 'ai/test'
import type { SessionlineClient, SessionView, TimelineSnapshot } from '../../../src/client/types'
import type { Json } from '../../../src/schema/common'
import type { SessionEvent } from '../../../src/schema/events'
import { fromLanguageModel } from '../../../worker/index'
import type { BenchConfig } from './config'
import { promptText } from './fixtures'
import { type Comparison, compare, figure } from './stats'
import { p95, seedWindow, single, until } from './stream-page'

/** The session the step writes (a fresh database each run). */
export const STREAM_PAGE_TOOLS_SESSION = 'stream-page-tools'
const TOOL = 'lookup'

type Part = { type: string } & Record<string, unknown>

/** The parts of one step that calls `calls` tools, then finishes with `tool-calls`. */
function toolStepParts(step: number, calls: number): Part[] {
  const parts: Part[] = [{ type: 'stream-start', warnings: [] }]
  for (let i = 0; i < calls; i++) {
    const id = `call-${step}-${i}`
    const input = JSON.stringify({ query: `item ${i}`, page: i % 7 })
    parts.push(
      { type: 'tool-input-start', id, toolName: TOOL },
      { type: 'tool-input-delta', id, delta: input },
      { type: 'tool-input-end', id },
      { type: 'tool-call', toolCallId: id, toolName: TOOL, input },
    )
  }
  parts.push({
    type: 'finish',
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: {
      inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: calls, text: 0, reasoning: undefined },
    },
  })
  return parts
}

/**
 * A stream of `parts` that hands one over only when it is read (no part waits in a queue, so
 * a call's clock starts when its reader asks), noting when each `tool-call` part is handed.
 */
function streamOf(parts: readonly Part[], handed: number[]): ReadableStream<never> {
  let at = 0
  return new ReadableStream<never>(
    {
      pull(controller) {
        const part = parts[at++]
        if (part === undefined) return controller.close()
        if (part.type === 'tool-call') handed.push(performance.now())
        controller.enqueue(part as never)
      },
    },
    { highWaterMark: 0 },
  )
}

/** Tool parts of row `messageId` in `snap` (-1: no such row); it is at the tail. */
function toolCount(snap: TimelineSnapshot, messageId: string): number {
  for (let i = snap.rows.length - 1; i >= 0; i--) {
    const row = snap.rows[i]!
    if (row.kind !== 'message' || row.message.id !== messageId) continue
    let n = 0
    for (const part of row.message.parts) if (part.type === 'tool') n++
    return n
  }
  return -1
}

/** Times every call from its hand-over to the first snapshot of `view` that shows it. */
function tracker(view: SessionView, messageId: string, handed: readonly number[]) {
  const latencies: number[] = []
  const stop = view.subscribe(() => {
    const now = performance.now()
    const shown = toolCount(view.getSnapshot(), messageId)
    while (latencies.length < Math.min(shown, handed.length)) latencies.push(now - handed[latencies.length]!)
  })
  return { latencies, stop }
}

export async function runStreamPageTools(
  client: SessionlineClient,
  cfg: BenchConfig,
  log: (message: string) => void,
): Promise<Comparison[]> {
  const id = STREAM_PAGE_TOOLS_SESSION
  const turns = await seedWindow(client, id, cfg)
  const view = client.open(id)
  try {
    await until(view, (s) => s.status !== 'loading')
    await view.loadThrough(1)
    const loaded = view.getSnapshot().rows.length
    if (loaded < cfg.streamPageRows) throw new Error(`stream-page-tools: ${loaded} rows loaded`)
    log(
      `stream-page-tools: ${loaded} rows in the window; ${cfg.toolReps} steps of ${cfg.toolCalls} calls per side`,
    )
    const turn = turns + 1
    await client.admit(id, { id: 'stream-page-tools-in', text: promptText(turn), delivery: 'steer' })
    await client.promote(id, 'settled')

    let current: { parts: Part[]; handed: number[] } = { parts: [], handed: [] }
    const model = new MockLanguageModelV4({
      doStream: async () => ({ stream: streamOf(current.parts, current.handed) }),
    })
    const provider = fromLanguageModel(model)
    let step = 0

    /** One step on `side`: its time from the request to the last call's append, and each call's latency. */
    async function answer(side: 'sessionline' | 'raw'): Promise<{ ms: number; latencies: number[] }> {
      step += 1
      const messageId = `${side}-${step}`
      await client.append(id, [
        { type: 'step/start', data: { turn, step } },
        { type: 'assistant/start', data: { messageId, turn, step } },
      ])
      await until(view, (s) => toolCount(s, messageId) >= 0)
      current = { parts: toolStepParts(step, cfg.toolCalls), handed: [] }
      const track = tracker(view, messageId, current.handed)
      const call = (callId: string, name: string, input: Json) =>
        client.append(id, [{ type: 'tool/call', data: { messageId, callId, name, input } }])
      const started = performance.now()
      if (side === 'sessionline') {
        const request = {
          sessionId: id,
          turn,
          step,
          context: [],
          tools: [],
          signal: new AbortController().signal,
        }
        for await (const chunk of provider(request))
          if (chunk.type === 'tool-call') await call(chunk.callId, chunk.name, chunk.input)
      } else {
        const { stream } = await model.doStream({ prompt: [] })
        const reader = stream.getReader()
        while (true) {
          const next = await reader.read()
          if (next.done) break
          const part = next.value
          if (part.type === 'tool-call')
            await call(part.toolCallId, part.toolName, JSON.parse(part.input) as Json)
        }
      }
      const ms = performance.now() - started
      await until(view, (s) => toolCount(s, messageId) >= cfg.toolCalls)
      track.stop()
      // The tools' answers and the step's end, as the runner writes them after running the calls.
      const results: SessionEvent[] = current.handed.map((_, i) => ({
        type: 'tool/result',
        data: { callId: `call-${step}-${i}`, output: { found: i }, isError: false },
      }))
      await client.append(id, [
        { type: 'assistant/end', data: { messageId, finish: 'tool-calls' } },
        ...results,
        { type: 'step/end', data: { turn, step } },
      ])
      return { ms, latencies: track.latencies }
    }

    await answer('sessionline') // warm both paths once
    await answer('raw')
    const times = { sessionline: [] as number[], raw: [] as number[] }
    const latencies = { sessionline: [] as number[], raw: [] as number[] }
    for (let rep = 0; rep < cfg.toolReps; rep++) {
      // Sides alternate which goes first, so neither always meets a warmer database.
      const order = rep % 2 === 0 ? (['sessionline', 'raw'] as const) : (['raw', 'sessionline'] as const)
      for (const side of order) {
        const got = await answer(side)
        times[side].push(got.ms)
        latencies[side].push(...got.latencies)
      }
    }
    await client.append(id, [{ type: 'turn/end', data: { turn, reason: 'completed' } }])

    /** The same step read with nothing appended: what the adapter itself costs a call. */
    async function read(side: 'sessionline' | 'raw'): Promise<number> {
      current = { parts: toolStepParts(0, cfg.toolCalls), handed: [] }
      let inputs = 0
      const started = performance.now()
      if (side === 'sessionline') {
        const request = {
          sessionId: id,
          turn,
          step: 0,
          context: [],
          tools: [],
          signal: new AbortController().signal,
        }
        for await (const chunk of provider(request)) if (chunk.type === 'tool-call') inputs++
      } else {
        const { stream } = await model.doStream({ prompt: [] })
        const reader = stream.getReader()
        while (true) {
          const next = await reader.read()
          if (next.done) break
          if (next.value.type === 'tool-call' && JSON.parse(next.value.input) !== null) inputs++
        }
      }
      const ms = performance.now() - started
      if (inputs !== cfg.toolCalls) throw new Error(`stream-page-tools: ${side} read ${inputs} calls`)
      return ms
    }
    const reads = { sessionline: [] as number[], raw: [] as number[] }
    for (let rep = -1; rep < cfg.toolReps * 3; rep++) {
      const order = rep % 2 === 0 ? (['sessionline', 'raw'] as const) : (['raw', 'sessionline'] as const)
      for (const side of order) {
        const ms = await read(side)
        if (rep >= 0) reads[side].push(ms)
      }
    }
    const rows = loaded.toLocaleString('en-US')
    return [
      compare(
        {
          id: 'stream-page-tools',
          name: `tool call → page snapshot p95, ${cfg.toolCalls} calls a step through fromLanguageModel, ${rows}-row window open`,
          op: 'tool call (p95)',
          note: `target p95 ≤ 50 ms; baseline: the same MockLanguageModelV4 stream read raw, the same appends; ${latencies.sessionline.length} calls a side`,
        },
        single(p95(latencies.sessionline), latencies.sessionline.length),
        single(p95(latencies.raw), latencies.raw.length),
      ),
      compare(
        {
          id: 'provider-ai-sdk-tools',
          name: 'fromLanguageModel per tool call vs the raw stream',
          op: `a tool call (steps of ${cfg.toolCalls}, one append each)`,
          target: 1.2,
          note: 'reference: the same MockLanguageModelV4 stream read directly, the same appends',
        },
        figure(times.sessionline, cfg.toolCalls),
        figure(times.raw, cfg.toolCalls),
      ),
      compare(
        {
          id: 'provider-ai-sdk-tools-read',
          name: 'fromLanguageModel reading a step of tool calls, nothing appended',
          op: `a tool call (steps of ${cfg.toolCalls})`,
          note: 'the adapter alone (part schemas, input gathering, the generator) against a switch on the part type; compare its per-call time with the append of a call above',
        },
        figure(reads.sessionline, cfg.toolCalls),
        figure(reads.raw, cfg.toolCalls),
      ),
    ]
  } finally {
    view.dispose()
  }
}
