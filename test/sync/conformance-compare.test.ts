import { describe, expect, it } from 'vitest'
import { compareWithKnown } from './conformance/compare.mjs'
import known from './conformance/known-failures.json'

// The canary's verdict on made-up runs; the suite itself runs in `npm run test:sync-conformance`.
const exactly = { passed: 326, failed: known.failed.map((f) => f.name), skipped: [...known.skipped] }

describe('the conformance canary', () => {
  it('passes a run with exactly the known failures and skips, in any order', () => {
    expect(compareWithKnown({ ...exactly, failed: [...exactly.failed].reverse() }, known)).toEqual([])
  })

  it('names a case that newly fails and a known failure that now passes', () => {
    const fixed = known.failed[0]!.name
    const problems = compareWithKnown(
      {
        ...exactly,
        failed: [
          ...exactly.failed.filter((n) => n !== fixed),
          'Basic Stream Operations should create a stream',
        ],
      },
      known,
    )
    expect(problems).toEqual([
      'newly failing: Basic Stream Operations should create a stream',
      `known failure now passes (or was renamed): ${fixed}`,
    ])
  })

  it('names skips that appear or go', () => {
    const gone = known.skipped[0]!
    const problems = compareWithKnown(
      { ...exactly, skipped: [...exactly.skipped.filter((n) => n !== gone), 'Fork - Creation something'] },
      known,
    )
    expect(problems).toEqual(['newly skipped: Fork - Creation something', `no longer skipped: ${gone}`])
  })

  it('fails a run in which nothing passed (the suite registered no tests)', () => {
    expect(compareWithKnown({ passed: 0, failed: [], skipped: [] }, { failed: [], skipped: [] })).toEqual([
      'no test passed: the suite did not run (did it register its tests?)',
    ])
  })
})
