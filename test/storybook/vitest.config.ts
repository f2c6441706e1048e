import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The Storybook tests: stories of the static build (run.mjs makes it first), driven in Chromium.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/storybook/**/*.e2e.ts'],
    environment: 'node',
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 120_000,
    hookTimeout: 60_000,
    reporters: ['verbose'],
  },
})
