/**
 * Canonical records to the stored form of a session: transcript rows (docs/architecture.md §3), the turn
 * outline and usage totals. Pure, and blind to the provider: the same rules for every file.
 *
 * - Rows follow the records' `order`; `seq` counts rows from 1.
 * - A message becomes a row with a reasoning part, a text part and one tool part per call; a
 *   reasoning-only message joins the next assistant message of the same visibility (unless
 *   both carry usage); a summary becomes a `summary` row with a text part.
 * - A tool result fills its call's tool part when its call is in the file and has the same
 *   visibility; otherwise it stands as its own assistant row (tool part with `input: null`). A
 *   call that never got a result is `interrupted`.
 * - Each human prompt (a user message of authored text or a slash command, not meta, not a
 *   sub-agent's, not one steered into a running turn) opens the next turn, visible or superseded alike, numbered in
 *   row order: superseded history keeps its turns. A visible row carries the turn of the
 *   newest visible prompt before it, any other row that of the newest prompt (0 before the
 *   first). The outline lists every turn (superseded ones marked `inactive`): its prompt and the
 *   newest assistant text of the prompt's visibility in it.
 * - A call names its sub-agent's session by engine id; a message's status, finish, delivery,
 *   slash command and context exclusion carry over to its row.
 * - Usage totals add every row's usage, whatever its visibility: abandoned work still cost.
 *
 * @example
 *   const { sessionId, rows, outline, usage } = recordsToRows(parseTranscript(text).records)
 */

import { clampPrompt, clampResponse } from '../core/preview'
import { SessionlineError } from '../schema/errors'
import type { MessagePart, SessionMessage, ToolPart } from '../schema/messages'
import {
  isOrderedRecord,
  type MessageRecord,
  type SessionRecord,
  type SummaryRecord,
  type ToolCallRecord,
  type ToolResultRecord,
  type TranscriptRecord,
} from '../schema/records'
import type { ImportOrigin, Provider, SkippedLines, TurnOutlineEntry, UsageTotals } from '../schema/session'
import { stableHash } from './util'

export interface StoredTranscript {
  /** The engine's id of the imported session: provider + the file's session identity. */
  sessionId: string
  session: SessionRecord
  rows: SessionMessage[]
  outline: TurnOutlineEntry[]
  usage: UsageTotals
}

const MAX_ID = 256

/** The engine's session id (and origin key) of a provider file's session. */
export function importedSessionId(provider: Provider, fileSessionId: string): string {
  const id = `${provider}:${fileSessionId}`
  return id.length <= MAX_ID ? id : `${provider}:${fileSessionId.slice(0, 180)}~${stableHash(fileSessionId)}`
}

/**
 * What an imported session's origin says beyond the file itself: the parent session of a
 * sub-agent's file (by engine id) and the lines the import left out.
 */
export function importedOriginFacts(
  session: SessionRecord,
  skipped: readonly SkippedLines[] = [],
): Pick<ImportOrigin, 'parentSessionId' | 'agentId' | 'skipped'> {
  return {
    ...(session.parentSessionId
      ? { parentSessionId: importedSessionId(session.provider, session.parentSessionId) }
      : {}),
    ...(session.agentId ? { agentId: session.agentId } : {}),
    ...(skipped.length > 0 ? { skipped: skipped.map((s) => ({ ...s, lines: [...s.lines] })) } : {}),
  }
}

const rowId = (sessionId: string, recordId: string) => {
  const id = `${sessionId}/${recordId}`
  return id.length <= MAX_ID ? id : `${id.slice(0, 200)}~${stableHash(id)}`
}

/**
 * Text a person typed (a prompt, or a prompt steered into a running turn), or a slash command
 * they ran that the adapter did not mark meta (one the model then worked on).
 */
const isHumanText = (m: MessageRecord) =>
  m.role === 'user' &&
  (m.contentType === 'text' || m.contentType === 'slash_command') &&
  m.isMeta !== true &&
  m.sidechain !== true
