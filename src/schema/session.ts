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
})
export type TurnOutlineEntry = z.infer<typeof TurnOutlineEntry>

export const UsageTotals = z.strictObject({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  /** Model calls counted. */
  calls: z.number().int().nonnegative(),
})
export type UsageTotals = z.infer<typeof UsageTotals>
export type { Usage }
