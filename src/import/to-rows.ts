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

import { branchOf, placed as placeRow } from '../core/history-tree'
import { historyOfImport } from '../core/imported-tree'
import { clampPrompt, clampResponse } from '../core/preview'
import { SessionlineError } from '../schema/errors'
import type { ImportedTree } from '../schema/history'
import type { MessagePart, SessionMessage, ToolPart } from '../schema/messages'
import {
  isOrderedRecord,
  type MessageRecord,
  type SessionRecord,
  type SummaryRecord,
  type ToolCallRecord,
  type ToolResultRecord,
  type TranscriptRecord,
  type TreeRecord,
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
  /** The file's history tree over these rows, when the file keeps one (docs/decisions/0037). */
  tree?: ImportedTree
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
  /** The row each ordered record went into (a merged result or reasoning: the row it joined). */
  const rowOfRecord = new Map<string, string>()
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
    rowOfRecord.set(record.id, row.id)
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
    if (reasoningFrom) rowOfRecord.set(reasoningFrom.id, row.id)
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
      rowOfRecord.set(record.id, slot.row.id)
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

  const treeRecord = records.find((r): r is TreeRecord => r.type === 'tree')
  if (treeRecord === undefined) {
    return { sessionId, session, rows, outline: rowsOutline(rows), usage: rowsUsage(rows) }
  }
  const tree = treeOverRows(treeRecord, rowOfRecord)
  // The file's own visibility stands; the tree adds each row's branch place.
  const history = historyOfImport(tree, roleIn(rows))
  const placed = rows.map((row) => placeRow(row, undefined, branchOf(history, row.id)))
  return { sessionId, session, rows: placed, outline: rowsOutline(placed), usage: rowsUsage(placed), tree }
}

const roleIn = (rows: readonly SessionMessage[]) => {
  const roles = new Map(rows.map((r) => [r.id, r.role]))
  return (id: string) => roles.get(id)
}

/**
 * A file's tree over its records as a tree over the rows they went into: a record merged into a
 * row already in the tree (a tool result into its call's row, reasoning into the next answer)
 * adds no node, and its children hang under that row.
 */
function treeOverRows(record: TreeRecord, rowOfRecord: ReadonlyMap<string, string>): ImportedTree {
  const byId = new Map(record.nodes.map((n) => [n.id, n]))
  /** The row a node's children hang under (`null`: none above). */
  const lower = new Map<string, string | null>()
  const nodes: ImportedTree['nodes'] = []
  const placedRows = new Set<string>()
  const lowerOf = (id: string | null): string | null => {
    if (id === null) return null
    const known = lower.get(id)
    if (known !== undefined) return known
    const chain: string[] = []
    let at: string | null = id
    while (at !== null && !lower.has(at) && byId.has(at) && !chain.includes(at)) {
      chain.push(at)
      at = byId.get(at)!.parent
    }
    let below: string | null = at !== null ? (lower.get(at) ?? null) : null
    for (let i = chain.length - 1; i >= 0; i--) {
      const node = byId.get(chain[i]!)!
      const row = rowOfRecord.get(node.id)
      if (row !== undefined && row !== below && !placedRows.has(row)) {
        placedRows.add(row)
        const entry: ImportedTree['nodes'][number] = { id: row, parent: below }
        if (node.through !== undefined) entry.through = lowerOf(node.through)
        if (node.copyOf !== undefined) {
          const of = rowOfRecord.get(node.copyOf)
          if (of !== undefined) entry.copyOf = of
        }
        if (node.silent) entry.silent = true
        nodes.push(entry)
        below = row
      }
      // A record merged into a row placed above (a result into its call's row) adds no node:
      // its children hang where its parent's do.
      lower.set(node.id, below)
    }
    return below
  }
  for (const node of record.nodes) lowerOf(node.id)
  const head = lowerOf(record.head)
  return { head, fileHead: head, nodes }
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

/**
 * Stored rows with their turns numbered again after their visibility changed (an imported tree
 * switched to another branch, docs/decisions/0037), by the rule `recordsToRows` numbers them
 * with: each prompt that is not hidden nor steered opens the next turn in row order; a visible
 * row carries the turn of the newest visible prompt before it, any other row that of the newest
 * prompt. A row whose turn stays is the same object.
 */
export function renumberTurns(rows: readonly SessionMessage[]): SessionMessage[] {
  let turns = 0
  let visibleTurn = 0
  return rows.map((row) => {
    const prompt =
      row.role === 'user' && row.source === 'user' && row.delivery !== 'steer' && row.visibility !== 'hidden'
    if (prompt) {
      turns++
      if (row.visibility === 'visible') visibleTurn = turns
    }
    const turn = row.visibility === 'visible' ? visibleTurn : turns
    return turn === row.turn ? row : { ...row, turn }
  })
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
