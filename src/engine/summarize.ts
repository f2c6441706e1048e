/**
 * Asks a model provider for the summary a compaction commits (docs/decisions/0033, amendment):
 * one request with the context to replace and, after it, an instruction to summarise it, no
 * tools offered. The text chunks are the summary; tool calls are ignored (none were offered);
 * the request's usage is answered so the compaction counts it. Nothing is written here.
 *
 * @example
 *   const { text, usage } = await summarizeContext(provider, { sessionId, context, signal })
 */
import type { Usage } from '../schema/common'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { SessionMessage } from '../schema/messages'
import type { ModelProvider, ProviderRequest } from './provider'
import { abortError } from './providers/abort'

/** Id of the instruction row the provider sees last (never stored). */
export const SUMMARY_INSTRUCTION_ID = 'sessionline-compaction-instruction'

/** What the provider is asked after the context it summarises. */
export const SUMMARY_INSTRUCTION =
  'Summarise the conversation so far for yourself, to continue it without the messages above: ' +
  'the goals, decisions, facts learned, files and tools involved, and what is still open. ' +
  'Answer with the summary only.'

export interface SummaryRequest {
  sessionId: string
  /** The rows the summary replaces, in the order the model gets them. */
  context: readonly SessionMessage[]
  signal: AbortSignal
  attachment?: ProviderRequest['attachment']
}

/** The summary's text and the usage of the request that wrote it. */
export interface WrittenSummary {
  text: string
  usage?: Usage
}

export async function summarizeContext(
  provider: ModelProvider,
  request: SummaryRequest,
): Promise<WrittenSummary> {
  const { sessionId, context, signal } = request
  const last = context[context.length - 1]
  const at = last?.updatedAt ?? 0
  const instruction: SessionMessage = {
    id: SUMMARY_INSTRUCTION_ID,
    sessionId,
    seq: (last?.seq ?? 0) + 1,
    role: 'user',
    turn: last?.turn ?? 0,
    parts: [{ type: 'text', text: SUMMARY_INSTRUCTION }],
    status: 'complete',
    visibility: 'visible',
    createdAt: at,
    updatedAt: at,
    source: 'synthetic',
  }
  if (signal.aborted) throw abortError('compaction')
  let text = ''
  let usage: Usage | undefined
  try {
    const chunks = provider({
      sessionId,
      // A summarising request belongs to no turn or step of the log.
      turn: 0,
      step: 0,
      context: [...context, instruction],
      tools: [],
      signal,
      ...(request.attachment ? { attachment: request.attachment } : {}),
    })
    for await (const chunk of chunks) {
      if (signal.aborted) throw abortError('compaction')
      if (chunk.type === 'text') text += chunk.text
      else if (chunk.type === 'finish' && chunk.usage) usage = chunk.usage
    }
  } catch (error) {
    if (signal.aborted) throw abortError('compaction')
    if (isSessionlineError(error)) throw error
    throw new SessionlineError('provider_error', `the provider failed to write the summary: ${String(error)}`)
  }
  if (signal.aborted) throw abortError('compaction')
  const trimmed = text.trim()
  if (trimmed === '') throw new SessionlineError('provider_error', 'the provider wrote an empty summary')
  return usage ? { text: trimmed, usage } : { text: trimmed }
}
