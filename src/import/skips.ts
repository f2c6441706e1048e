/**
 * The lines an import leaves out, by reason: the JSON Lines reader logs unreadable lines, the
 * adapters log lines they read but cannot use. The report keeps every count and the first few
 * line numbers of each reason, so a user can find them in the file.
 *
 * @example
 *   const skips = new SkipLog()
 *   skips.add(7, 'malformed_json')
 *   skips.report() // [{ reason: 'malformed_json', count: 1, lines: [7] }]
 */
import type { SkippedLines, SkipReason } from '../schema/session'

/** Line numbers kept per reason. */
const FIRST_LINES = 5

export class SkipLog {
  private readonly byReason = new Map<SkipReason, SkippedLines>()
  private total = 0

  add(line: number, reason: SkipReason): void {
    this.total++
    const entry = this.byReason.get(reason)
    if (!entry) {
      this.byReason.set(reason, { reason, count: 1, lines: [line] })
      return
    }
    entry.count++
    if (entry.lines.length < FIRST_LINES) entry.lines.push(line)
  }

  get count(): number {
    return this.total
  }

  /** One entry per reason met, in the order first met. */
  report(): SkippedLines[] {
    return [...this.byReason.values()].map((e) => ({ ...e, lines: [...e.lines] }))
  }
}

/** One line for a person: "3 lines skipped: 2 not JSON (lines 4, 9), 1 unknown type (line 12)". */
export function describeSkipped(skipped: readonly SkippedLines[]): string {
  const total = skipped.reduce((n, s) => n + s.count, 0)
  if (total === 0) return ''
  const label: Record<SkipReason, string> = {
    malformed_json: 'not JSON',
    not_an_object: 'not a JSON object',
    line_too_long: 'too long',
    duplicate_entry: 'repeated entries',
    no_entry_id: 'entries without an id',
    unknown_type: 'of an unknown type',
    empty_entry: 'empty entries',
  }
  const parts = skipped.map((s) => {
    const more = s.count > s.lines.length ? ', …' : ''
    const where = `line${s.lines.length === 1 && !more ? '' : 's'} ${s.lines.join(', ')}${more}`
    return `${s.count} ${label[s.reason]} (${where})`
  })
  return `${total} line${total === 1 ? '' : 's'} skipped: ${parts.join('; ')}`
}
