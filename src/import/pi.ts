/**
 * Pi session files (v1, v2, v3) to canonical records.
 *
 * Facts of the format (Pi's session-format documentation and `buildSessionContext`, MIT):
 * - Line 1 is the header `{type: 'session', version?, id, timestamp, cwd}`; v1 has no version
 *   and no entry ids (a linear list), v2 added the `id`/`parentId` tree, v3 renamed the
 *   `hookMessage` role to `custom`. A later version (the agent-core format) is refused.
 * - The current position is the last entry, or, when the last position-moving line is a
 *   durable `{type: 'leaf', targetId}` line, its target (`null`: an empty context).
 * - What Pi sends to the model is the path from the root to that leaf, except that the last
 *   compaction on the path replaces what came before it: its summary, then (legacy form) the
 *   path entries from `firstKeptEntryId` up to the compaction, or (newer form) the messages the
 *   compaction carries in `retainedTail`; then every entry after the compaction. Branch
 *   summaries and custom messages on the path are sent too.
 *
 * Our rules on top: that context is `visible`, every other message `inactive`, a custom
 * message with `display: false` `hidden`; a shell command run with `excludeFromContext`, and a
 * hidden message off the path, are `excludedFromContext` (docs/decisions/0009). An assistant
 * message that stopped `aborted` or with an `error` keeps its `errorMessage` as text and is
 * `interrupted` or `error`. The title is the session's name, else its first user message in the
 * file (as Pi's session list shows it), whatever a compaction later replaced. A parent id that names no entry makes an orphan root
 * (as in Pi); duplicate ids, a parent cycle or a leaf naming no entry fail the import. v1
 * entries get ids `v1-<n>` (n: 1-based among entries), so re-importing a file keeps them.
 * Tool results link to a call of an ancestor only (Pi reuses call ids across branches).
 * Usage input is input + cacheRead + cacheWrite; `retainedTail` copies carry none (their
 * originals already counted).
 */
import type { Usage, Visibility } from '../schema/common'
import { SessionlineError } from '../schema/errors'
import type { Finish } from '../schema/events'
import type {
  MessageRecord,
  OrderedRecord,
  SummaryRecord,
  ToolCallRecord,
  ToolResultRecord,
  TranscriptRecord,
  TreeRecord,
} from '../schema/records'
import type { JsonLine, JsonObject, ParsedLines } from './jsonl'
import { transcriptOrder } from './order'
import type { SkipLog } from './skips'
import {
  asJson,
  count,
  isObject,
  sessionRecord,
  str,
  textOf,
  thinkingOf,
  titleFrom,
  toMillis,
  usage,
} from './util'

/** Newest Pi session version this adapter reads. */
export const PI_MAX_VERSION = 3

interface PiNode {
  id: string
  parentId: string | null
  type: string
  raw: JsonObject
  line: number
  /** Position in file order (tail items of a compaction follow it). */
  pos: number
}

function fail(message: string, details?: unknown): never {
  throw new SessionlineError('invalid_input', `Invalid Pi session: ${message}`, details)
}

function readHeader(lines: readonly JsonLine[]): { header: JsonObject; version: number } {
  const header = lines[0]?.value
  if (header?.type !== 'session' || typeof header.id !== 'string' || header.id === '') {
    throw new SessionlineError(
      'unsupported_format',
      'Not a Pi session file: its first line is not a session header',
    )
  }
  const version = header.version === undefined ? 1 : header.version
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    fail(`header version ${JSON.stringify(header.version)} is not a version number`)
  }
  if (version > PI_MAX_VERSION) {
    throw new SessionlineError(
      'unsupported_format',
      `Pi session format v${version} (the agent-core format) is not supported: sessionline reads v1 to v${PI_MAX_VERSION}`,
      { version },
    )
  }
  return { header, version }
}

