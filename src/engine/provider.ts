import type { Json, Usage } from '../schema/common'
import type { SessionMessage } from '../schema/messages'

/** One piece of a streamed model response. */
export type ProviderChunk =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-call'; callId: string; name: string; input: Json }
  | { type: 'finish'; finish: 'stop' | 'tool-calls' | 'length'; usage?: Usage }

export interface ToolSpec {
  name: string
  description?: string
  /** JSON Schema of the tool's input. */
  parameters?: Json
}

export interface ProviderRequest {
  sessionId: string
  turn: number
  step: number
  /** The model-visible transcript: visible rows only, in seq order but for the path's last
   *  summary, which comes first (`context()`'s order, docs/decisions/0033), every tool call with
   *  its result. The rows are shared with the engine's change feed: read them, never modify them. */
  context: readonly SessionMessage[]
  tools: readonly ToolSpec[]
  signal: AbortSignal
}

/**
 * A model provider: one call is one provider request (one step). It must stop promptly when
 * `signal` aborts and throw (a `SessionlineError` with code `provider_error`) on bad input
 * rather than hang.
 */
export type ModelProvider = (request: ProviderRequest) => AsyncIterable<ProviderChunk>

export interface Tool extends Omit<ToolSpec, 'name'> {
  run(input: Json, context: { signal: AbortSignal; sessionId: string; callId: string }): Promise<Json>
}
export type Tools = Record<string, Tool>
