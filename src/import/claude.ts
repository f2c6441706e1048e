/**
 * Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`, and sub-agents'
 * own files) to canonical records.
 *
 * Facts of the format:
 * - Each line is an entry `{type, uuid, parentUuid, sessionId, cwd, timestamp, isSidechain,
 *   isMeta, message}`; `user`, `assistant` and `system` entries hold the conversation, other
 *   types are bookkeeping (`summary`, `custom-title`, `queue-operation`, `file-history-snapshot`,
 *   `attachment`, `progress`, `last-prompt`, …). Bookkeeping entries with a `uuid` sit in the
 *   `parentUuid` chain too.
 * - The current conversation is the `parentUuid` chain from the last entry; a `system` entry
 *   with subtype `compact_boundary` has `parentUuid: null` and continues the chain through
 *   `logicalParentUuid`, and the user entry after it with `isCompactSummary` holds the summary.
 *   A rewind leaves the abandoned entries in the file, off that chain.
 * - One API response is written as several lines (one per content block) with the same
 *   `message.id` + `requestId`; each repeats the usage, and `output_tokens` grows as it streams.
 * - Slash commands are user entries whose text is `<command-name>…</command-name>`,
 *   `<command-message>…` and `<command-args>…`; their output comes back as
 *   `<local-command-stdout>`; an interruption is a user entry "[Request interrupted by user…]".
 * - Prompts typed while the model worked are `queue-operation` entries: `enqueue` (with the
 *   text), then `dequeue` or `remove` when delivered (`popAll`/`clear`: taken back). A
 *   dequeued prompt is then usually written as a user entry of its own; a removed one that was
 *   folded into the running turn may appear nowhere else.
 * - Sub-agents: up to 2.0 their lines are `isSidechain` entries in the parent's file and also
 *   `agent-<agentId>.jsonl` beside it; from 2.1 they live only in
 *   `<session>/subagents/agent-<agentId>.jsonl`. Either way a sub-agent's lines carry the
 *   parent's `sessionId` and the `agentId`; the parent's tool result for the agent's call names
 *   the agent in `toolUseResult.agentId` (or, in 2.0, the entry's own `agentId`).
 *
 * Our rules: entries on the current chain are `visible`, except those before the last
 * compaction on it (`inactive`, the summary `visible`); entries off the chain are `inactive`,
 * except the lines of a response that is on it, tool results whose call is on it (parallel
 * tool calls branch the chain without superseding anything) and notices (system entries,
 * failed calls) hanging off it that no turn continues from; a parent's sidechain entries are
 * `hidden` (they are the sub-agent's transcript, imported from its own file); an entry other
 * than the first that names no parent (files written without links), or names one the file
 * does not hold (trimmed or damaged files: reported as `missing_parent`), follows the
 * conversation entry before it (docs/decisions/0027).
 * A slash command the model then worked on (an assistant entry follows before any other
 * non-meta user entry: custom commands, skills) is a prompt; one the CLI answered alone
 * (`/clear`, `/model`) is meta. What a hook printed, written as a user entry
 * (`<session-start-hook>`, `<user-prompt-submit-hook>`), is the tool's: no prompt, and no
 * entry between a command and the model's answer to it. The line right after the
 * local-command caveat (bare in 1.0, in `<local-command-caveat>` in 2.1) is the CLI's own
 * output ("Unknown slash command: exit", "Unknown skill: usage"): meta. A `system/api_error`
 * line (a retried failed call) is a meta system message in the `error` state, and an assistant
 * entry whose `message` is a provider's error body, or that Claude Code wrote in the model's
 * place (`isApiErrorMessage`), an assistant message in the `error` state; none has usage.
 * A sub-agent's file is a session of its own, `<sessionId>:agent-<agentId>`, linked to its
 * parent; the parent's call that ran it names that session. Usage counts each response once
 * with its largest counts, input being input + cache creation + cache read. The title is the
 * user's `custom-title`, else a `summary` whose `leafUuid` is an entry of this file, else the
 * first human prompt with envelopes stripped. Command echoes, command output, interruption
 * markers, meta and compact-summary entries are not human prompts; an interruption marks the
 * assistant message it cut off `interrupted`. A delivered queued prompt that no later user
 * entry repeats becomes a user message delivered by `steer`.
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

const CONVERSATION = new Set(['user', 'assistant', 'system'])
/** Entry types that carry no conversation and are read for titles and queues, or not at all. */
const BOOKKEEPING = new Set([
  'summary',
  'custom-title',
  'ai-title',
  'queue-operation',
  'file-history-snapshot',
  'last-prompt',
  'attachment',
  'progress',
  'mode',
  'permission-mode',
  'tag',
  'agent-name',
  'pr-link',
])

