/**
 * The runner's tools: what the provider is told of them, and running the calls of one step
 * concurrently, each result logged as soon as it settles. A tool that throws, returns a value
 * that is not JSON or does not exist answers an error result; the turn goes on.
 */
import { Json } from '../schema/common'
import type { ProviderChunk, ToolSpec, Tools } from './provider'
import { raceAbort } from './providers/abort'
import type { AppendQueue } from './runner-step'

/** Runs the calls concurrently; each result is logged as soon as it settles. */
export async function runTools(
  sessionId: string,
  tools: Tools,
  calls: readonly Extract<ProviderChunk, { type: 'tool-call' }>[],
  signal: AbortSignal,
  appender: AppendQueue,
): Promise<void> {
  await Promise.all(
    calls.map(async (call) => {
      const result = await runTool(sessionId, tools, call, signal)
      if (signal.aborted) return
      await appender.append([{ type: 'tool/result', data: { callId: call.callId, ...result } }])
    }),
  )
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