/** The tree entries (header and `leaf` lines excluded) and the current leaf id. */
function readTree(
  lines: readonly JsonLine[],
  version: number,
  skips?: SkipLog,
): { nodes: PiNode[]; leafId: string | null } {
  const body = lines.slice(1).filter((l) => l.value.type !== 'session')
  const nodes: PiNode[] = []
  let leafId: string | null = null
  if (version < 2) {
    // v1: a list. Ids are derived from the position so a re-import keeps them.
    const idOf = new Map<JsonLine, string>()
    body.forEach((l, i) => {
      idOf.set(l, `v1-${i + 1}`)
    })
    body.forEach((l, i) => {
      const raw = { ...l.value }
      if (raw.type === 'compaction' && typeof raw.firstKeptEntryIndex === 'number') {
        // The index counts the header as entry 0, as Pi's migration does.
        const target = lines[raw.firstKeptEntryIndex]
        const targetId = target ? idOf.get(target) : undefined
        if (targetId !== undefined) raw.firstKeptEntryId = targetId
      }
      const id = idOf.get(l)!
      nodes.push({
        id,
        parentId: i === 0 ? null : `v1-${i}`,
        type: String(raw.type),
        raw,
        line: l.line,
        pos: 0,
      })
      leafId = id
    })
    return { nodes, leafId }
  }
  for (const l of body) {
    const raw = l.value
    if (raw.type === 'leaf') {
      if (typeof raw.targetId === 'string' || raw.targetId === null) leafId = raw.targetId
      continue
    }
    if (typeof raw.id !== 'string' || raw.id === '') {
      skips?.add(l.line, 'no_entry_id') // no identity: it cannot sit in the tree
      continue
    }
    const parentId = typeof raw.parentId === 'string' && raw.parentId !== '' ? raw.parentId : null
    nodes.push({ id: raw.id, parentId, type: String(raw.type), raw, line: l.line, pos: 0 })
    leafId = raw.id
  }
  return { nodes, leafId }
}

function indexTree(nodes: readonly PiNode[]): Map<string, PiNode> {
  const byId = new Map<string, PiNode>()
  for (const node of nodes) {
    const seen = byId.get(node.id)
    if (seen)
      fail(`entry id "${node.id}" appears twice (lines ${seen.line} and ${node.line})`, { id: node.id })
    byId.set(node.id, node)
  }
  // Every parent chain must end (at a root or a missing parent): a cycle has no root to walk to.
  const state = new Map<string, 1 | 2>()
  for (const node of nodes) {
    const chain: PiNode[] = []
    let current: PiNode | undefined = node
    while (current && state.get(current.id) === undefined) {
      state.set(current.id, 1)
      chain.push(current)
      current = current.parentId === null ? undefined : byId.get(current.parentId)
    }
    if (current && state.get(current.id) === 1)
      fail(`entry "${current.id}" is its own ancestor`, { id: current.id })
    for (const done of chain) state.set(done.id, 2)
  }
  return byId
}

function pathTo(leafId: string | null, byId: ReadonlyMap<string, PiNode>): PiNode[] {
  if (leafId === null) return []
  const path: PiNode[] = []
  let current = byId.get(leafId)
  while (current) {
    path.push(current)
    current = current.parentId === null ? undefined : byId.get(current.parentId)
  }
  return path.reverse()
}

const tailOf = (node: PiNode): unknown[] | undefined =>
  node.type === 'compaction' && Array.isArray(node.raw.retainedTail) ? node.raw.retainedTail : undefined
export const tailKey = (compactionId: string, index: number) => `${compactionId}#tail${index}`

const KNOWN_ROLES = new Set([
  'user',
  'assistant',
  'toolResult',
  'custom',
  'hookMessage',
  'bashExecution',
  'branchSummary',
  'compactionSummary',
])
const producesRecord = (message: unknown) => isObject(message) && KNOWN_ROLES.has(String(message.role))

/** Keys of the records Pi would send to the model, in the order it sends them. */
function contextKeys(path: readonly PiNode[]): { keys: string[]; active?: PiNode; firstKept?: PiNode } {
  let ci = -1
  for (let i = path.length - 1; i >= 0; i--) {
    if (path[i]!.type === 'compaction') {
      ci = i
      break
    }
  }
  const active = ci >= 0 ? path[ci] : undefined
  let selected: readonly PiNode[] = path
  let firstKept: PiNode | undefined
  if (active) {
    const tail = tailOf(active)
    const before: PiNode[] = []
    if (!tail) {
      const k = path.findIndex((e, i) => i < ci && e.id === active.raw.firstKeptEntryId)
      if (k >= 0) {
        firstKept = path[k]
        before.push(...path.slice(k, ci))
      }
    }
    selected = [active, ...before, ...path.slice(ci + 1)]
  }
  const keys: string[] = []
  for (const node of selected) {
    if (node === active) {
      keys.push(node.id)
      tailOf(node)?.forEach((m, i) => {
        if (producesRecord(m)) keys.push(tailKey(node.id, i))
      })
    } else if (node.type === 'message' && producesRecord(node.raw.message)) keys.push(node.id)
    else if (node.type === 'custom_message') keys.push(node.id)
    else if (
      node.type === 'branch_summary' &&
      typeof node.raw.summary === 'string' &&
      node.raw.summary !== ''
    )
      keys.push(node.id)
  }
  return { keys, active, firstKept }
}