const COMMAND_NAME = /<command-name>([\s\S]*?)<\/command-name>/
const COMMAND_ARGS = /<command-args>([\s\S]*?)<\/command-args>/
const CAVEAT = 'Caveat: The messages below were generated by the user while running local commands'
/** Claude Code 2.1 wraps the caveat in this tag; 1.0 wrote it bare. */
const CAVEAT_TAG = '<local-command-caveat>'
/** What a hook printed, injected as a user entry beside the prompt (1.0): context, not a prompt. */
const HOOK_ENVELOPES = ['<user-prompt-submit-hook>', '<session-start-hook>']
/** User-entry texts the tool writes, not the person: command output, echoes, hooks, caveats. */
const TOOL_ENVELOPES = [
  '<local-command-stdout>',
  '<local-command-stderr>',
  '<bash-input>',
  '<bash-stdout>',
  '<bash-stderr>',
  '<task-notification>',
  ...HOOK_ENVELOPES,
  CAVEAT_TAG,
  CAVEAT,
]
const INTERRUPTED = '[Request interrupted by user'
const SYSTEM_REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g

const startsWithAny = (text: string, tags: readonly string[]) => {
  const start = text.trimStart()
  return tags.some((tag) => start.startsWith(tag))
}
const isToolEnvelope = (text: string) => startsWithAny(text, TOOL_ENVELOPES)
const isHookText = (text: string) => startsWithAny(text, HOOK_ENVELOPES)
const isCaveat = (text: string) => startsWithAny(text, [CAVEAT_TAG, CAVEAT])

/** A prompt's text as a title: system reminders the tool appended are not what the user typed. */
const promptText = (text: string) => text.replace(SYSTEM_REMINDER, '').trim()

/** The slash command a user entry echoes, if it is one. */
function slashCommand(text: string): { name: string; args: string } | undefined {
  const name = COMMAND_NAME.exec(text)?.[1]?.trim()
  if (!name) return undefined
  const args = COMMAND_ARGS.exec(text)?.[1]?.trim() ?? ''
  return { name: name.startsWith('/') ? name : `/${name}`, args }
}

/** What Claude Code prints for a failed call it retries: "API Error: 403 … (attempt 1 of 10)". */
function apiErrorText(entry: JsonObject): string {
  const error = isObject(entry.error) ? entry.error : {}
  const inner = isObject(error.error) ? error.error : {}
  const innerError = isObject(inner.error) ? inner.error : inner
  const status = typeof error.status === 'number' ? String(error.status) : undefined
  const detail =
    str(innerError.message) ??
    str(error.message) ??
    (isObject(error.cause) ? (str(error.cause.code) ?? str(error.cause.message)) : undefined) ??
    str(entry.content)
  const attempt =
    typeof entry.retryAttempt === 'number'
      ? ` (attempt ${entry.retryAttempt}${typeof entry.maxRetries === 'number' ? ` of ${entry.maxRetries}` : ''})`
      : ''
  return `API Error${[status, detail].some((s) => s) ? `: ${[status, detail].filter((s) => s).join(' ')}` : ''}${attempt}`
}

/**
 * An `assistant` entry whose `message` is a provider's error body rather than a message (a
 * proxy's `{"Output": {"__type": "…#UnknownOperationException"}}`, an `{"type": "error"}`
 * envelope): the error as Claude Code would print it, else `undefined`.
 */
function providerErrorOf(message: JsonObject): string | undefined {
  if (Array.isArray(message.content) && message.content.length > 0) return undefined
  const output = isObject(message.Output) ? message.Output : message
  const awsType = str(output.__type)
  if (awsType !== undefined) {
    const name = awsType.slice(awsType.lastIndexOf('#') + 1)
    const detail = str(output.message) ?? str(output.Message)
    return `API Error: ${name}${detail ? ` ${detail}` : ''}`
  }
  if (message.type === 'error') {
    const error = isObject(message.error) ? message.error : {}
    const detail = [str(error.type), str(error.message)].filter((s) => s).join(': ')
    return `API Error${detail ? `: ${detail}` : ''}`
  }
  return undefined
}

