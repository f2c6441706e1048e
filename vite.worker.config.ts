import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The default worker (`sessionline/sessionline.worker`), built after the library into the same
// `dist/`: one self-contained module with Dexie, Comlink and zod inside (and
// a chunk of its own for the in-memory store). An app's dev server loads
// a worker from a dependency as it is, unbundled, so a bare import there (Dexie's entry wraps a
// UMD file) would fail where the page's pre-bundled copy works; with none, the worker runs the
// same under `vite`, `vite build` and any other bundler. It shares nothing with the page, so the
// second copy of these libraries cannot break an `instanceof` or a transfer handler.
// `sessionline/worker` (for a worker entry of the app's own) stays in the library build and keeps
// its imports: there the app's bundler sees them.
export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    sourcemap: true,
    minify: false,
    target: 'es2022',
    lib: {
      entry: {
        'sessionline.worker': fileURLToPath(new URL('./worker/sessionline.worker.ts', import.meta.url)),
      },
      formats: ['es'],
    },
    // The in-memory store (fake-indexeddb) stays a chunk of its own, loaded only when asked for.
    rolldownOptions: { output: { chunkFileNames: 'sessionline.worker-[name]-[hash].js' } },
  },
})