function piUsage(value: unknown): Usage | undefined {
  if (!isObject(value)) return undefined
  return usage(count(value.input) + count(value.cacheRead) + count(value.cacheWrite), count(value.output))
}

/** Pi's `stopReason` as the engine's finish. */
const PI_FINISH: Record<string, Finish | undefined> = {
  stop: 'stop',
  toolUse: 'tool-calls',
  length: 'length',
  aborted: 'aborted',
  error: 'error',
}

interface Emit {
  key: string
  pos: number
  parentId: string | undefined
  timestamp: number | undefined
  visibility: (key: string, hidden?: boolean) => Visibility
  /** Whether Pi sends the record of `key` to the model at the current leaf. */
  inContext: (key: string) => boolean
  withUsage: boolean
}

/** Records of one Pi `AgentMessage` (an entry's message or a retained-tail copy). */
function messageRecords(message: JsonObject, at: Emit, out: TranscriptRecord[]): void {
  const role = message.role
  const timestamp = at.timestamp ?? toMillis(message.timestamp)
  const base = { id: at.key, order: 0, ...(timestamp === undefined ? {} : { timestamp }) }
  const parent = at.parentId === undefined ? {} : { parentId: at.parentId }
  switch (role) {
    case 'user':
    case 'custom':
    case 'hookMessage':
    case 'bashExecution': {
      const custom = role === 'custom' || role === 'hookMessage'
      const text =
        role === 'bashExecution'
          ? `$ ${str(message.command) ?? ''}\n${str(message.output) ?? ''}`
          : textOf(message.content)
      const record: MessageRecord = {
        type: 'message',
        ...base,
        ...parent,
        role: 'user',
        text,
        contentType: custom ? 'custom' : role === 'bashExecution' ? 'command' : 'text',
        visibility: at.visibility(at.key, custom && message.display === false),
        ...(custom ? { isMeta: true } : {}),
        // Shown but never sent (a `!!` command), or never shown and off the path: either way
        // not the model's context, which `visibility` alone cannot say (docs/decisions/0009).
        ...((role === 'bashExecution' && message.excludeFromContext === true) ||
        (custom && message.display === false && !at.inContext(at.key))
          ? { excludedFromContext: true as const }
          : {}),
      }
      out.push(record)
      return
    }
    case 'assistant': {
      const content = Array.isArray(message.content) ? message.content : []
      const reasoning = thinkingOf(content)
      const visibility = at.visibility(at.key)
      const used = at.withUsage ? piUsage(message.usage) : undefined
      const model = str(message.model)
      const stop = str(message.stopReason)
      const failed = stop === 'aborted' || stop === 'error'
      // A failed call shows what Pi shows: whatever streamed, then the error it ended with.
      const error = failed ? str(message.errorMessage)?.trim() : undefined
      const text = [textOf(content), error].filter((t) => t !== undefined && t !== '').join('\n\n')
      const finish = stop === undefined ? undefined : PI_FINISH[stop]
      out.push({
        type: 'message',
        ...base,
        ...parent,
        role: 'assistant',
        text,
        ...(reasoning ? { reasoning } : {}),
        contentType: 'text',
        visibility,
        ...(model ? { model } : {}),
        ...(used ? { usage: used } : {}),
        ...(failed ? { status: stop === 'aborted' ? ('interrupted' as const) : ('error' as const) } : {}),
        ...(finish ? { finish } : {}),
      })
      content.forEach((block, i) => {
        if (!isObject(block) || block.type !== 'toolCall' || typeof block.id !== 'string' || block.id === '')
          return
        const call: ToolCallRecord = {
          type: 'tool_call',
          id: `${at.key}/call${i}`,
          messageId: at.key,
          callId: block.id,
          name: str(block.name) ?? '',
          input: asJson(block.arguments),
          visibility,
        }
        out.push(call)
      })
      return
    }
    case 'toolResult': {
      const name = str(message.toolName)
      const result: ToolResultRecord = {
        type: 'tool_result',
        ...base,
        callId: str(message.toolCallId) || 'unknown',
        ...(name ? { name } : {}),
        output: textOf(message.content),
        isError: message.isError === true,
        visibility: at.visibility(at.key),
      }
      out.push(result)
      return
    }
    case 'branchSummary':
    case 'compactionSummary': {
      const summary: SummaryRecord = {
        type: 'summary',
        ...base,
        ...parent,
        source: role === 'branchSummary' ? 'branch_summary' : 'compaction',
        text: str(message.summary) ?? '',
        visibility: at.visibility(at.key),
      }
      out.push(summary)
      return
    }
  }
}

