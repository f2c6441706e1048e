/**
 * Canonical transcript records: the one language every provider's session file is parsed into
 * (docs/architecture.md §1 idea 3, §8). Adapters in `src/import/` write them; `assembleSessionDetail` and
 * `recordsToRows` read them and never ask which provider wrote them.
 *
 * Ordered records (`message`, `tool_result`, `summary`) carry `order`: ascending, unique per
 * file, it is the order of the transcript (the visible ones first among equals: see each
 * adapter). A `tool_call` belongs to its `message` by `messageId` and has no order of its own.
 *
 * @example
 *   const { records } = parseTranscript(text)
 *   records.filter((r) => r.type === 'message' && r.visibility === 'visible')
 */
import { z } from 'zod'
import { Delivery, Id, Json, Timestamp, Usage, Visibility } from './common'
import { Finish } from './events'
import { Provider } from './session'

/** `total`: the records describe the whole file. `delta`: only what was appended since a previous import. */
export const CountMode = z.enum(['total', 'delta'])
export type CountMode = z.infer<typeof CountMode>

export const SessionRecord = z.strictObject({
  type: z.literal('session'),
  /** The file's own session identity (Pi header id, Claude `sessionId`, Codex `session_meta.id`). */
  id: Id,
  provider: Provider,
  title: z.string(),
  cwd: z.string().optional(),
  /** A project name, when the file says one apart from its cwd. */
  project: z.string().optional(),
  startedAt: Timestamp.optional(),
  endedAt: Timestamp.optional(),
  /** Visible `message` records (reasoning-only and usage-only records excluded). */
  messageCount: z.number().int().nonnegative(),
  countMode: CountMode,
  /** The file format's own version, when it has one (Pi: 1, 2 or 3). */
  formatVersion: z.number().int().optional(),
  /** A sub-agent's own file: the file session id of its parent session, and the agent's id. */
  parentSessionId: Id.optional(),
  agentId: z.string().optional(),
})
export type SessionRecord = z.infer<typeof SessionRecord>

/**
 * What a message carries: `text` (authored text), `reasoning` (reasoning only, grouped with the
 * next assistant message on assembly), `tool_use` (an assistant step that only calls tools),
 * `custom` (injected by an extension), `command` (a shell command and its output run by the
 * user), `slash_command` (a slash command the user ran: see `command`), `usage` (no content:
 * holds the usage of a model call the file reports on its own).
 */
export const ContentType = z.enum([
  'text',
  'reasoning',
  'tool_use',
  'custom',
  'command',
  'slash_command',
  'usage',
])
export type ContentType = z.infer<typeof ContentType>

export const RecordRole = z.enum(['user', 'assistant', 'system'])
export type RecordRole = z.infer<typeof RecordRole>

export const MessageRecord = z.strictObject({
  type: z.literal('message'),
  id: Id,
  parentId: z.string().optional(),
  order: z.number().int().nonnegative(),
  timestamp: Timestamp.optional(),
  role: RecordRole,
  text: z.string(),
  /** Reasoning the provider stored beside the text of this same message. */
  reasoning: z.string().optional(),
  contentType: ContentType,
  /** Written by the tool rather than a person (caveats, command echoes, envelopes). */
  isMeta: z.boolean().optional(),
  visibility: Visibility,
  model: z.string().optional(),
  /** Part of a sub-agent's side conversation. */
  sidechain: z.boolean().optional(),
  agentId: z.string().optional(),
  /** The model call that produced this message; `input` includes cached input. */
  usage: Usage.optional(),
  /** An assistant message that did not complete: cut off (`interrupted`) or failed (`error`). */
  status: z.enum(['interrupted', 'error']).optional(),
  /** How the model call ended, when the file says. */
  finish: Finish.optional(),
  /** A prompt typed while the model worked and delivered into the running turn. */
  delivery: Delivery.optional(),
  /** A slash command: its name (with the slash) and arguments. */
  command: z.strictObject({ name: z.string(), args: z.string() }).optional(),
  /** Shown to the user, never sent to the model (Pi `excludeFromContext`). */
  excludedFromContext: z.literal(true).optional(),
})
export type MessageRecord = z.infer<typeof MessageRecord>

