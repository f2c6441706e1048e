import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The contract page: a static build served on loopback, one fixed port per browser (storage is
// per origin, and a relaunch must find the same origin). Module workers need `format: 'es'`.
export default defineConfig({
  root: fileURLToPath(new URL('./page', import.meta.url)),
  base: './',
  worker: { format: 'es' },
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('./dist', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
  },
})