/** Links each tool result to the nearest call with its id among its ancestors (depth-first, scoped). */
function linkToolResults(
  nodes: readonly PiNode[],
  byId: ReadonlyMap<string, PiNode>,
  byKey: Map<string, TranscriptRecord[]>,
) {
  const children = new Map<string | null, PiNode[]>()
  for (const node of nodes) {
    const parent = node.parentId !== null && byId.has(node.parentId) ? node.parentId : null
    const list = children.get(parent)
    if (list) list.push(node)
    else children.set(parent, [node])
  }
  const scope = new Map<string, string[]>()
  const visit = (key: string, pushed: string[]) => {
    for (const record of byKey.get(key) ?? []) {
      if (record.type === 'tool_call') {
        const stack = scope.get(record.callId)
        if (stack) stack.push(record.id)
        else scope.set(record.callId, [record.id])
        pushed.push(record.callId)
      } else if (record.type === 'tool_result') {
        const callRecordId = scope.get(record.callId)?.at(-1)
        if (callRecordId !== undefined) record.callRecordId = callRecordId
      }
    }
  }
  type Frame = { node: PiNode; pushed: string[]; entered: boolean }
  const stack: Frame[] = (children.get(null) ?? [])
    .map((node) => ({ node, pushed: [], entered: false }))
    .reverse()
  while (stack.length > 0) {
    const frame = stack.at(-1)!
    if (frame.entered) {
      stack.pop()
      for (const callId of frame.pushed) scope.get(callId)!.pop()
      continue
    }
    frame.entered = true
    visit(frame.node.id, frame.pushed)
    tailOf(frame.node)?.forEach((_, i) => {
      visit(tailKey(frame.node.id, i), frame.pushed)
    })
    const kids = children.get(frame.node.id) ?? []
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i]!, pushed: [], entered: false })
  }
}

export function parsePiSession(parsed: ParsedLines): TranscriptRecord[] {
  const { header, version } = readHeader(parsed.lines)
  const { nodes, leafId } = readTree(parsed.lines, version, parsed.skips)
  const byId = indexTree(nodes)
  if (leafId !== null && !byId.has(leafId)) fail(`the current leaf "${leafId}" names no entry`, { leafId })
  const path = pathTo(leafId, byId)
  const context = contextKeys(path)
  const inContext = new Set(context.keys)
  const visibility = (key: string, hidden = false): Visibility =>
    hidden ? 'hidden' : inContext.has(key) ? 'visible' : 'inactive'

  const records: TranscriptRecord[] = []
  const byKey = new Map<string, TranscriptRecord[]>()
  const positions: { key: string; pos: number }[] = []
  let pos = 0
  let title: string | undefined
  let endedAt = toMillis(header.timestamp)
  const emit = (
    key: string,
    at: Omit<Emit, 'key' | 'pos' | 'visibility' | 'inContext'>,
    build: (e: Emit) => void,
  ) => {
    const before = records.length
    build({ key, pos, visibility, inContext: (k) => inContext.has(k), ...at })
    const made = records.slice(before)
    if (made.length > 0) {
      byKey.set(key, made)
      positions.push({ key, pos })
    }
    pos++
  }
  const nodePos = new Map<string, number>()
  for (const node of nodes) {
    const raw = node.raw
    const timestamp = toMillis(raw.timestamp)
    if (timestamp !== undefined && (endedAt === undefined || timestamp > endedAt)) endedAt = timestamp
    const parentId = node.parentId ?? undefined
    nodePos.set(node.id, pos)
    if (node.type === 'session_info' && typeof raw.name === 'string' && raw.name.trim() !== '')
      title = raw.name
    emit(node.id, { parentId, timestamp, withUsage: true }, (at) => {
      if (node.type === 'message' && isObject(raw.message)) messageRecords(raw.message, at, records)
      else if (node.type === 'custom_message') {
        messageRecords({ role: 'custom', content: raw.content, display: raw.display }, at, records)
      } else if (node.type === 'branch_summary' || node.type === 'compaction') {
        const used = piUsage(raw.usage)
        records.push({
          type: 'summary',
          id: at.key,
          order: 0,
          ...(parentId === undefined ? {} : { parentId }),
          ...(timestamp === undefined ? {} : { timestamp }),
          source: node.type === 'compaction' ? 'compaction' : 'branch_summary',
          text: str(raw.summary) ?? '',
          visibility: visibility(at.key),
          ...(used ? { usage: used } : {}),
        })
      }
    })
    const tail = tailOf(node)
    tail?.forEach((message, i) => {
      const key = tailKey(node.id, i)
      const previous = i === 0 ? node.id : tailKey(node.id, i - 1)
      emit(key, { parentId: previous, timestamp: undefined, withUsage: false }, (at) => {
        if (isObject(message)) messageRecords(message, at, records)
      })
    })
  }

  linkToolResults(nodes, byId, byKey)

  // The legacy summary is sent before the entries it keeps: place it there.
  if (context.active && context.firstKept) {
    const summary = positions.find((p) => p.key === context.active!.id)
    if (summary) summary.pos = nodePos.get(context.firstKept.id)! - 0.5
  }
  const order = transcriptOrder(positions, context.keys)
  order.forEach((key, i) => {
    for (const record of byKey.get(key)!) {
      if (record.type !== 'tool_call') (record as OrderedRecord).order = i
    }
  })
  const ordered = order.flatMap((key) => byKey.get(key)!)

  const tree = treeRecord(nodes, byId, byKey, leafId)
  const messages = ordered.filter((r): r is MessageRecord => r.type === 'message')
  // Pi's session list names a session by its first user message in the file, whatever came after.
  const firstPrompt = records.find(
    (r): r is MessageRecord =>
      r.type === 'message' && r.role === 'user' && r.contentType === 'text' && r.text.trim() !== '',
  )
  return [
    sessionRecord({
      id: header.id as string,
      provider: 'pi',
      title: titleFrom(title) ?? titleFrom(firstPrompt?.text) ?? 'Pi session',
      cwd: str(header.cwd),
      startedAt: toMillis(header.timestamp),
      endedAt,
      messageCount: messages.filter((m) => m.visibility === 'visible').length,
      formatVersion: version,
    }),
    ...ordered,
    tree,
  ]
}