export const ToolCallRecord = z.strictObject({
  type: z.literal('tool_call'),
  /** Unique in the file (providers reuse call ids across branches: see `callId`). */
  id: Id,
  messageId: Id,
  /** The provider's call id, as the file spells it. */
  callId: Id,
  name: z.string(),
  input: Json,
  visibility: Visibility,
  /** The file session id of the sub-agent this call ran (see `SessionRecord.parentSessionId`). */
  agentSessionId: Id.optional(),
})
export type ToolCallRecord = z.infer<typeof ToolCallRecord>

export const ToolResultRecord = z.strictObject({
  type: z.literal('tool_result'),
  id: Id,
  order: z.number().int().nonnegative(),
  timestamp: Timestamp.optional(),
  callId: Id,
  /** The `tool_call` record this result answers, when the file has it on the same branch. */
  callRecordId: Id.optional(),
  name: z.string().optional(),
  output: Json,
  isError: z.boolean(),
  visibility: Visibility,
})
export type ToolResultRecord = z.infer<typeof ToolResultRecord>

export const SummarySource = z.enum(['compaction', 'branch_summary'])
export type SummarySource = z.infer<typeof SummarySource>

export const SummaryRecord = z.strictObject({
  type: z.literal('summary'),
  id: Id,
  parentId: z.string().optional(),
  order: z.number().int().nonnegative(),
  timestamp: Timestamp.optional(),
  source: SummarySource,
  text: z.string(),
  visibility: Visibility,
  /** The model call that wrote the summary. */
  usage: Usage.optional(),
})
export type SummaryRecord = z.infer<typeof SummaryRecord>

/**
 * A file's history tree, for the files that keep one (Pi: `id`/`parentId` entries and a leaf):
 * the records that are nodes, each with the node it hangs under, in the order the file created
 * them, and the node the file's current position is at. It lets an imported tree be switched
 * to another branch later (docs/decisions/0037). Node ids are ordered records' ids; an entry
 * that made no record is left out and its children hang under its nearest ancestor that did.
 */
export const TreeRecord = z.strictObject({
  type: z.literal('tree'),
  /** The node the file's position is at (`null`: the empty path). */
  head: Id.nullable(),
  nodes: z.array(
    z.strictObject({
      id: Id,
      /** The node this one hangs under (`null`: a root). */
      parent: Id.nullable(),
      /**
       * A compaction: the last node of its path it replaces (`null`: none). Only the last
       * compaction on a path counts: it, what the path holds after what it replaces (less other
       * compactions and their copies) and what follows it are what the file's tool sends.
       */
      through: Id.nullable().optional(),
      /** A copy of an earlier message a compaction carries (Pi: `retainedTail`): the compaction's id. */
      copyOf: Id.optional(),
      /** On the path but never shown nor sent (Pi: an empty branch summary). */
      silent: z.literal(true).optional(),
    }),
  ),
})
export type TreeRecord = z.infer<typeof TreeRecord>

export const TranscriptRecord = z.discriminatedUnion('type', [
  SessionRecord,
  MessageRecord,
  ToolCallRecord,
  ToolResultRecord,
  SummaryRecord,
  TreeRecord,
])
export type TranscriptRecord = z.infer<typeof TranscriptRecord>
export type OrderedRecord = MessageRecord | ToolResultRecord | SummaryRecord

export const RECORD_TYPES = TranscriptRecord.options.map((o) => o.shape.type.value)
export type RecordType = TranscriptRecord['type']

export const isOrderedRecord = (record: TranscriptRecord): record is OrderedRecord =>
  record.type === 'message' || record.type === 'tool_result' || record.type === 'summary'