interface ChainNode {
  parentUuid: string | undefined
  logicalParentUuid: string | undefined
  compactBoundary: boolean
  /** The API response an assistant entry is part of (`message.id` + `requestId`). */
  response: string | undefined
  /** A user entry that only returns tool results. */
  toolResults: boolean
  /** A note about the conversation rather than a turn of it: a `system` entry, a failed call. */
  notice: boolean
}

/** What the first pass learns of the whole file before any record is written. */
interface FileFacts {
  sessionId: string | undefined
  subAgent: { agentId: string | undefined } | undefined
  /** Entries on the current chain after its last compaction (`undefined`: no entry has an id). */
  current: Set<string> | undefined
  /** Entries on the current chain before its last compaction. */
  compacted: Set<string>
  /** Each response's largest counts, by `message.id` + `requestId`. */
  responseUsage: Map<string, { input: number; output: number }>
  /** The agent each tool call ran, by `tool_use_id`. */
  agentOfCall: Map<string, string>
  /** User texts (a command echo also as `/name args`), for telling a queued prompt the file repeats from one it does not. */
  userTexts: { line: number; texts: string[]; used: boolean }[]
  /** Lines of the main conversation's assistant entries, ascending. */
  assistantLines: number[]
  /** Lines of slash-command echoes the model then worked on (custom commands, skills). */
  answeredCommands: Set<number>
  /** Lines the CLI wrote as its own answer right after a local-command caveat. */
  cliNotices: Set<number>
  /** Lines naming a `parentUuid` the file does not hold: joined to the entry before them. */
  brokenLinks: number[]
  title: string | undefined
}

const responseKey = (entry: JsonObject, message: JsonObject) => {
  const id = str(message.id)
  return id === undefined ? undefined : `${id}\u0000${str(entry.requestId) ?? ''}`
}

/**
 * Branches that supersede nothing join the path (file order: parents first). Parallel tool
 * calls: Claude Code writes each `tool_use` block of one response as its own line, each result
 * as a child of its call's line, and continues from one of them, so the lines of a response
 * with a line on the path, and tool results whose call's line is on it, belong to it. Notices
 * (an `api_error` retry, a failed call) hang off the entry they were written after while the
 * conversation goes on from that entry: one whose parent is on the path and that no turn
 * continues from belongs to it.
 */
function joinSideBranches(chain: Map<string, ChainNode>, current: Set<string>, compacted: Set<string>) {
  const continued = new Set<string>()
  for (const node of chain.values()) if (!node.notice && node.parentUuid) continued.add(node.parentUuid)
  const setOf = new Map<string, Set<string>>()
  for (const into of [current, compacted]) {
    for (const id of into) {
      const response = chain.get(id)?.response
      if (response !== undefined) setOf.set(response, into)
    }
  }
  const memberOf = (id: string | undefined) =>
    id === undefined ? undefined : current.has(id) ? current : compacted.has(id) ? compacted : undefined
  for (const [id, node] of chain) {
    if (memberOf(id)) continue
    const into =
      (node.response !== undefined ? setOf.get(node.response) : undefined) ??
      (node.toolResults || (node.notice && !continued.has(id)) ? memberOf(node.parentUuid) : undefined)
    if (!into) continue
    into.add(id)
    if (node.response !== undefined) setOf.set(node.response, into)
  }
}

/** A user entry's text, envelopes and all ('' for tool results and non-text content). */
const userText = (entry: JsonObject) => textOf(isObject(entry.message) ? entry.message.content : undefined)

