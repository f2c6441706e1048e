/**
 * The budget arithmetic of automatic compaction (src/core/compaction.ts) against a plain
 * reference: the rows a compaction keeps are the longest newest run within `keepTokens`, and the
 * estimate rests on the newest usage reported after the last summary, else on characters.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { charsOf, compactionThroughSeq, estimateContextTokens } from '../../src/core/compaction'
import type { SessionMessage } from '../../src/schema/messages'

const row = (
  seq: number,
  role: SessionMessage['role'],
  text: string,
  usage?: SessionMessage['usage'],
): SessionMessage => ({
  id: `r${seq}`,
  sessionId: 's',
  seq,
  role,
  turn: 1,
  parts: [{ type: 'text', text }],
  status: 'complete',
  visibility: 'visible',
  createdAt: 0,
  updatedAt: 0,
  ...(usage ? { usage } : {}),
})

const tokens = (r: SessionMessage) => Math.ceil(charsOf(r) / 4)

/** A context as `contextFor` orders it: maybe a summary, kept rows before it (lower seqs), then rows after it. */
const contextArb = fc
  .record({
    summary: fc.boolean(),
    kept: fc.array(fc.string({ maxLength: 40 }), { maxLength: 4 }),
    after: fc.array(
      fc.record({ text: fc.string({ maxLength: 60 }), usage: fc.option(fc.nat(500), { nil: undefined }) }),
      { maxLength: 8 },
    ),
  })
  .map(({ summary, kept, after }) => {
    const out: SessionMessage[] = []
    const keptRows = kept.map((t, i) => row(10 + i, 'user', t))
    if (summary) out.push(row(100, 'summary', 'sum'), ...keptRows)
    for (const [i, a] of after.entries()) {
      const usage = a.usage === undefined ? undefined : { input: a.usage, output: 3 }
      out.push(row(200 + i, i % 2 ? 'assistant' : 'user', a.text, usage))
    }
    return out
  })

describe('compactionThroughSeq', () => {
  test('keeps the longest newest run within keepTokens; replaces the rest, the last summary with its kept rows', () => {
    fc.assert(
      fc.property(contextArb, fc.nat(60), (context, keep) => {
        const through = compactionThroughSeq(context, keep)
        const first = context[0]?.role === 'summary' ? 1 : 0
        // Reference: walk from the newest row while the run still fits.
        let kept = 0
        let i = context.length
        while (i > first && kept + tokens(context[i - 1]!) <= keep) kept += tokens(context[--i]!)
        if (i === first) {
          expect(through).toBeUndefined()
          return
        }
        const summary = first === 1 ? context[0]! : undefined
        const expected = summary && context[i - 1]!.seq < summary.seq ? summary.seq : context[i - 1]!.seq
        expect(through).toBe(expected)
      }),
    )
  })
})

describe('estimateContextTokens', () => {
  test('the newest usage after the last summary, plus characters after it; characters alone without one', () => {
    fc.assert(
      fc.property(contextArb, fc.nat(100), (context, extra) => {
        const summary = context[0]?.role === 'summary' ? context[0] : undefined
        const at = context.findLastIndex(
          (r) => r.role === 'assistant' && r.usage !== undefined && (!summary || r.seq > summary.seq),
        )
        const charsAfter = context.slice(at + 1).reduce((n, r) => n + charsOf(r), extra)
        const estimate = estimateContextTokens(context, extra)
        if (at < 0) expect(estimate).toEqual({ tokens: Math.ceil(charsAfter / 4), basis: 'characters' })
        else {
          const { input, output } = context[at]!.usage!
          expect(estimate).toEqual({ tokens: input + output + Math.ceil(charsAfter / 4), basis: 'usage' })
        }
      }),
    )
  })

  test('usage reported before the last summary is not trusted: it counted a context that is gone', () => {
    const context = [
      row(100, 'summary', 'short'),
      row(10, 'assistant', 'kept answer', { input: 9000, output: 10 }),
    ]
    expect(estimateContextTokens(context)).toEqual({ tokens: Math.ceil(16 / 4), basis: 'characters' })
  })
})