/**
 * The file's tree over the records it made (docs/decisions/0037): each record-making entry, and
 * each retained copy (chained under its compaction), hangs under the nearest record-making
 * ancestor; the children of a compaction with a retained tail hang under its last copy, since
 * that is where the path the tool sends runs. A compaction replaces what its first kept entry
 * hangs under (all before it when it keeps nothing on its path).
 */
function treeRecord(
  nodes: readonly PiNode[],
  byId: ReadonlyMap<string, PiNode>,
  byKey: ReadonlyMap<string, TranscriptRecord[]>,
  leafId: string | null,
): TreeRecord {
  const made = (key: string) => byKey.get(key)?.some((r) => r.type !== 'tool_call') === true
  const lower = new Map<string, string | null>()
  /** The node an entry's children hang under. Iterative: a long linear file is a deep chain. */
  const lowerOf = (id: string): string | null => {
    const chain: PiNode[] = []
    let at: PiNode | undefined = byId.get(id)
    while (at && !lower.has(at.id)) {
      chain.push(at)
      at = at.parentId === null ? undefined : byId.get(at.parentId)
    }
    let below: string | null = at ? lower.get(at.id)! : null
    for (let i = chain.length - 1; i >= 0; i--) {
      const node = chain[i]!
      if (made(node.id)) below = node.id
      tailOf(node)?.forEach((_, t) => {
        if (made(tailKey(node.id, t))) below = tailKey(node.id, t)
      })
      lower.set(node.id, below)
    }
    return below
  }
  const upperOf = (node: PiNode): string | null =>
    node.parentId !== null && byId.has(node.parentId) ? lowerOf(node.parentId) : null
  const out: TreeRecord['nodes'] = []
  for (const node of nodes) {
    let last = upperOf(node)
    if (made(node.id)) {
      const entry: TreeRecord['nodes'][number] = { id: node.id, parent: last }
      if (node.type === 'compaction') {
        const kept = tailOf(node) ? undefined : node.raw.firstKeptEntryId
        const first = typeof kept === 'string' ? pathTo(node.id, byId).find((e) => e.id === kept) : undefined
        entry.through = upperOf(first && first !== node ? first : node)
      }
      if (
        node.type === 'branch_summary' &&
        !(typeof node.raw.summary === 'string' && node.raw.summary !== '')
      )
        entry.silent = true
      out.push(entry)
      last = node.id
    }
    tailOf(node)?.forEach((_, t) => {
      const key = tailKey(node.id, t)
      if (!made(key)) return
      out.push({ id: key, parent: last, copyOf: node.id })
      last = key
    })
  }
  return { type: 'tree', head: leafId === null ? null : lowerOf(leafId), nodes: out }
}
