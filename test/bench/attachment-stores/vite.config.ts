import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// The attachment-stores page (IndexedDB Blobs against OPFS, docs/decisions/0031), built like the
// other bench pages: minified, module workers. The output is git-ignored.
export default defineConfig({
  root: here('.'),
  base: './',
  logLevel: 'warn',
  worker: { format: 'es' },
  build: {
    outDir: here('../.tmp/attachment-stores'),
    emptyOutDir: true,
    target: 'es2022',
  },
})
