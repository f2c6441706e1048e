import { createHash } from 'node:crypto'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type Plugin } from 'vite'

const SERVICE_WORKER = 'sw.js'
const PLACEHOLDER = 'self.__PRECACHE__'

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true })
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name))
}

/**
 * Writes `sw.js` into the build output once everything else is written: the service worker in
 * `template` with the list of every built file (public files included) and a version hashed
 * from their contents, so a new build installs a new cache and an unchanged build does not.
 */
export function precacheServiceWorker(template: string): Plugin {
  let outDir = ''
  return {
    name: 'sessionline-demo:precache',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir)
    },
    async closeBundle() {
      const files = (await listFiles(outDir))
        .map((file) => relative(outDir, file).split(sep).join('/'))
        .filter((file) => file !== SERVICE_WORKER && !file.endsWith('.map'))
        .sort()
      const hash = createHash('sha256')
      for (const file of files) hash.update(file).update(await readFile(join(outDir, file)))
      const precache = { version: hash.digest('hex').slice(0, 16), files }
      const source = await readFile(template, 'utf8')
      if (!source.includes(PLACEHOLDER)) throw new Error(`${template} has no ${PLACEHOLDER}`)
      await writeFile(join(outDir, SERVICE_WORKER), source.replace(PLACEHOLDER, JSON.stringify(precache)))
    },
  }
}

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// `base: './'` makes the static build work from any folder of any static server; module
// workers need `format: 'es'` (Vite's default is iife).
export default defineConfig({
  root: here('.'),
  base: './',
  worker: { format: 'es' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
  },
  plugins: [precacheServiceWorker(here('./service-worker.js'))],
})
