/**
 * Compaction by token budget (docs/decisions/0033, amendment): how many tokens a context holds,
 * and which row a compaction replaces through so that about `keepTokens` of the newest context
 * stays as it is. Pure: the runner reads the context and asks here.
 *
 * The estimate trusts the model where it spoke: the newest assistant row written after the
 * path's last summary that carries usage gives `input + output` for everything up to it (the
 * model counted that prompt and wrote that answer); the rows after it are estimated at four
 * characters a token. Without such a row (a fresh session, or no step since the last
 * compaction, whose older rows were counted against a context that no longer exists) the whole
 * context is estimated from characters.
 *
 * @example
 *   const { tokens } = estimateContextTokens(rows)
 *   if (tokens > 8000) await engine.compact(sessionId, { throughSeq: compactionThroughSeq(rows, 2000) })
 */
import type { SessionMessage } from '../schema/messages'

/** Characters per token in the estimate (a common rule of thumb for English text and code). */
export const CHARS_PER_TOKEN = 4

/** The characters a row sends to the model: its text, reasoning, tool inputs and outputs. */
export function charsOf(row: SessionMessage): number {
  let n = 0
  for (const part of row.parts) {
    if (part.type === 'text' || part.type === 'reasoning') n += part.text.length
    else if (part.type === 'tool') {
      n += part.name.length + JSON.stringify(part.input ?? null).length
      if (part.output !== undefined) n += JSON.stringify(part.output).length
    }
  }
  return n
}

const tokensOfChars = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN)

/** The estimate, and what it rests on: reported usage, or characters alone. */
export interface ContextEstimate {
  tokens: number
  basis: 'usage' | 'characters'
}

/**
 * Tokens of `context` (in the order the model gets it, `contextFor`'s), plus `extraChars` the
 * next step adds (pending prompts).
 */
export function estimateContextTokens(context: readonly SessionMessage[], extraChars = 0): ContextEstimate {
  const summary = context[0]?.role === 'summary' ? context[0] : undefined
  let measured = -1
  for (let i = context.length - 1; i >= 0; i--) {
    const row = context[i]!
    if (row.role === 'assistant' && row.usage !== undefined && (!summary || row.seq > summary.seq)) {
      measured = i
      break
    }
  }
  let chars = extraChars
  for (let i = measured + 1; i < context.length; i++) chars += charsOf(context[i]!)
  if (measured < 0) return { tokens: tokensOfChars(chars), basis: 'characters' }
  const { input, output } = context[measured]!.usage!
  return { tokens: input + output + tokensOfChars(chars), basis: 'usage' }
}

/**
 * The seq to compact through so that the newest rows of `context` worth at most `keepTokens`
 * stay; `undefined` when that would replace nothing but the last summary. Rows the last summary
 * kept (before it on the path, so with lower seqs) can only be replaced together with it: then
 * the summary's own seq is the answer.
 */
export function compactionThroughSeq(
  context: readonly SessionMessage[],
  keepTokens: number,
): number | undefined {
  const summary = context[0]?.role === 'summary' ? context[0] : undefined
  const first = summary ? 1 : 0
  let kept = 0
  let at = context.length - 1
  for (; at >= first; at--) {
    kept += tokensOfChars(charsOf(context[at]!))
    if (kept > keepTokens) break
  }
  // `at` is the newest row that does not fit: it and everything before it are replaced.
  if (at < first) return undefined
  const through = context[at]!
  if (summary && through.seq < summary.seq) return summary.seq
  return through.seq
}
