/**
 * The lines an import leaves out, by reason: the JSON Lines reader logs unreadable lines, the
 * adapters log lines they read but cannot use. The report keeps every count and the first few
 * line numbers of each reason, so a user can find them in the file. Lines kept despite damage
 * (`missing_parent`: a link to an entry the file does not hold) are reported the same way but
 * not counted as left out.
 *
 * @example
 *   const skips = new SkipLog()
 *   skips.add(7, 'malformed_json')
 *   skips.report() // [{ reason: 'malformed_json', count: 1, lines: [7] }]
 */
import type { SkippedLines, SkipReason } from '../schema/session'

/** Line numbers kept per reason. */
const FIRST_LINES = 5

/** Reasons that name damage to a line the import kept, rather than a line it left out. */
const KEPT: ReadonlySet<SkipReason> = new Set(['missing_parent'])

export class SkipLog {
  private readonly byReason = new Map<SkipReason, SkippedLines>()
  private total = 0

  add(line: number, reason: SkipReason): void {
    if (!KEPT.has(reason)) this.total++
    const entry = this.byReason.get(reason)
    if (!entry) {
      this.byReason.set(reason, { reason, count: 1, lines: [line] })
      return
    }
    entry.count++
    if (entry.lines.length < FIRST_LINES) entry.lines.push(line)
  }

  /** Lines left out (damaged lines that were kept are not counted). */
  get count(): number {
    return this.total
  }

  /** One entry per reason met, in the order first met. */
  report(): SkippedLines[] {
    return [...this.byReason.values()].map((e) => ({ ...e, lines: [...e.lines] }))
  }
}

/**
 * One line for a person: "3 lines skipped: 2 not JSON (lines 4, 9), 1 unknown type (line 12)",
 * then the kept lines with damage: "6 lines kept whose parent is missing (lines 1, 2, 3, 4, 5, …)".
 */
export function describeSkipped(skipped: readonly SkippedLines[]): string {
  const label: Record<SkipReason, string> = {
    malformed_json: 'not JSON',
    not_an_object: 'not a JSON object',
    line_too_long: 'too long',
    duplicate_entry: 'repeated entries',
    no_entry_id: 'entries without an id',
    unknown_type: 'of an unknown type',
    empty_entry: 'empty entries',
    missing_parent: 'whose parent is missing',
  }
  const where = (s: SkippedLines) => {
    const more = s.count > s.lines.length ? ', …' : ''
    return `line${s.lines.length === 1 && !more ? '' : 's'} ${s.lines.join(', ')}${more}`
  }
  const lines = (n: number) => `${n} line${n === 1 ? '' : 's'}`
  const left = skipped.filter((s) => !KEPT.has(s.reason))
  const kept = skipped.filter((s) => KEPT.has(s.reason))
  const sentences: string[] = []
  const total = left.reduce((n, s) => n + s.count, 0)
  if (total > 0)
    sentences.push(
      `${lines(total)} skipped: ${left.map((s) => `${s.count} ${label[s.reason]} (${where(s)})`).join('; ')}`,
    )
  for (const s of kept) sentences.push(`${lines(s.count)} kept ${label[s.reason]} (${where(s)})`)
  return sentences.join('. ')
}
