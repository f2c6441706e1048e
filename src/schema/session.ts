import { z } from 'zod'
import { Id, Seq, Timestamp, type Usage } from './common'
import { MAX_TITLE_LENGTH } from './limits'

export const Provider = z.enum(['pi', 'claude', 'codex'])
export type Provider = z.infer<typeof Provider>
export const SessionSource = z.enum(['native', 'pi', 'claude', 'codex'])
export type SessionSource = z.infer<typeof SessionSource>

export const FileFingerprint = z.strictObject({
  size: z.number().int().nonnegative(),
  lastModified: z.number().optional(),
  sha256: z.string(),
})
export type FileFingerprint = z.infer<typeof FileFingerprint>

/**
 * Why lines of a file were left out of an import: not JSON, JSON but not an object, longer than
 * the line limit, an entry repeating one already read, an entry without the id its format needs,
 * a line type the importer does not know, or an entry with nothing to show. One reason names
 * damage to lines that were kept: `missing_parent`, an entry linked to a parent the file does
 * not hold (a trimmed or damaged file), read after the entry before it in the file
 * (docs/decisions/0027).
 */
export const SkipReason = z.enum([
  'malformed_json',
  'not_an_object',
  'line_too_long',
  'duplicate_entry',
  'no_entry_id',
  'unknown_type',
  'empty_entry',
  'missing_parent',
])
export type SkipReason = z.infer<typeof SkipReason>

/** Lines skipped for one reason: how many, and the first few line numbers (1-based). */
export const SkippedLines = z.strictObject({
  reason: SkipReason,
  count: z.number().int().positive(),
  lines: z.array(z.number().int().positive()).max(5),
})
export type SkippedLines = z.infer<typeof SkippedLines>

/** Where an imported session came from; `key` (provider + the file's session identity) makes re-imports update in place. */
export const ImportOrigin = z.strictObject({
  provider: Provider,
  key: z.string(),
  name: z.string().optional(),
  fingerprint: FileFingerprint.optional(),
  importedAt: Timestamp,
  cwd: z.string().optional(),
  startedAt: Timestamp.optional(),
  endedAt: Timestamp.optional(),
  /** A sub-agent's session: the engine id of the session whose agent ran it, and the agent's id. */
  parentSessionId: Id.optional(),
  agentId: z.string().optional(),
  /** Lines of the file the import left out, by reason (absent: none). */
  skipped: z.array(SkippedLines).optional(),
})
export type ImportOrigin = z.infer<typeof ImportOrigin>

export const SessionInfo = z.strictObject({
  id: Id,
  title: z.string(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  /** Seq of the newest event (native) or row (imported); 0 when empty. */
  headSeq: z.number().int().nonnegative(),
  /** The admission seq the next admitted input will take. */
  nextInputSeq: Seq,
  source: SessionSource,
  origin: ImportOrigin.optional(),
})
export type SessionInfo = z.infer<typeof SessionInfo>

export const CreateSessionRequest = z.strictObject({
  id: Id.optional(),
  title: z.string().max(MAX_TITLE_LENGTH, `title is longer than ${MAX_TITLE_LENGTH} characters`).optional(),
})
export type CreateSessionRequest = z.infer<typeof CreateSessionRequest>

/** One entry of the turn outline: `seq` is the turn's `turn/start` seq. */
export const TurnOutlineEntry = z.strictObject({
  turn: z.number().int().positive(),
  seq: Seq,
  prompt: z.string(),
  response: z.string(),
  /** `inactive`: a superseded turn (before a compaction, on an abandoned branch); absent: visible. */
  visibility: z.literal('inactive').optional(),
})
export type TurnOutlineEntry = z.infer<typeof TurnOutlineEntry>

/**
 * Entries `start` to `start + entries.length` (positions in the whole outline, from 0) of a
 * session's turn outline, which holds `total` entries once the log is at `headSeq`. In a change,
 * the slice that changed: every entry from `start` on (the outline only changes at its end), so
 * `start + entries.length === total`.
 */
export const OutlineSlice = z.strictObject({
  headSeq: z.number().int().nonnegative(),
  total: z.number().int().nonnegative(),
  start: z.number().int().nonnegative(),
  entries: z.array(TurnOutlineEntry),
})
export type OutlineSlice = z.infer<typeof OutlineSlice>

export const UsageTotals = z.strictObject({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  /** Model calls counted. */
  calls: z.number().int().nonnegative(),
})
export type UsageTotals = z.infer<typeof UsageTotals>
export type { Usage }
