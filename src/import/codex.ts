/**
 * Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`) to canonical
 * records.
 *
 * Facts of the format: each line is `{timestamp, type, payload}` with `type` one of
 * `session_meta` (id, cwd, instructions), `turn_context` (model, cwd), `response_item` (what
 * the model saw or said: `message`, `reasoning`, `function_call`, `custom_tool_call`,
 * `local_shell_call` and their `*_output`), `event_msg` (what the UI showed: `user_message`,
 * `agent_message`, `token_count`, …) and `compacted` (a summary replacing the history before
 * it). The user's and the agent's messages appear once as an `event_msg` and once as a
 * `response_item`.
 *
 * Our rules: each such pair becomes one message (the first seen); messages that are
 * environment or instruction envelopes (and `developer`/`system` messages, and the session's
 * instructions) are `hidden`; a compaction makes everything before it `inactive`; tool calls
 * pair with their outputs by `call_id`; a call's usage is `last_token_usage` (or, without it,
 * the growth of `total_token_usage`), a repeated total is not counted twice, and the usage goes
 * on the newest assistant record since the previous count (or on a hidden usage-only record);
 * reasoning keeps its summary text only (never the encrypted content); unknown line and item
 * types are skipped.
 */
import type { Json, Usage, Visibility } from '../schema/common'
import type { MessageRecord, ToolCallRecord, TranscriptRecord } from '../schema/records'
import type { ParsedLines } from './jsonl'
import {
  count,
  countVisibleMessages,
  isObject,
  sessionRecord,
  stableHash,
  str,
  textOf,
  titleFrom,
  toMillis,
} from './util'

const MESSAGE_TEXT = ['input_text', 'output_text', 'text']
const ENVELOPES = [
  '<environment_context>',
  '<user_instructions>',
  '<permissions instructions>',
  '<developer_instructions>',
  '# AGENTS.md instructions',
]
const isEnvelope = (text: string) => {
  const start = text.trimStart()
  return ENVELOPES.some((tag) => start.startsWith(tag))
}

/** Messages seen from one side (event or response item) waiting for their twin from the other. */
class Twins {
  private waiting: { text: string; from: string }[] = []
  /** True when `text` is the twin of a waiting message (which is then consumed). */
  matches(text: string, from: string): boolean {
    const key = text.trim()
    const i = this.waiting.findIndex((w) => w.text === key && w.from !== from)
    if (i >= 0) {
      this.waiting.splice(i, 1)
      return true
    }
    this.waiting.push({ text: key, from })
    if (this.waiting.length > 16) this.waiting.shift()
    return false
  }
}

function parseArguments(value: unknown): Json {
  if (typeof value !== 'string') return (value ?? null) as Json
  try {
    return JSON.parse(value) as Json
  } catch {
    return value
  }
}

function outputOf(output: unknown): { output: Json; isError: boolean } {
  if (typeof output === 'string') return { output, isError: false }
  if (Array.isArray(output)) return { output: textOf(output, MESSAGE_TEXT), isError: false }
  if (isObject(output)) {
    const content = output.content
    return {
      output: textOf(content, MESSAGE_TEXT),
      isError: output.success === false,
    }
  }
  return { output: null, isError: false }
}

type TokenUsage = { input: number; output: number }
const tokens = (u: unknown): TokenUsage | undefined =>
  isObject(u) ? { input: count(u.input_tokens), output: count(u.output_tokens) } : undefined