function readFacts(parsed: ParsedLines): FileFacts {
  // A trimmed or damaged file names parents it does not hold; those links attest nothing.
  const held = new Set<string>()
  for (const { value } of parsed.lines) {
    const uuid = str(value.uuid)
    if (uuid) held.add(uuid)
  }
  const brokenLinks: number[] = []
  const chain = new Map<string, ChainNode>()
  let leaf: string | undefined
  /** The previous conversation entry, main and sidechain apart: the parent of one that names none. */
  const previous = { main: undefined as string | undefined, side: undefined as string | undefined }
  let sessionId: string | undefined
  let firstConversation: JsonObject | undefined
  let agentId: string | undefined
  let customTitle: string | undefined
  const summaries: { leafUuid: string; summary: string }[] = []
  const responseUsage = new Map<string, { input: number; output: number }>()
  const agentOfCall = new Map<string, string>()
  const firstSidePrompt = new Map<string, string>()
  const agentCalls: { callId: string; prompt: string }[] = []
  const userTexts: FileFacts['userTexts'] = []
  const assistantLines: number[] = []
  const answeredCommands = new Set<number>()
  const cliNotices = new Set<number>()
  /** Per lane: a command echo not yet followed by anything but meta entries, and whether the entry before was a caveat. */
  const pendingCommand = { main: undefined as number | undefined, side: undefined as number | undefined }
  const afterCaveat = { main: false, side: false }

  for (const { line, value: entry } of parsed.lines) {
    const type = entry.type
    const uuid = str(entry.uuid)
    const conversation = typeof type === 'string' && CONVERSATION.has(type)
    const lane = entry.isSidechain === true ? 'side' : 'main'
    if (uuid && !chain.has(uuid)) {
      const compactBoundary = type === 'system' && entry.subtype === 'compact_boundary'
      // Claude Code links every entry but the first (and a compaction's boundary); files
      // written without links (older versions, hand-trimmed copies), and links to entries the
      // file does not hold, read in file order.
      const named = str(entry.parentUuid)
      const broken = named !== undefined && !held.has(named)
      if (broken) brokenLinks.push(line)
      const linked =
        named !== undefined && !broken ? named : compactBoundary || !conversation ? undefined : previous[lane]
      const message = isObject(entry.message) ? entry.message : {}
      const blocks = Array.isArray(message.content) ? message.content : []
      chain.set(uuid, {
        parentUuid: linked,
        logicalParentUuid: str(entry.logicalParentUuid),
        compactBoundary,
        response: type === 'assistant' ? responseKey(entry, message) : undefined,
        toolResults:
          type === 'user' &&
          blocks.length > 0 &&
          blocks.every((b) => isObject(b) && b.type === 'tool_result'),
        notice:
          (type === 'system' && !compactBoundary) ||
          (type === 'assistant' &&
            (entry.isApiErrorMessage === true ||
              (blocks.length === 0 && providerErrorOf(message) !== undefined))),
      })
    }
    if (uuid && conversation) previous[lane] = uuid
    if (type === 'summary' && typeof entry.leafUuid === 'string' && typeof entry.summary === 'string')
      summaries.push({ leafUuid: entry.leafUuid, summary: entry.summary })
    if (type === 'custom-title' && typeof entry.customTitle === 'string') customTitle = entry.customTitle
    if (typeof type !== 'string' || !CONVERSATION.has(type)) continue
    sessionId ??= str(entry.sessionId)
    firstConversation ??= entry
    const sidechain = entry.isSidechain === true
    if (sidechain) agentId ??= str(entry.agentId)
    if (uuid && (firstConversation.isSidechain === true) === sidechain) leaf = uuid
    const message = isObject(entry.message) ? entry.message : {}
    const content = message.content
    if (type === 'assistant') {
      const command = pendingCommand[lane]
      if (command !== undefined) answeredCommands.add(command)
      pendingCommand[lane] = undefined
      afterCaveat[lane] = false
    } else if (type === 'user') {
      const text = userText(entry)
      const caveatBefore = afterCaveat[lane]
      afterCaveat[lane] = isCaveat(text)
      if (slashCommand(text)) pendingCommand[lane] = line
      // A hook's text rides along with the command, so the model's answer is still the command's.
      else if (entry.isMeta !== true && !afterCaveat[lane] && !isHookText(text)) {
        pendingCommand[lane] = undefined
        // The caveat says the lines after it are the local command's: a plain line there is
        // the CLI's own answer ("Unknown slash command: exit"), not a prompt.
        if (caveatBefore && text !== '') cliNotices.add(line)
      }
    }
    if (type === 'assistant') {
      if (!sidechain) assistantLines.push(line)
      const key = responseKey(entry, message)
      const u = isObject(message.usage) ? message.usage : undefined
      if (key && u) {
        const input =
          count(u.input_tokens) + count(u.cache_creation_input_tokens) + count(u.cache_read_input_tokens)
        const seen = responseUsage.get(key)
        responseUsage.set(key, {
          input: Math.max(seen?.input ?? 0, input),
          output: Math.max(seen?.output ?? 0, count(u.output_tokens)),
        })
      }
      if (!sidechain && Array.isArray(content)) {
        for (const block of content) {
          if (!isObject(block) || block.type !== 'tool_use' || typeof block.id !== 'string') continue
          const prompt = isObject(block.input) ? str(block.input.prompt) : undefined
          if (prompt) agentCalls.push({ callId: block.id, prompt })
        }
      }
      continue
    }
    if (type !== 'user') continue
    const text = textOf(content)
    if (sidechain) {
      const id = str(entry.agentId)
      if (id && text !== '' && !firstSidePrompt.has(id)) firstSidePrompt.set(id, text)
      continue
    }
    if (text !== '' && !cliNotices.has(line)) {
      const command = slashCommand(text)
      const texts = [text.trim()]
      if (command) texts.push(`${command.name}${command.args ? ` ${command.args}` : ''}`)
      userTexts.push({ line, texts, used: false })
    }
    const result = isObject(entry.toolUseResult) ? entry.toolUseResult : {}
    const ranAgent = str(result.agentId) ?? str(entry.agentId)
    if (ranAgent && Array.isArray(content)) {
      for (const block of content) {
        if (isObject(block) && block.type === 'tool_result' && typeof block.tool_use_id === 'string')
          agentOfCall.set(block.tool_use_id, ranAgent)
      }
    }
  }
  // 2.0 files without the agent named on the result: the agent's first prompt is the call's.
  for (const { callId, prompt } of agentCalls) {
    if (agentOfCall.has(callId)) continue
    for (const [id, first] of firstSidePrompt) {
      if (first.trim() === prompt.trim()) agentOfCall.set(callId, id)
    }
  }

  let current: Set<string> | undefined
  const compacted = new Set<string>()
  if (leaf !== undefined) {
    current = new Set()
    let into = current
    for (let at: string | undefined = leaf; at !== undefined && !current.has(at) && !compacted.has(at); ) {
      into.add(at)
      const node = chain.get(at)
      if (!node) break
      if (node.compactBoundary) into = compacted
      at = node.parentUuid ?? node.logicalParentUuid
    }
    // The boundary itself belongs to what follows it; it makes no record either way.
    joinSideBranches(chain, current, compacted)
  }
  const subAgent = firstConversation?.isSidechain === true ? { agentId } : undefined
  const ownSummary = summaries.find((s) => chain.has(s.leafUuid))?.summary
  return {
    sessionId,
    subAgent,
    current,
    compacted,
    responseUsage,
    agentOfCall,
    userTexts,
    assistantLines,
    answeredCommands,
    cliNotices,
    brokenLinks,
    title: customTitle ?? ownSummary,
  }
}