/** A prompt that starts a turn of its own. */
const opensTurn = (m: MessageRecord) => isHumanText(m) && m.delivery !== 'steer' && m.visibility !== 'hidden'

/** Reads the session record; refuses `delta` record sets, which describe only part of a file. */
export function sessionRecordOf(records: readonly TranscriptRecord[]): SessionRecord {
  const session = records.find((r): r is SessionRecord => r.type === 'session')
  if (!session) throw new SessionlineError('invalid_input', 'Transcript records need a session record')
  if (session.countMode === 'delta') {
    throw new SessionlineError(
      'invalid_input',
      'A delta record set (countMode "delta") describes only part of a session: merge it into the full records first',
    )
  }
  return session
}

export function recordsToRows(records: readonly TranscriptRecord[]): StoredTranscript {
  const session = sessionRecordOf(records)
  const sessionId = importedSessionId(session.provider, session.id)
  const ordered = records.filter(isOrderedRecord).sort((a, b) => a.order - b.order)
  const callsOf = new Map<string, ToolCallRecord[]>()
  for (const r of records) {
    if (r.type !== 'tool_call') continue
    const list = callsOf.get(r.messageId)
    if (list) list.push(r)
    else callsOf.set(r.messageId, [r])
  }

  const rows: SessionMessage[] = []
  const toolParts = new Map<string, { row: SessionMessage; index: number }>()
  let turns = 0
  let visibleTurn = 0
  let anyTurn = 0
  let clock = session.startedAt ?? 0
  let pendingReasoning: MessageRecord | undefined

  const push = (
    record: MessageRecord | SummaryRecord | ToolResultRecord,
    fields: Pick<SessionMessage, 'role' | 'parts'> & Partial<SessionMessage>,
  ) => {
    clock = record.timestamp ?? clock
    const row: SessionMessage = {
      id: rowId(sessionId, record.id),
      sessionId,
      seq: rows.length + 1,
      turn: record.visibility === 'visible' ? visibleTurn : anyTurn,
      status: 'complete',
      visibility: record.visibility,
      createdAt: clock,
      updatedAt: clock,
      ...fields,
    }
    rows.push(row)
    return row
  }

  const pushMessage = (m: MessageRecord, reasoningFrom?: MessageRecord) => {
    if (opensTurn(m)) {
      anyTurn = ++turns
      if (m.visibility === 'visible') visibleTurn = turns
    }
    const parts: MessagePart[] = []
    const reasoning = [reasoningFrom?.reasoning, m.reasoning].filter((t): t is string => !!t).join('\n')
    if (reasoning) parts.push({ type: 'reasoning', text: reasoning })
    if (m.text !== '') parts.push({ type: 'text', text: m.text })
    const calls = callsOf.get(m.id) ?? []
    for (const call of calls) {
      parts.push({
        type: 'tool',
        callId: call.callId,
        name: call.name,
        input: call.input,
        state: 'interrupted',
        ...(call.agentSessionId
          ? { agentSessionId: importedSessionId(session.provider, call.agentSessionId) }
          : {}),
      })
    }
    const used = reasoningFrom?.usage ?? m.usage
    const agentId = m.agentId ?? (m.sidechain ? 'sidechain' : undefined)
    const row = push(m, {
      role: m.role,
      parts,
      ...(used ? { usage: used } : {}),
      ...(m.role === 'user' ? { source: isHumanText(m) ? 'user' : 'synthetic' } : {}),
      ...(m.status ? { status: m.status } : {}),
      ...(m.finish ? { finish: m.finish } : {}),
      ...(m.delivery ? { delivery: m.delivery } : {}),
      ...(m.command ? { command: { ...m.command } } : {}),
      ...(m.excludedFromContext ? { excludedFromContext: true as const } : {}),
      ...(m.model ? { model: m.model } : {}),
      ...(agentId ? { agentId } : {}),
      ...(m.isMeta ? { isMeta: true } : {}),
      ...(m.parentId ? { parentId: m.parentId } : {}),
    })
    calls.forEach((call, i) => {
      toolParts.set(call.id, { row, index: parts.length - calls.length + i })
    })
  }

  const flushReasoning = () => {
    if (pendingReasoning) pushMessage(pendingReasoning)
    pendingReasoning = undefined
  }

  for (const record of ordered) {
    if (record.type === 'message') {
      const reasoningOnly =
        record.contentType === 'reasoning' &&
        record.role === 'assistant' &&
        record.text === '' &&
        !callsOf.has(record.id)
      if (reasoningOnly) {
        flushReasoning()
        pendingReasoning = record
        continue
      }
      const joins =
        pendingReasoning !== undefined &&
        record.role === 'assistant' &&
        record.visibility === pendingReasoning.visibility &&
        !(pendingReasoning.usage && record.usage)
      if (joins) {
        const from = pendingReasoning
        pendingReasoning = undefined
        pushMessage(record, from)
      } else {
        flushReasoning()
        pushMessage(record)
      }
      continue
    }
    flushReasoning()
    if (record.type === 'summary') {
      push(record, {
        role: 'summary',
        parts: [{ type: 'text', text: record.text }],
        ...(record.usage ? { usage: record.usage } : {}),
        ...(record.parentId ? { parentId: record.parentId } : {}),
      })
      continue
    }
    const state = record.isError ? 'error' : 'done'
    const slot = record.callRecordId === undefined ? undefined : toolParts.get(record.callRecordId)
    const part = slot?.row.parts[slot.index] as ToolPart | undefined
    if (slot && part && part.output === undefined && slot.row.visibility === record.visibility) {
      slot.row.parts[slot.index] = { ...part, output: record.output, isError: record.isError, state }
      continue
    }
    push(record, {
      role: 'assistant',
      parts: [
        {
          type: 'tool',
          callId: record.callId,
          name: record.name ?? '',
          input: null,
          output: record.output,
          isError: record.isError,
          state,
        },
      ],
    })
  }
  flushReasoning()

  return { sessionId, session, rows, outline: rowsOutline(rows), usage: rowsUsage(rows) }
}

