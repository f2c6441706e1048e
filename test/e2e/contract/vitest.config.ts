import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The browser contract: one file per browser, one after the other (each starts its browser once),
// against the static build of the contract page that run.mjs makes first.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../../..', import.meta.url)),
    include: ['test/e2e/contract/*.contract.ts'],
    environment: 'node',
    fileParallelism: false,
    maxWorkers: 1,
    sequence: { shuffle: false },
    testTimeout: 180_000,
    hookTimeout: 120_000,
    reporters: ['verbose'],
  },
})
