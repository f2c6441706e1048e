/** What differs between a conformance run and the known failures and skips; empty when none. */
export declare function compareWithKnown(
  got: { passed: number; failed: string[]; skipped: string[] },
  known: { failed: { name: string }[]; skipped: string[] },
): string[]
