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
 * instructions) are `hidden`; a compaction keeps `visible` what its `replacement_history`
 * keeps (matched by role and text; an unmatched user message there is the summary handed to
 * the model), or without one every user message, and makes the rest before it `inactive`, with
 * a `visible` summary when it has text; tool calls pair with their outputs by `call_id` (an
 * output is a string, a list of content items, one such item, or `{content, success}`); a shell
 * output wrapped as `{output, metadata: {exit_code}}` is unwrapped, and a non-zero exit code
 * (there, in an `exec_command_end` event or in a "Process exited with code" line) makes it an
 * error; a call item without an output item of its own (`web_search_call`, …) is settled by its
 * `status`; a thread an agent spawned (`session_meta.source.subagent.thread_spawn`) names its
 * parent, and the spawning call names the thread a `collab_tool_call` event says it started;
 * `turn_aborted` marks the turn's last answer `interrupted`, an `error` event is an assistant
 * message in the `error` state and a `stream_error` (a retry notice) a meta system message in
 * it, neither with usage of its own; a call's usage is
 * `last_token_usage` (or, without it,
 * the growth of `total_token_usage`), a repeated total is not counted twice, and the usage goes
 * on the newest assistant record since the previous count (or on a hidden usage-only record);
 * reasoning keeps its summary text only (never the encrypted content); unknown line and item
 * types are skipped and reported.
 */
import type { Json, Usage } from '../schema/common'
import {
  isOrderedRecord,
  type MessageRecord,
  type ToolCallRecord,
  type TranscriptRecord,
} from '../schema/records'
import type { JsonObject, ParsedLines } from './jsonl'
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

/** A shell run's exit code where the output text reports it (unified exec: "Process exited with code 1"). */
const EXIT_LINE = /^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$/m

/** A shell result's `{output, metadata: {exit_code}}`, given as an object or as its JSON text. */
function wrappedShellOutput(value: unknown): { output: string; exitCode: number | undefined } | undefined {
  let object = value
  if (typeof value === 'string') {
    if (!value.trimStart().startsWith('{')) return undefined
    try {
      object = JSON.parse(value)
    } catch {
      return undefined
    }
  }
  if (!isObject(object) || typeof object.output !== 'string') return undefined
  const metadata = isObject(object.metadata) ? object.metadata : {}
  const exitCode = typeof metadata.exit_code === 'number' ? metadata.exit_code : undefined
  return { output: object.output, exitCode }
}

/** A tool output as the user saw it: shell wrappers unwrapped, a non-zero exit an error. */
function outputOf(output: unknown): { output: Json; isError: boolean } {
  const shell = wrappedShellOutput(output)
  if (shell) return { output: shell.output, isError: shell.exitCode !== undefined && shell.exitCode !== 0 }
  if (typeof output === 'string') {
    const exit = EXIT_LINE.exec(output)?.[1]
    return { output, isError: exit !== undefined && Number(exit) !== 0 }
  }
  if (Array.isArray(output)) return { output: textOf(output, MESSAGE_TEXT), isError: false }
  // One content item on its own, not in a list: `{"type": "input_text", "text": "a.txt\n"}`.
  if (isObject(output) && MESSAGE_TEXT.includes(String(output.type)) && typeof output.text === 'string')
    return { output: output.text, isError: false }
  if (isObject(output)) {
    const content = output.content
    return {
      output: textOf(content, MESSAGE_TEXT),
      isError: output.success === false,
    }
  }
  return { output: null, isError: false }
}

