import type { Json, Usage } from '../schema/common'
import type { SessionMessage } from '../schema/messages'

/** One piece of a streamed model response. */
export type ProviderChunk =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | {
      type: 'tool-call'
      callId: string
      name: string
      input: Json
      /** The provider ran the call itself (a web search, a code interpreter): the runner logs it
       *  and waits for its `tool-result` chunk instead of running a tool. */
      providerExecuted?: true
    }
  /** The result of a provider-executed call, logged as it arrives. */
  | { type: 'tool-result'; callId: string; output: Json; isError: boolean }
  | { type: 'finish'; finish: 'stop' | 'tool-calls' | 'length'; usage?: Usage }

export interface ToolSpec {
  name: string
  description?: string
  /** JSON Schema of the tool's input. */
  parameters?: Json
}

export interface ProviderRequest {
  sessionId: string
  /** The turn and step this request answers; both 0 for the request that writes a compaction's
   *  summary (its context ends with a synthetic user row asking for it, and no tools are offered). */
  turn: number
  step: number
  /** The model-visible transcript: visible rows only, in seq order but for the path's last
   *  summary, which comes first (`context()`'s order, docs/decisions/0033), every tool call with
   *  its result. The rows are shared with the engine's change feed: read them, never modify them. */
  context: readonly SessionMessage[]
  tools: readonly ToolSpec[]
  signal: AbortSignal
  /**
   * The bytes of a `file` part of the context (by its `attachmentId`), for a provider that sends
   * files to its model; undefined when they are not stored. Absent where no engine serves them.
   */
  attachment?: (attachmentId: string) => Promise<Blob | undefined>
}

/**
 * A model provider: one call is one provider request (one step). It must stop promptly when
 * `signal` aborts and throw (a `SessionlineError` with code `provider_error`) on bad input
 * rather than hang.
 */
export type ModelProvider = (request: ProviderRequest) => AsyncIterable<ProviderChunk>

export interface Tool extends Omit<ToolSpec, 'name'> {
  /**
   * A person approves each call before it runs (`true`, or a rule over the call's input; a rule
   * that throws asks). The call waits durably as `awaiting-approval` until `respondToApproval`
   * answers it; a denied call is not run and the model is told.
   */
  needsApproval?: boolean | ((input: Json) => boolean | Promise<boolean>)
  run(input: Json, context: { signal: AbortSignal; sessionId: string; callId: string }): Promise<Json>
}
export type Tools = Record<string, Tool>
