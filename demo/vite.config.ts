import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { VitePWA } from 'vite-plugin-pwa'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const { version } = JSON.parse(readFileSync(here('../package.json'), 'utf8')) as { version: string }

/**
 * What the page calls its build (shown in its footer, `data-build` on <html>). A deployment may
 * set `DEMO_BUILD` to tell builds of one version apart; the browser tests do, to deploy a
 * second build over the first.
 */
const BUILD = process.env.DEMO_BUILD ?? version

// `base: './'` makes the static build work from any folder of any static server; module
// workers need `format: 'es'` (Vite's default is iife).
export default defineConfig({
  root: here('.'),
  base: './',
  define: { __DEMO_BUILD__: JSON.stringify(BUILD) },
  worker: { format: 'es' },
  // The dev server forwards the sync server's streams, so the page's own origin works as the
  // sync server URL (serve.mjs does the same for the build when SYNC_SERVER is set).
  server: { proxy: { '/v1/stream/': process.env.SYNC_SERVER ?? 'http://127.0.0.1:4437' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
  },
  plugins: [
    VitePWA({
      strategies: 'injectManifest',
      srcDir: '.',
      filename: 'sw.ts',
      // pwa.ts registers it (the dev server gets none) and shows the update prompt.
      injectRegister: false,
      registerType: 'prompt',
      // public/manifest.webmanifest is the app's manifest, kept by hand.
      manifest: false,
      injectManifest: {
        globPatterns: ['**/*.{html,js,css,svg,webmanifest,json,wasm}'],
        // Vite's content-hashed file names are revisions already.
        dontCacheBustURLsMatching: /^assets\//,
        sourcemap: false,
      },
      devOptions: { enabled: false },
    }),
  ],
})