const textOfRow = (row: SessionMessage) =>
  row.parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n')

/**
 * The turn outline of stored rows: one entry per turn (superseded ones marked `inactive`), with
 * the turn's prompt and its newest answer of the same visibility. Only `visible` and `inactive`
 * rows speak; `includeInactive` readers filter on `visibility`.
 */
export function rowsOutline(rows: readonly SessionMessage[]): TurnOutlineEntry[] {
  const entries: TurnOutlineEntry[] = []
  const byTurn = new Map<number, { entry: TurnOutlineEntry; visibility: string; response?: string }>()
  for (const row of rows) {
    if (row.turn === 0 || row.visibility === 'hidden') continue
    const open = byTurn.get(row.turn)
    if (open === undefined) {
      if (row.role !== 'user' || row.source !== 'user') continue
      const entry: TurnOutlineEntry = {
        turn: row.turn,
        seq: row.seq,
        prompt: clampPrompt(textOfRow(row)),
        response: '',
        ...(row.visibility === 'inactive' ? { visibility: 'inactive' as const } : {}),
      }
      entries.push(entry)
      byTurn.set(row.turn, { entry, visibility: row.visibility })
    } else if (row.role === 'assistant' && row.visibility === open.visibility) {
      const text = textOfRow(row)
      if (text !== '') open.response = text
    }
  }
  for (const { entry, response } of byTurn.values()) {
    if (response !== undefined) entry.response = clampResponse(response)
  }
  return entries
}

/** Usage totals of stored rows: every row's usage, whatever its visibility. */
export function rowsUsage(rows: readonly SessionMessage[]): UsageTotals {
  const totals = { input: 0, output: 0, calls: 0 }
  for (const row of rows) {
    if (!row.usage) continue
    totals.input += row.usage.input
    totals.output += row.usage.output
    totals.calls++
  }
  return totals
}
