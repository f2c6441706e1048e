import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// The adapters' test page, built statically like an app would ship it; `sessionline/*` resolves
// to the sources (the packed package has its own test, test/package/app.mjs).
export default defineConfig({
  root: here('.'),
  base: './',
  logLevel: 'warn',
  worker: { format: 'es' },
  resolve: {
    alias: [
      { find: /^sessionline$/, replacement: here('../../../src/index.ts') },
      { find: /^sessionline\/react$/, replacement: here('../../../src/react.ts') },
      { find: /^sessionline\/ai-sdk$/, replacement: here('../../../src/ai-sdk.ts') },
      { find: /^sessionline\/assistant-ui$/, replacement: here('../../../src/assistant-ui.ts') },
      { find: /^sessionline\/worker$/, replacement: here('../../../worker/index.ts') },
    ],
  },
  build: {
    outDir: here('./dist'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    chunkSizeWarningLimit: 4096,
    rolldownOptions: {
      // assistant-ui marks its modules "use client" for React Server Components; a static app
      // has no server side, so the directive has nothing to keep.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning)
      },
    },
  },
})
