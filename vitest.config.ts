import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  // `sessionline/*` (the README examples' imports) means the sources, as in tsconfig.json's
  // paths; without this the package's self-reference would load whatever `dist/` last built.
  resolve: {
    alias: [
      { find: /^sessionline$/, replacement: here('./src/index.ts') },
      { find: /^sessionline\/react$/, replacement: here('./src/react.ts') },
      { find: /^sessionline\/ai-sdk$/, replacement: here('./src/ai-sdk.ts') },
      { find: /^sessionline\/assistant-ui$/, replacement: here('./src/assistant-ui.ts') },
      { find: /^sessionline\/worker$/, replacement: here('./worker/index.ts') },
    ],
  },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'worker/**/*.test.ts'],
    exclude: ['test/e2e/**', 'test/bench/**', 'node_modules/**'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
