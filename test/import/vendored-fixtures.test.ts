import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { listJsonl, upstreamTranscripts, vendoredTranscripts } from './fixture-paths'

// The repo keeps a copy of the shared real-world transcripts (and real files vendored since) so a
// fresh clone tests alone; where the shared folder exists, every file of it must be in the copy,
// byte for byte.
test.skipIf(!existsSync(upstreamTranscripts))(
  'the vendored transcripts hold every shared fixture unchanged',
  () => {
    const rel = (dir: string) => listJsonl(dir).map((file) => path.relative(dir, file))
    expect(rel(vendoredTranscripts)).toEqual(expect.arrayContaining(rel(upstreamTranscripts)))
    for (const name of rel(upstreamTranscripts)) {
      const copy = readFileSync(path.join(vendoredTranscripts, name))
      expect(copy.equals(readFileSync(path.join(upstreamTranscripts, name))), name).toBe(true)
    }
  },
)