const HANDLED_CALLS = new Set(['function_call', 'custom_tool_call', 'local_shell_call'])
/** Response items with nothing to show: encrypted compaction state, undo snapshots. */
const OPAQUE_ITEMS = new Set(['compaction', 'compaction_summary', 'ghost_snapshot'])

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
  const skips = parsed.skips
  /** Exit codes the UI events report, by call id (the output item may not say it). */
  const exitCodes = new Map<string, number>()
  /** The thread each agent-spawning call started, by call id. */
  const spawned = new Map<string, string>()
  let parentSessionId: string | undefined

  /**
   * A compaction: the model's context is now the replacement history (the user messages it
   * keeps and the summary) or, in the older form without one, every user message and the
   * summary. What it keeps stays visible; the rest of the earlier transcript is superseded.
   */
  const compact = (payload: JsonObject, id: string, at: { timestamp?: number }) => {
    const kept = new Set<TranscriptRecord>()
    const history = Array.isArray(payload.replacement_history) ? payload.replacement_history : undefined
    let summary = str(payload.message)?.trim() ?? ''
    const current = records.filter(
      (r): r is MessageRecord => r.type === 'message' && r.visibility === 'visible',
    )
    if (history) {
      let bridge: string | undefined
      for (const item of history) {
        if (!isObject(item) || item.type !== 'message') continue
        const role = item.role
        if (role !== 'user' && role !== 'assistant') continue
        const text = textOf(item.content, MESSAGE_TEXT).trim()
        if (text === '' || isEnvelope(text)) continue
        const match = current.find((r) => !kept.has(r) && r.role === role && r.text.trim() === text)
        if (match) kept.add(match)
        else if (role === 'user') bridge = text // the summary Codex hands the model as a message
      }
      if (summary === '' && bridge !== undefined) summary = bridge
    } else {
      for (const r of current) if (r.role === 'user' && !r.isMeta && r.text.trim() !== '') kept.add(r)
    }
    const superseded = new Set<string>()
    for (const record of records) {
      if (!isOrderedRecord(record) || record.visibility !== 'visible') continue
      if (kept.has(record)) continue
      record.visibility = 'inactive'
      superseded.add(record.id)
    }
    for (const record of records) {
      if (record.type === 'tool_call' && superseded.has(record.messageId)) record.visibility = 'inactive'
    }
    if (summary !== '') {
      records.push({
        type: 'summary',
        id,
        order: order++,
        ...at,
        source: 'compaction',
        text: summary,
        visibility: 'visible',
      })
    }
  }

  const message = (fields: Omit<MessageRecord, 'type' | 'order'>): MessageRecord => {
    const record: MessageRecord = { type: 'message', order: order++, ...fields }
    records.push(record)
    // a failed call's error answers nothing: the usage of a later count is not its own
    if (record.role === 'assistant' && record.status !== 'error') sinceCount.push(record)
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
        // A thread an agent spawned names the thread that spawned it.
        const source = isObject(payload.source) ? payload.source : {}
        const subagent = isObject(source.subagent) ? source.subagent : {}
        const spawn = isObject(subagent.thread_spawn) ? subagent.thread_spawn : {}
        parentSessionId ??= str(spawn.parent_thread_id)
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
        } else if (payload.type === 'error' || payload.type === 'stream_error') {
          // `error`: the turn failed (the provider refused, or the retries ran out);
          // `stream_error`: a retry notice ("Reconnecting... 1/5"). What the UI printed.
          const retry = payload.type === 'stream_error'
          message({
            id,
            ...at,
            role: retry ? 'system' : 'assistant',
            text: text ?? 'Error',
            contentType: 'text',
            ...(retry ? { isMeta: true } : {}),
            visibility: 'visible',
            status: 'error',
            finish: 'error',
            ...(retry ? {} : withModel),
          })
        } else if (payload.type === 'collab_tool_call') {
          const callId = str(payload.call_id)
          const thread = str(payload.new_thread_id)
          if (callId && thread) spawned.set(callId, thread)
        } else if (payload.type === 'exec_command_end' && typeof payload.exit_code === 'number') {
          const callId = str(payload.call_id)
          if (callId) exitCodes.set(callId, payload.exit_code)
        } else if (payload.type === 'turn_aborted') {
          // The end state of the turn it cut off (when the model had answered in it at all).
          const last = records.findLast(
            (r): r is MessageRecord =>
              r.type === 'message' && r.visibility === 'visible' && (r.role === 'assistant' || !r.isMeta),
          )
          if (last?.role === 'assistant') {
            last.status = 'interrupted'
            last.finish = 'aborted'
          }
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
          default: {
            const type = str(payload.type) ?? ''
            if (type.endsWith('_output')) {
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
            } else if (type.endsWith('_call')) {
              const callId = str(payload.call_id) || str(payload.id) || id
              const input =
                type === 'function_call'
                  ? parseArguments(payload.arguments)
                  : type === 'custom_tool_call'
                    ? ((payload.input ?? null) as Json)
                    : ((payload.action ?? payload.arguments ?? null) as Json)
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
                name:
                  str(payload.name) ??
                  (type === 'local_shell_call' ? 'local_shell' : type.slice(0, -'_call'.length)),
                input,
                visibility: 'visible',
              }
              calls.set(callId, call)
              records.push(call)
              if (!HANDLED_CALLS.has(type)) {
                // Items the model ran on the server side (web search, tool search, …) carry
                // their own status and no output item: settle them here.
                const status = str(payload.status)
                records.push({
                  type: 'tool_result',
                  id: `${id}/result`,
                  order: order++,
                  ...at,
                  callId,
                  callRecordId: call.id,
                  name: call.name,
                  output: status ?? 'completed',
                  isError: status === 'failed' || status === 'incomplete',
                  visibility: 'visible',
                })
              }
            } else if (type !== '' && !OPAQUE_ITEMS.has(type)) {
              skips.add(line, 'unknown_type')
            }
          }
        }
        break
      case 'compacted':
        compact(payload, id, at)
        break
      default:
        // a newer Codex wrote it; nothing we read depends on it, but the report says so
        skips.add(line, 'unknown_type')
    }
  }
  for (const record of records) {
    if (record.type === 'tool_call') {
      const thread = spawned.get(record.callId)
      if (thread) record.agentSessionId = thread
    }
    if (record.type !== 'tool_result') continue
    const exitCode = exitCodes.get(record.callId)
    if (exitCode !== undefined && exitCode !== 0) record.isError = true
  }

  const firstPrompt = records.find(
    (r): r is MessageRecord => r.type === 'message' && r.role === 'user' && !r.isMeta && r.text !== '',
  )
  const fallbackId = `file-${stableHash(JSON.stringify(parsed.lines[0]?.value ?? {}))}`
  return [
    {
      ...sessionRecord({
        id: sessionId || fallbackId,
        provider: 'codex',
        title: titleFrom(firstPrompt?.text) ?? 'Codex session',
        cwd,
        startedAt,
        endedAt,
        messageCount: countVisibleMessages(records),
      }),
      ...(parentSessionId ? { parentSessionId } : {}),
    },
    ...records,
  ]
}
