/**
 * docs/benchmarks.md is generated from the published bench reports (test/bench/docs.mjs); this
 * holds the committed page to them, so a figure edited by hand, or a report published without
 * regenerating the page, fails here.
 */
import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { DOC, publishedReports, readReports, renderBenchmarksDoc } from '../bench/docs.mjs'
import { agreementTable, ratioSpread } from '../bench/report.mjs'

describe('docs/benchmarks.md', () => {
  it('is exactly what the published reports render to', () => {
    const expected = renderBenchmarksDoc(readReports(publishedReports()))
    expect(fs.readFileSync(DOC, 'utf8')).toBe(expected)
  })

  it('shows each comparison with its spread, and the per-repetition ratio range', () => {
    const figure = (all: number[]) => ({
      reps: all.length,
      opsPerRep: 1,
      median: [...all].sort((a, b) => a - b)[all.length >> 1]!,
      perOp: 0,
      min: Math.min(...all),
      max: Math.max(...all),
      all,
    })
    const c = {
      id: 'x',
      name: 'x',
      op: 'x',
      unit: 'ms' as const,
      sessionline: figure([2, 3, 4]),
      raw: figure([1, 2, 2]),
      ratio: 1.5,
      target: 2,
    }
    // Repetition ratios 2/1, 3/2, 4/2: the lowest 1.5, the highest 2.
    expect(ratioSpread(c)).toBe(' [1.50–2.00]')
    const page = renderBenchmarksDoc([
      {
        report: { mode: 'browser', preset: 'quick', command: 'npm run bench', comparisons: [c] },
        source: 'r.json',
      },
    ])
    expect(page).toContain('| 3.00 [2.00–4.00] ms | 2.00 [1.00–2.00] ms | 1.50× [1.50–2.00] | ≤ 2× met |')
  })

  it('shows how far each ratio moved in a repeat of the run, and names those beyond ±15%', () => {
    const c = (id: string, ratio: number | null) => ({
      id,
      name: id,
      op: 'x',
      unit: 'ms' as const,
      sessionline: { reps: 1, opsPerRep: 1, median: 1, perOp: 1 },
      raw: { reps: 1, opsPerRep: 1, median: 1, perOp: 1 },
      ratio,
    })
    // 1.00 → 1.15 is +15% (agrees); 2.00 → 1.60 is −20% (does not); a ratio missing on either side is skipped.
    const first = [c('a', 1), c('b', 2), c('c', null), c('only-first', 1)]
    const repeat = [c('a', 1.15), c('b', 1.6), c('c', 1)]
    const { off, compared, table } = agreementTable(first, repeat)
    expect(compared).toBe(2)
    expect(off).toEqual(['b'])
    expect(table).toContain('| a | 1.00× | 1.15× | +15% | yes |')
    expect(table).toContain('| b | 2.00× | 1.60× | −20% | NO |')

    const page = renderBenchmarksDoc([
      {
        report: { mode: 'browser', preset: 'quick', command: 'one', comparisons: first },
        source: 'published-quick.json',
      },
      {
        report: { mode: 'browser', preset: 'quick', command: 'two', comparisons: repeat },
        source: 'published-quick-repeat.json',
      },
    ])
    expect(page.match(/^## quick run/gm)).toHaveLength(1)
    expect(page).toContain('### The same run repeated')
    expect(page).toContain('1 of 2 ratios agree within ±15%; these moved more: b.')
  })
})
