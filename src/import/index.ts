/**
 * Importing provider session files: text (or parsed lines) in, canonical records out.
 *
 * @example
 *   const { format, records } = parseTranscript(text)          // detects the format
 *   parseTranscript(text, { format: 'claude' })                // or trusts the caller
 */
import { SessionlineError } from '../schema/errors'
import type { TranscriptRecord } from '../schema/records'
import type { Provider, SkippedLines } from '../schema/session'
import { parseClaudeSession } from './claude'
import { parseCodexSession } from './codex'
import { detectLinesFormat } from './detect'
import { type ParsedLines, parseJsonLines, readJsonLines } from './jsonl'
import { parsePiSession } from './pi'

/** A pure adapter: the lines of one file in, its canonical records out (session record first). */
export type Importer = (lines: ParsedLines) => TranscriptRecord[]

/** One importer per provider; `satisfies` makes a missing provider a type error. */
export const importers = {
  pi: parsePiSession,
  claude: parseClaudeSession,
  codex: parseCodexSession,
} satisfies Record<Provider, Importer>

export interface ParsedTranscript {
  format: Provider
  records: TranscriptRecord[]
  /** Lines left out: unreadable (malformed JSON, a truncated last line, over the line limit) or unusable. */
  skippedLines: number
  /** The same lines by reason, with the first few line numbers of each. */
  skipped: SkippedLines[]
}

export interface ParseOptions {
  format?: Provider
}

/** Runs the importer of `options.format` (or the detected format) over parsed lines. */
export function parseLines(parsed: ParsedLines, options: ParseOptions = {}): ParsedTranscript {
  const format = options.format ?? detectLinesFormat(parsed.lines)
  if (format === undefined) {
    throw new SessionlineError(
      'unsupported_format',
      parsed.lines.length === 0
        ? 'The file has no readable JSON lines'
        : 'Not a Pi, Claude Code or Codex session file',
      { skippedLines: parsed.skipped },
    )
  }
  const records = importers[format](parsed)
  return { format, records, skippedLines: parsed.skips.count, skipped: parsed.skips.report() }
}

/**
 * Parses a session file's text into canonical records. Pure; throws `unsupported_format` for a
 * file it cannot read and `invalid_input` for one that breaks its format's rules.
 */
export function parseTranscript(text: string, options: ParseOptions = {}): ParsedTranscript {
  return parseLines(parseJsonLines(text), options)
}

/** Same as `parseTranscript`, reading a `Blob` in chunks. */
export async function parseTranscriptBlob(blob: Blob, options: ParseOptions = {}): Promise<ParsedTranscript> {
  return parseLines(await readJsonLines(blob), options)
}

export { assembleSessionDetail, type SessionDetail } from './assemble'
export { detectFormat } from './detect'
export { MAX_LINE_CHARS } from './jsonl'
export { describeSkipped } from './skips'
export { recordsToRows, type StoredTranscript } from './to-rows'
