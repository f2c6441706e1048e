/**
 * The model-visible transcript as an AI SDK language-model prompt (the shape specifications v2,
 * v3 and v4 share): system text first, user text, assistant text and tool calls, and one `tool`
 * message answering every call (a provider rejects a call left unanswered). Reasoning is not
 * sent back, as with the OpenAI-compatible provider. A user row's files become `file` parts of
 * its message, their bytes read before the prompt is built (`attachedFiles`).
 */
import type { Json } from '../../schema/common'
import type { SessionMessage, ToolPart } from '../../schema/messages'
import type { ToolSpec } from '../provider'
import type { AttachedFiles } from './attached-files'

/** One message of a language-model prompt. */
export type PromptMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: PromptUserPart[] }
  | { role: 'assistant'; content: PromptAssistantPart[] }
  | { role: 'tool'; content: PromptToolResult[] }

/** A user message's part: its text, or one attached file with its bytes (the specifications' `file` part). */
export type PromptUserPart =
  | { type: 'text'; text: string }
  | { type: 'file'; data: Uint8Array; mediaType: string; filename: string }

export type PromptAssistantPart =
  | { type: 'text'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: Json }

export interface PromptToolResult {
  type: 'tool-result'
  toolCallId: string
  toolName: string
  output:
    | { type: 'json'; value: Json }
    | { type: 'error-json'; value: Json }
    | { type: 'error-text'; value: string }
}

/** A function tool as the specification declares it. */
export interface PromptFunctionTool {
  type: 'function'
  name: string
  description?: string
  inputSchema: Json
}

export function toPrompt(
  context: readonly SessionMessage[],
  system?: string,
  files: AttachedFiles = new Map(),
): PromptMessage[] {
  const messages: PromptMessage[] = []
  if (system) messages.push({ role: 'system', content: system })
  for (const row of context) {
    if (row.visibility !== 'visible') continue
    const text = row.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
    switch (row.role) {
      case 'user':
        messages.push({ role: 'user', content: userContent(row, text, files) })
        break
      case 'system':
        messages.push({ role: 'system', content: text })
        break
      case 'summary':
        messages.push({ role: 'system', content: `Summary of the earlier conversation:\n${text}` })
        break
      case 'assistant': {
        const calls = row.parts.filter((part): part is ToolPart => part.type === 'tool')
        const content: PromptAssistantPart[] = []
        if (text !== '') content.push({ type: 'text', text })
        for (const call of calls)
          content.push({ type: 'tool-call', toolCallId: call.callId, toolName: call.name, input: call.input })
        if (content.length === 0) break
        messages.push({ role: 'assistant', content })
        if (calls.length > 0) messages.push({ role: 'tool', content: calls.map(toolResultOf) })
        break
      }
    }
  }
  return messages
}

function userContent(row: SessionMessage, text: string, files: AttachedFiles): PromptUserPart[] {
  const content: PromptUserPart[] = []
  if (text !== '' || !row.parts.some((part) => part.type === 'file')) content.push({ type: 'text', text })
  for (const part of row.parts) {
    if (part.type !== 'file') continue
    const data = files.get(part.attachmentId)
    content.push(
      data
        ? { type: 'file', data, mediaType: part.mediaType, filename: part.name }
        : { type: 'text', text: `[attachment ${part.name} (${part.mediaType}) is not available]` },
    )
  }
  return content
}

function toolResultOf(call: ToolPart): PromptToolResult {
  const base = { type: 'tool-result' as const, toolCallId: call.callId, toolName: call.name }
  if (call.output === undefined)
    return {
      ...base,
      output: { type: 'error-text', value: 'The tool call was interrupted before it returned.' },
    }
  return { ...base, output: { type: call.isError ? 'error-json' : 'json', value: call.output } }
}

export function toFunctionTools(tools: readonly ToolSpec[]): PromptFunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    inputSchema: tool.parameters ?? { type: 'object', properties: {} },
  }))
}
