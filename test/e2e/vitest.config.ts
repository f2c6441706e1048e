import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The browser tests: one file, run in sequence (each test starts its own Chromium), against the
// static build of the demo that run.mjs makes first.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/e2e/**/*.e2e.ts'],
    environment: 'node',
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 90_000,
    hookTimeout: 60_000,
    reporters: ['verbose'],
  },
})