export function parseCodexSession(parsed: ParsedLines): TranscriptRecord[] {
  const records: TranscriptRecord[] = []
  const calls = new Map<string, ToolCallRecord>()
  const users = new Twins()
  const agents = new Twins()
  let order = 0
  let sessionId: string | undefined
  let cwd: string | undefined
  let model: string | undefined
  let startedAt: number | undefined
  let endedAt: number | undefined
  let sinceCount: MessageRecord[] = []
  let previousTotal: TokenUsage | undefined

  const message = (fields: Omit<MessageRecord, 'type' | 'order'>): MessageRecord => {
    const record: MessageRecord = { type: 'message', order: order++, ...fields }
    records.push(record)
    if (record.role === 'assistant') sinceCount.push(record)
    return record
  }
  const addUsage = (used: Usage, id: string, timestamp: number | undefined) => {
    const target = sinceCount.findLast((r) => r.usage === undefined)
    sinceCount = []
    if (target) {
      target.usage = used
      return
    }
    message({
      id,
      ...(timestamp === undefined ? {} : { timestamp }),
      role: 'assistant',
      text: '',
      contentType: 'usage',
      visibility: 'hidden',
    })
    sinceCount = []
  }

  for (const { line, value } of parsed.lines) {
    const payload = isObject(value.payload) ? value.payload : {}
    const timestamp = toMillis(value.timestamp)
    if (timestamp !== undefined) {
      startedAt = startedAt === undefined ? timestamp : Math.min(startedAt, timestamp)
      endedAt = endedAt === undefined ? timestamp : Math.max(endedAt, timestamp)
    }
    const id = `line${line}`
    const at = timestamp === undefined ? {} : { timestamp }
    const withModel = model ? { model } : {}

    switch (value.type) {
      case 'session_meta': {
        sessionId ??= str(payload.id)
        cwd ??= str(payload.cwd)
        const instructions = str(payload.instructions)
        if (instructions) {
          message({
            id,
            ...at,
            role: 'system',
            text: instructions,
            contentType: 'text',
            isMeta: true,
            visibility: 'hidden',
          })
        }
        break
      }
      case 'turn_context':
        model = str(payload.model) ?? model
        cwd ??= str(payload.cwd)
        break
      case 'event_msg': {
        const text = str(payload.message)
        if (payload.type === 'user_message' && text !== undefined) {
          if (!users.matches(text, 'event'))
            message({ id, ...at, role: 'user', text, contentType: 'text', visibility: 'visible' })
        } else if (payload.type === 'agent_message' && text !== undefined) {
          if (!agents.matches(text, 'event'))
            message({
              id,
              ...at,
              role: 'assistant',
              text,
              contentType: 'text',
              visibility: 'visible',
              ...withModel,
            })
        } else if (payload.type === 'token_count' && isObject(payload.info)) {
          const total = tokens(payload.info.total_token_usage)
          const last = tokens(payload.info.last_token_usage)
          if (
            total &&
            previousTotal &&
            total.input === previousTotal.input &&
            total.output === previousTotal.output
          )
            break // the same count again (Codex repeats it with rate-limit updates)
          const used =
            last ??
            (total && {
              input: Math.max(0, total.input - (previousTotal?.input ?? 0)),
              output: Math.max(0, total.output - (previousTotal?.output ?? 0)),
            })
          if (total) previousTotal = total
          if (used && (used.input > 0 || used.output > 0)) addUsage(used, id, timestamp)
        }
        break
      }
      case 'response_item':
        switch (payload.type) {
          case 'message': {
            const role = payload.role
            const text = textOf(payload.content, MESSAGE_TEXT)
            const reasoning = textOf(payload.content, ['reasoning'])
            if (role === 'user') {
              if (isEnvelope(text)) {
                message({
                  id,
                  ...at,
                  role: 'user',
                  text,
                  contentType: 'text',
                  isMeta: true,
                  visibility: 'hidden',
                })
              } else if (!users.matches(text, 'response')) {
                message({ id, ...at, role: 'user', text, contentType: 'text', visibility: 'visible' })
              }
            } else if (role === 'assistant') {
              if (!agents.matches(text, 'response'))
                message({
                  id,
                  ...at,
                  role: 'assistant',
                  text,
                  ...(reasoning ? { reasoning } : {}),
                  contentType: text === '' && reasoning ? 'reasoning' : 'text',
                  visibility: 'visible',
                  ...withModel,
                })
            } else if (role === 'developer' || role === 'system') {
              message({
                id,
                ...at,
                role: 'system',
                text,
                contentType: 'text',
                isMeta: true,
                visibility: 'hidden',
              })
            }
            break
          }
          case 'reasoning': {
            const text = textOf(payload.summary, ['summary_text', 'text'])
            if (text !== '')
              message({
                id,
                ...at,
                role: 'assistant',
                text: '',
                reasoning: text,
                contentType: 'reasoning',
                visibility: 'visible',
                ...withModel,
              })
            break
          }
          case 'function_call':
          case 'custom_tool_call':
          case 'local_shell_call': {
            const callId = str(payload.call_id) || str(payload.id) || id
            const input =
              payload.type === 'function_call'
                ? parseArguments(payload.arguments)
                : payload.type === 'custom_tool_call'
                  ? ((payload.input ?? null) as Json)
                  : ((payload.action ?? null) as Json)
            message({
              id,
              ...at,
              role: 'assistant',
              text: '',
              contentType: 'tool_use',
              visibility: 'visible',
              ...withModel,
            })
            const call: ToolCallRecord = {
              type: 'tool_call',
              id: `${id}/call`,
              messageId: id,
              callId,
              name: str(payload.name) ?? (payload.type === 'local_shell_call' ? 'local_shell' : ''),
              input,
              visibility: 'visible',
            }
            calls.set(callId, call)
            records.push(call)
            break
          }
          case 'function_call_output':
          case 'custom_tool_call_output':
          case 'local_shell_call_output': {
            const callId = str(payload.call_id) || 'unknown'
            const call = calls.get(callId)
            records.push({
              type: 'tool_result',
              id,
              order: order++,
              ...at,
              callId,
              ...(call ? { callRecordId: call.id, name: call.name } : {}),
              ...outputOf(payload.output),
              visibility: 'visible',
            })
            break
          }
        }
        break
      case 'compacted': {
        const replaced: Visibility = 'inactive'
        for (const record of records) {
          if (record.type !== 'session' && record.visibility === 'visible') record.visibility = replaced
        }
        records.push({
          type: 'summary',
          id,
          order: order++,
          ...at,
          source: 'compaction',
          text: str(payload.message) ?? '',
          visibility: 'visible',
        })
        break
      }
      // any other line type: a newer Codex wrote it; nothing we read depends on it
    }
  }

  const firstPrompt = records.find(
    (r): r is MessageRecord => r.type === 'message' && r.role === 'user' && !r.isMeta && r.text !== '',
  )
  const fallbackId = `file-${stableHash(JSON.stringify(parsed.lines[0]?.value ?? {}))}`
  return [
    sessionRecord({
      id: sessionId || fallbackId,
      provider: 'codex',
      title: titleFrom(firstPrompt?.text) ?? 'Codex session',
      cwd,
      startedAt,
      endedAt,
      messageCount: countVisibleMessages(records),
    }),
    ...records,
  ]
}
