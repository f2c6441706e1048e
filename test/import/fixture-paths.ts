import { existsSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')
/** The team's shared real-world fixtures, where the workspace has them beside the repo. */
export const upstreamTranscripts = path.resolve(repoRoot, '../shared/fixtures/transcripts')
/** An unchanged copy kept in the repo (with SOURCES.md), so a fresh clone can run the tests alone. */
export const vendoredTranscripts = path.resolve(repoRoot, 'test/import/fixtures/real')
/** The real-world fixtures, read as they are: the shared folder when present, else the copy. */
export const sharedTranscripts = existsSync(upstreamTranscripts) ? upstreamTranscripts : vendoredTranscripts
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
