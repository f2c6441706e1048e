// The canary's verdict (run.mjs), apart from running the suite so that it can be tested alone.

/**
 * What differs between a run of the conformance suite and the committed list of its known
 * failures and skips, one line per difference; empty when the run is exactly as known.
 * @param {{ passed: number, failed: string[], skipped: string[] }} got test names of this run
 * @param {{ failed: { name: string }[], skipped: string[] }} known known-failures.json
 * @returns {string[]}
 */
export function compareWithKnown(got, known) {
  const knownFailed = known.failed.map((f) => f.name)
  /** @param {string[]} a @param {string[]} b */
  const missing = (a, b) => a.filter((name) => !b.includes(name))
  return [
    ...(got.passed === 0 ? ['no test passed: the suite did not run (did it register its tests?)'] : []),
    ...missing(got.failed, knownFailed).map((n) => `newly failing: ${n}`),
    ...missing(knownFailed, got.failed).map((n) => `known failure now passes (or was renamed): ${n}`),
    ...missing(got.skipped, known.skipped).map((n) => `newly skipped: ${n}`),
    ...missing(known.skipped, got.skipped).map((n) => `no longer skipped: ${n}`),
  ]
}