export function parseClaudeSession(parsed: ParsedLines): TranscriptRecord[] {
  const facts = readFacts(parsed)
  const skips = parsed.skips
  for (const line of facts.brokenLinks) skips.add(line, 'missing_parent')
  const fileSessionId = facts.sessionId || `file-${stableHash(JSON.stringify(parsed.lines[0]?.value ?? {}))}`
  const subAgent = facts.subAgent
  const agentSessionOf = (agentId: string) => `${fileSessionId}:agent-${agentId}`
  const sessionId = subAgent
    ? agentSessionOf(
        subAgent.agentId ?? `sidechain-${stableHash(JSON.stringify(parsed.lines[0]?.value ?? {}))}`,
      )
    : fileSessionId

  const records: TranscriptRecord[] = []
  const seen = new Set<string>()
  const countedResponses = new Set<string>()
  const calls = new Map<string, ToolCallRecord>()
  const queued: string[] = []
  let order = 0
  let cwd: string | undefined
  let startedAt: number | undefined
  let endedAt: number | undefined
  let lastAssistant: MessageRecord | undefined
  let lastVisibility: Visibility = 'visible'

  const visibilityOf = (id: string, sidechain: boolean): Visibility => {
    if (sidechain && !subAgent) return 'hidden'
    if (facts.current === undefined) return 'visible'
    if (facts.compacted.has(id)) return 'inactive'
    return facts.current.has(id) ? 'visible' : 'inactive'
  }

  /**
   * A queued prompt reached the model. A dequeued one is the user entry that follows it (before
   * any answer; its text may differ, pasted text being expanded); a removed one may be repeated
   * by a later user entry with its text. Otherwise it is a row of its own here.
   */
  const deliver = (text: string, line: number, dequeued: boolean, timestamp: number | undefined) => {
    const key = text.trim()
    if (key === '' || isToolEnvelope(key)) return
    const next = facts.userTexts.find((u) => !u.used && u.line > line)
    const nextAnswer = facts.assistantLines.find((l) => l > line)
    const repeat =
      dequeued && next && (nextAnswer === undefined || next.line < nextAnswer)
        ? next
        : facts.userTexts.find((u) => !u.used && u.line > line && u.texts.includes(key))
    if (repeat) {
      repeat.used = true
      return
    }
    records.push({
      type: 'message',
      id: `line${line}`,
      order: order++,
      ...(timestamp === undefined ? {} : { timestamp }),
      role: 'user',
      text,
      contentType: 'text',
      delivery: 'steer',
      visibility: lastVisibility,
    })
  }

  for (const { line, value: entry } of parsed.lines) {
    const type = entry.type
    const timestamp = toMillis(entry.timestamp)
    if (type === 'queue-operation') {
      const content = str(entry.content)
      const operation = entry.operation
      if (operation === 'enqueue') {
        if (content !== undefined) queued.push(content)
      } else if (operation === 'dequeue' || operation === 'remove') {
        const i = content === undefined ? (queued.length > 0 ? 0 : -1) : queued.indexOf(content)
        const text = content ?? (i >= 0 ? queued[i] : undefined)
        if (i >= 0) queued.splice(i, 1)
        if (text !== undefined) deliver(text, line, operation === 'dequeue', timestamp)
      } else if (operation === 'popAll' || operation === 'clear') {
        queued.length = 0
      }
      continue
    }
    if (typeof type !== 'string' || !CONVERSATION.has(type)) {
      if (typeof type !== 'string' || !BOOKKEEPING.has(type)) skips.add(line, 'unknown_type')
      continue
    }
    const id = str(entry.uuid) || `line${line}`
    if (seen.has(id)) {
      skips.add(line, 'duplicate_entry')
      continue
    }
    const before = records.length
    let represented = false
    if (timestamp !== undefined) {
      startedAt = startedAt === undefined ? timestamp : Math.min(startedAt, timestamp)
      endedAt = endedAt === undefined ? timestamp : Math.max(endedAt, timestamp)
    }
    const sidechain = entry.isSidechain === true
    const visibility = visibilityOf(id, sidechain)
    const parentId = str(entry.parentUuid) ?? str(entry.logicalParentUuid)
    const agentId = sidechain ? str(entry.agentId) : undefined
    const common = {
      ...(parentId ? { parentId } : {}),
      ...(timestamp === undefined ? {} : { timestamp }),
    }
    const side = {
      ...(sidechain && !subAgent ? { sidechain: true } : {}),
      ...(agentId ? { agentId } : {}),
    }
    const message = isObject(entry.message) ? entry.message : {}
    const content = message.content

    if (type === 'system') {
      if (entry.subtype === 'compact_boundary') {
        seen.add(id) // a marker: the summary entry follows
        continue
      }
      // A failed model call the CLI retries (`api_error`): no answer, no usage, an error to show.
      const failed = entry.subtype === 'api_error'
      const text = failed ? apiErrorText(entry) : (str(entry.content) ?? textOf(content))
      if (text !== '') {
        records.push({
          type: 'message',
          id,
          order: order++,
          ...common,
          role: 'system',
          text,
          contentType: 'text',
          isMeta: true,
          ...(failed ? { status: 'error' as const, finish: 'error' as const } : {}),
          visibility,
          ...side,
        })
      }
    } else if (type === 'user') {
      const text = textOf(content)
      const results = Array.isArray(content)
        ? content.filter((b): b is JsonObject => isObject(b) && b.type === 'tool_result')
        : []
      const command = text === '' ? undefined : slashCommand(text)
      const base = { type: 'message' as const, id, ...common, role: 'user' as const, visibility, ...side }
      if (entry.isCompactSummary === true) {
        records.push({
          type: 'summary',
          id,
          order: order++,
          ...common,
          source: 'compaction',
          text,
          visibility,
        })
      } else if (command) {
        // A command the model then worked on is the turn's prompt, as Claude Code shows it;
        // one the CLI answered alone (`/clear`, `/model`) is the tool's bookkeeping.
        records.push({
          ...base,
          order: order++,
          text: `${command.name}${command.args ? ` ${command.args}` : ''}`,
          contentType: 'slash_command',
          command,
          ...(facts.answeredCommands.has(line) ? {} : { isMeta: true }),
        })
      } else if (text.trimStart().startsWith(INTERRUPTED) && lastAssistant && results.length === 0) {
        // The end state of the turn it cut off, not a prompt.
        lastAssistant.status = 'interrupted'
        lastAssistant.finish = 'aborted'
        represented = true
      } else if (text !== '') {
        const meta =
          entry.isMeta === true ||
          isToolEnvelope(text) ||
          text.trimStart().startsWith(INTERRUPTED) ||
          facts.cliNotices.has(line)
        records.push({
          ...base,
          order: order++,
          text,
          contentType: 'text',
          ...(meta ? { isMeta: true } : {}),
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
          visibility,
        })
      })
    } else {
      const blocks = Array.isArray(content) ? content : []
      const text = textOf(content)
      const reasoning = thinkingOf(content)
      const toolUses = blocks.filter((b): b is JsonObject => isObject(b) && b.type === 'tool_use')
      const key = responseKey(entry, message)
      let used: MessageRecord['usage']
      if (key === undefined) {
        const u = isObject(message.usage) ? message.usage : {}
        used = usage(
          count(u.input_tokens) + count(u.cache_creation_input_tokens) + count(u.cache_read_input_tokens),
          count(u.output_tokens),
        )
      } else if (!countedResponses.has(key)) {
        countedResponses.add(key)
        const u = facts.responseUsage.get(key)
        used = u && usage(u.input, u.output)
      }
      const model = str(message.model)
      const providerError = text === '' ? providerErrorOf(message) : undefined
      const shown = providerError ?? text
      const empty = shown === '' && reasoning === '' && toolUses.length === 0
      if (!empty || used) {
        const record: MessageRecord = {
          type: 'message',
          id,
          order: order++,
          ...common,
          role: 'assistant',
          text: shown,
          ...(reasoning ? { reasoning } : {}),
          contentType: empty
            ? 'usage'
            : shown !== ''
              ? 'text'
              : toolUses.length > 0
                ? 'tool_use'
                : 'reasoning',
          ...(entry.isMeta === true ? { isMeta: true } : {}),
          visibility: empty ? 'hidden' : visibility,
          ...(model ? { model } : {}),
          ...side,
          ...(used ? { usage: used } : {}),
          ...(entry.isApiErrorMessage === true || providerError !== undefined
            ? { status: 'error' as const, finish: 'error' as const }
            : {}),
        }
        records.push(record)
        if (!sidechain || subAgent) lastAssistant = record
        toolUses.forEach((block, i) => {
          const callId = str(block.id) || `${id}/call${i}`
          const ranAgent = sidechain && !subAgent ? undefined : facts.agentOfCall.get(callId)
          const call: ToolCallRecord = {
            type: 'tool_call',
            id: `${id}/call${i}`,
            messageId: id,
            callId,
            name: str(block.name) ?? '',
            input: asJson(block.input),
            visibility: record.visibility,
            ...(ranAgent ? { agentSessionId: agentSessionOf(ranAgent) } : {}),
          }
          calls.set(callId, call)
          records.push(call)
        })
      }
    }

    if (records.length === before && !represented) {
      skips.add(line, 'empty_entry')
      continue
    }
    seen.add(id)
    cwd ??= str(entry.cwd)
    if (!sidechain || subAgent) lastVisibility = visibility
  }

  const messages = records.filter((r): r is MessageRecord => r.type === 'message')
  const isPrompt = (m: MessageRecord) =>
    m.role === 'user' &&
    (m.contentType === 'text' || m.contentType === 'slash_command') &&
    !m.isMeta &&
    !m.sidechain &&
    m.delivery !== 'steer'
  const firstPrompt = messages.find((m) => isPrompt(m) && promptText(m.text) !== '')
  const firstCommand = messages.find((m) => m.contentType === 'slash_command')
  return [
    {
      ...sessionRecord({
        id: sessionId,
        provider: 'claude',
        title:
          titleFrom(facts.title) ??
          titleFrom(firstPrompt && promptText(firstPrompt.text)) ??
          titleFrom(firstCommand?.text) ??
          'Claude Code session',
        cwd,
        startedAt,
        endedAt,
        messageCount: countVisibleMessages(records),
      }),
      ...(subAgent ? { parentSessionId: fileSessionId } : {}),
      ...(subAgent?.agentId ? { agentId: subAgent.agentId } : {}),
    },
    ...records,
  ]
}
