import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// The benchmark pages, built like an app would ship sessionline (minified, production mode).
// Module workers need `format: 'es'` (Vite's default is iife). The output is git-ignored.
export default defineConfig({
  root: here('.'),
  base: './',
  logLevel: 'warn',
  worker: { format: 'es' },
  build: {
    outDir: here('./.tmp/dist'),
    emptyOutDir: true,
    target: 'es2022',
    rolldownOptions: {
      input: { index: here('./index.html'), memory: here('./memory.html'), tabs: here('./tabs.html') },
    },
  },
})
