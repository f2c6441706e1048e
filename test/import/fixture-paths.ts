import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')
/** The team's shared real-world fixtures, where the workspace has them beside the repo. */
export const upstreamTranscripts = path.resolve(repoRoot, '../shared/fixtures/transcripts')
/**
 * Unchanged copies kept in the repo (with SOURCES.md): the shared fixtures and the real files
 * vendored since, so a fresh clone runs the tests alone.
 */
export const vendoredTranscripts = path.resolve(repoRoot, 'test/import/fixtures/real')
/** The real-world fixtures the tests read: the repo copy, a superset of the shared folder. */
export const sharedTranscripts = vendoredTranscripts
/** Pi tree files written for these tests from Pi's documented format. */
export const ownFixtures = path.resolve(repoRoot, 'test/import/fixtures')

export function listJsonl(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name)
    if (statSync(full).isDirectory()) out.push(...listJsonl(full))
    else if (name.endsWith('.jsonl')) out.push(full)
  }
  return out
}
