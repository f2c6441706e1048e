/**
 * The runner's tools: what the provider is told of them, and running the calls of one step
 * concurrently, each result logged as soon as it settles. A tool that throws, returns a value
 * that is not JSON or does not exist answers an error result; the turn goes on.
 */
import { Json } from '../schema/common'
import type { ProviderChunk, ToolSpec, Tools } from './provider'
import { raceAbort } from './providers/abort'
import { type ApprovalOutcome, mustAsk, STOPPED_REASON, waitForAnswer } from './runner-approvals'
import type { AppendQueue } from './runner-step'
import type { RunnerHost } from './types'

/** How the calls of a step ended: all settled, or some left waiting for a person (the engine closed). */
export type ToolsOutcome = 'settled' | 'suspended'

/** What running a step's calls needs beyond the calls. */
export interface ToolRun {
  host: RunnerHost
  sessionId: string
  tools: Tools
  signal: AbortSignal
  appender: AppendQueue
}

/**
 * Runs the calls concurrently; each result is logged as soon as it settles. A call of a tool
 * that needs approval first waits for a person (`asked`: calls whose request is in the log
 * already, on a resumed step). A Stop while a call waits denies it; the engine closing leaves
 * it waiting in the log (`suspended`), for the next runner to resume.
 */
export async function runTools(
  run: ToolRun,
  calls: readonly Extract<ProviderChunk, { type: 'tool-call' }>[],
  asked: ReadonlySet<string> = new Set(),
): Promise<ToolsOutcome> {
  const { host, sessionId, tools, signal, appender } = run
  const outcomes = await Promise.all(
    calls.map(async (call): Promise<ToolsOutcome> => {
      const tool = Object.hasOwn(tools, call.name) ? tools[call.name] : undefined
      if (
        tool &&
        (asked.has(call.callId) || (await mustAsk(host.engine, sessionId, call.name, tool, call.input)))
      ) {
        if (!asked.has(call.callId))
          await appender.append([{ type: 'tool/approval-request', data: { callId: call.callId } }])
        let outcome: ApprovalOutcome
        try {
          outcome = await waitForAnswer(host, sessionId, call.callId, signal)
        } catch (error) {
          if (!signal.aborted) throw error
          if (signal.reason === 'close') return 'suspended'
          // Stop denies what waits; a person who answered first wins (the denial is then refused).
          await host.engine
            .respondToApproval(sessionId, call.callId, { approved: false, reason: STOPPED_REASON })
            .catch(() => {})
          return 'settled'
        }
        if (outcome === 'denied') return 'settled'
      }
      const result = await runTool(sessionId, tools, call, signal)
      if (signal.aborted) return 'settled'
      await appender.append([{ type: 'tool/result', data: { callId: call.callId, ...result } }])
      return 'settled'
    }),
  )
  return outcomes.includes('suspended') ? 'suspended' : 'settled'
}

async function runTool(
  sessionId: string,
  tools: Tools,
  call: Extract<ProviderChunk, { type: 'tool-call' }>,
  signal: AbortSignal,
): Promise<{ output: Json; isError: boolean }> {
  const tool = Object.hasOwn(tools, call.name) ? tools[call.name] : undefined
  if (!tool) return { output: { error: `Unknown tool "${call.name}"` }, isError: true }
  try {
    const output = await raceAbort(
      Promise.resolve().then(() => tool.run(call.input, { signal, sessionId, callId: call.callId })),
      signal,
    )
    const json = Json.safeParse(output)
    return json.success
      ? { output: json.data, isError: false }
      : { output: { error: `Tool "${call.name}" returned a value that is not JSON` }, isError: true }
  } catch (error) {
    return { output: { error: error instanceof Error ? error.message : String(error) }, isError: true }
  }
}

export function toolSpecs(tools: Tools): ToolSpec[] {
  return Object.entries(tools).map(([name, tool]) => {
    const spec: ToolSpec = { name }
    if (tool.description !== undefined) spec.description = tool.description
    if (tool.parameters !== undefined) spec.parameters = tool.parameters
    return spec
  })
}
