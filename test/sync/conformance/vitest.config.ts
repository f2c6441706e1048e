import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The conformance canary (run.mjs): one file, its tests against one in-process server.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../../..', import.meta.url)),
    include: ['test/sync/conformance/*.conformance.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Its TTL cases sleep and compare clocks; on a loaded machine one can miss by a beat. A
    // known failure fails twice, deterministically, so a retry costs ~3 s and hides no change.
    retry: 1,
  },
})
