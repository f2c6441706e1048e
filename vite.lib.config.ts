import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const entry = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// The library build: plain ESM, one file per public entry, dependencies left to the consumer's
// bundler (they are `dependencies`/peers, and a second copy of Dexie or Comlink would break
// `instanceof` checks and Comlink's transfer-handler registry).
export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    minify: false,
    target: 'es2022',
    lib: {
      entry: {
        index: entry('./src/index.ts'),
        react: entry('./src/react.ts'),
        'ai-sdk': entry('./src/ai-sdk.ts'),
        'assistant-ui': entry('./src/assistant-ui.ts'),
        worker: entry('./worker/index.ts'),
        sync: entry('./src/sync.ts'),
      },
      formats: ['es'],
    },
    rolldownOptions: {
      // The adapters' libraries are optional peers: only their entries import them.
      external: [
        /^dexie/,
        /^fake-indexeddb/,
        /^comlink/,
        /^zod/,
        /^nanoid/,
        /^eventsource-parser/,
        /^react/,
        /^ai(\/|$)/,
        /^@ai-sdk\//,
        /^@assistant-ui\//,
      ],
    },
  },
})
