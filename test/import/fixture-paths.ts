import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')
/** The shared real-world fixtures (read as they are; in CI the folder sits beside the repo). */
export const sharedTranscripts = path.resolve(repoRoot, '../shared/fixtures/transcripts')
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
