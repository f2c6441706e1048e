/**
 * Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`) to canonical records.
 *
 * Facts of the format: each line is an entry `{type: 'user' | 'assistant' | 'system' |
 * 'summary' | …, uuid, parentUuid, sessionId, cwd, timestamp, isSidechain, isMeta, message}`;
 * one API response is written as several lines (one per content block) that repeat the same
 * `message.id`, `requestId` and usage; a `system` line with subtype `compact_boundary` marks a
 * compaction and the following user line with `isCompactSummary` holds its summary; tool
 * results are `tool_result` blocks of user lines naming their `tool_use_id`; `summary` lines
 * title the session.
 *
 * Our rules: every message is `visible` (the file does not say which branch is current), in
 * file order; usage is counted once per `message.id` + `requestId`, input being input +
 * cache creation + cache read; a line repeating an earlier `uuid` is skipped.
 */
import type { Visibility } from '../schema/common'
import type { MessageRecord, ToolCallRecord, TranscriptRecord } from '../schema/records'
import type { JsonObject, ParsedLines } from './jsonl'
import {
  asJson,
  count,
  countVisibleMessages,
  isObject,
  sessionRecord,
  stableHash,
  str,
  textOf,
  thinkingOf,
  titleFrom,
  toMillis,
  usage,
} from './util'

const VISIBLE: Visibility = 'visible'

export function parseClaudeSession(parsed: ParsedLines): TranscriptRecord[] {
  const records: TranscriptRecord[] = []
  const seen = new Set<string>()
  const usageKeys = new Set<string>()
  const calls = new Map<string, ToolCallRecord>()
  let order = 0
  let sessionId: string | undefined
  let cwd: string | undefined
  let summaryTitle: string | undefined
  let startedAt: number | undefined
  let endedAt: number | undefined

  for (const { line, value: entry } of parsed.lines) {
    const type = entry.type
    if (type === 'summary') {
      summaryTitle ??= str(entry.summary)
      continue
    }
    if (type !== 'user' && type !== 'assistant' && type !== 'system') continue
    const id = str(entry.uuid) || `line${line}`
    if (seen.has(id)) continue
    seen.add(id)
    sessionId ??= str(entry.sessionId)
    cwd ??= str(entry.cwd)
    const timestamp = toMillis(entry.timestamp)
    if (timestamp !== undefined) {
      startedAt = startedAt === undefined ? timestamp : Math.min(startedAt, timestamp)
      endedAt = endedAt === undefined ? timestamp : Math.max(endedAt, timestamp)
    }
    const parentId = str(entry.parentUuid) ?? str(entry.logicalParentUuid)
    const agentId = str(entry.agentId)
    const common = {
      ...(parentId ? { parentId } : {}),
      ...(timestamp === undefined ? {} : { timestamp }),
    }
    const side = {
      ...(entry.isSidechain === true ? { sidechain: true } : {}),
      ...(agentId ? { agentId } : {}),
    }
    const message = isObject(entry.message) ? entry.message : {}
    const content = message.content

    if (type === 'system') {
      if (entry.subtype === 'compact_boundary') continue // a marker: the summary line follows
      const text = str(entry.content) ?? textOf(content)
      if (text === '') continue
      records.push({
        type: 'message',
        id,
        order: order++,
        ...common,
        role: 'system',
        text,
        contentType: 'text',
        isMeta: true,
        visibility: VISIBLE,
        ...side,
      })
      continue
    }

    if (type === 'user') {
      const text = textOf(content)
      if (entry.isCompactSummary === true) {
        records.push({
          type: 'summary',
          id,
          order: order++,
          ...common,
          source: 'compaction',
          text,
          visibility: VISIBLE,
        })
        continue
      }
      const results = Array.isArray(content)
        ? content.filter((b): b is JsonObject => isObject(b) && b.type === 'tool_result')
        : []
      if (text !== '' || results.length === 0) {
        records.push({
          type: 'message',
          id,
          order: order++,
          ...common,
          role: 'user',
          text,
          contentType: 'text',
          ...(entry.isMeta === true ? { isMeta: true } : {}),
          visibility: VISIBLE,
          ...side,
        })
      }
      results.forEach((block, i) => {
        const callId = str(block.tool_use_id) || 'unknown'
        const call = calls.get(callId)
        records.push({
          type: 'tool_result',
          id: `${id}/result${i}`,
          order: order++,
          ...(timestamp === undefined ? {} : { timestamp }),
          callId,
          ...(call ? { callRecordId: call.id, name: call.name } : {}),
          output: textOf(block.content),
          isError: block.is_error === true,
          visibility: VISIBLE,
        })
      })
      continue
    }

    // assistant
    const blocks = Array.isArray(content) ? content : []
    const text = textOf(content)
    const reasoning = thinkingOf(content)
    const toolUses = blocks.filter((b): b is JsonObject => isObject(b) && b.type === 'tool_use')
    const messageId = str(message.id)
    const requestId = str(entry.requestId)
    const usageKey = messageId === undefined ? undefined : `${messageId}\u0000${requestId ?? ''}`
    let used: MessageRecord['usage']
    if (usageKey === undefined || !usageKeys.has(usageKey)) {
      if (usageKey !== undefined) usageKeys.add(usageKey)
      const u = isObject(message.usage) ? message.usage : {}
      used = usage(
        count(u.input_tokens) + count(u.cache_creation_input_tokens) + count(u.cache_read_input_tokens),
        count(u.output_tokens),
      )
    }
    const model = str(message.model)
    records.push({
      type: 'message',
      id,
      order: order++,
      ...common,
      role: 'assistant',
      text,
      ...(reasoning ? { reasoning } : {}),
      contentType: text !== '' ? 'text' : toolUses.length > 0 ? 'tool_use' : reasoning ? 'reasoning' : 'text',
      ...(entry.isMeta === true ? { isMeta: true } : {}),
      visibility: VISIBLE,
      ...(model ? { model } : {}),
      ...side,
      ...(used ? { usage: used } : {}),
    })
    toolUses.forEach((block, i) => {
      const callId = str(block.id) || `${id}/call${i}`
      const call: ToolCallRecord = {
        type: 'tool_call',
        id: `${id}/call${i}`,
        messageId: id,
        callId,
        name: str(block.name) ?? '',
        input: asJson(block.input),
        visibility: VISIBLE,
      }
      calls.set(callId, call)
      records.push(call)
    })
  }

  const firstPrompt = records.find(
    (r): r is MessageRecord =>
      r.type === 'message' && r.role === 'user' && !r.isMeta && !r.sidechain && r.text !== '',
  )
  const fallbackId = `file-${stableHash(JSON.stringify(parsed.lines[0]?.value ?? {}))}`
  return [
    sessionRecord({
      id: sessionId || fallbackId,
      provider: 'claude',
      title: titleFrom(summaryTitle) ?? titleFrom(firstPrompt?.text) ?? 'Claude Code session',
      cwd,
      startedAt,
      endedAt,
      messageCount: countVisibleMessages(records),
    }),
    ...records,
  ]
}
