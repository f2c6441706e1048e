/**
 * `npm run bench:attachment-stores [-- chromium firefox webkit webkit-opfs] [--quick] [--out FILE]`
 *
 * Builds the attachment-stores page, serves it on 127.0.0.1 (cross-origin isolated, for fine
 * timers), and in each browser, through the browser contract's drivers, asks its worker what it
 * supports and then times IndexedDB Blobs against OPFS files at 100 KB, 1 MB and 10 MB. Prints
 * the tables and writes the run to results/latest-attachment-stores.json. Each browser has a
 * deadline; whatever this run started (browsers, drivers, Xvfb) is killed by pid at the end.
 */
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import type http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromiumKind } from '../../e2e/contract/drivers/chromium'
import { firefoxKind } from '../../e2e/contract/drivers/firefox'
import type { BrowserKind, BrowserSession } from '../../e2e/contract/drivers/types'
import { webkitKind, webkitKindWith } from '../../e2e/contract/drivers/webkit'
import { killProcessesNaming } from '../../support/processes.mjs'
import { serveStatic } from '../static-server.mjs'
import type { Features } from './features'
import { type BrowserRun, browserTable, featuresTable } from './report'
import type { OpfsWriter } from './stores'
import type { MeasureResult } from './worker'

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url))
const root = here('../../..')
const dist = here('../.tmp/attachment-stores')
const KB = 1024
const MB = 1024 * KB
const PER_BROWSER_MS = 170_000
const WHOLE_RUN_MS = 10 * 60_000

const args = process.argv.slice(2)
type Browser = { label: string; kind: BrowserKind }
const quick = args.includes('--quick')
const outAt = args.indexOf('--out')
const out = outAt >= 0 ? args[outAt + 1] : undefined
// WebKitGTK 2.50 ships the Storage API and the origin private file system turned off (Safari
// turns them on): `webkit` is the port as shipped, `webkit-opfs` the same engine with them on.
const WEBKIT_OPFS = ['StorageAPI', 'FileSystem', 'AccessHandle', 'FileSystemWritableStream']
const kinds: Browser[] = [
  { label: 'chromium', kind: chromiumKind },
  { label: 'firefox', kind: firefoxKind },
  { label: 'webkit', kind: webkitKind },
  { label: 'webkit-opfs', kind: webkitKindWith(WEBKIT_OPFS) },
]
const asked = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--out')
for (const name of asked)
  if (!kinds.some((k) => k.label === name))
    throw new Error(`unknown browser ${name} (${kinds.map((k) => k.label).join(', ')})`)
const browsers = asked.length > 0 ? kinds.filter((k) => asked.includes(k.label)) : kinds
const SIZES = [
  { label: '100 KB', bytes: 100 * KB, reps: quick ? 3 : 11 },
  { label: '1 MB', bytes: MB, reps: quick ? 3 : 9 },
  { label: '10 MB', bytes: 10 * MB, reps: quick ? 3 : 7 },
]

/** Every process descended from this one (browsers, drivers, Xvfb and their children). */
function descendants(): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number])
  const found: number[] = []
  const walk = (parent: number) => {
    for (const [pid, ppid] of rows)
      if (ppid === parent) {
        found.push(pid)
        walk(pid)
      }
  }
  walk(process.pid)
  return found
}

function killStarted(dir: string) {
  for (const pid of descendants()) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
  }
  killProcessesNaming(dir)
}

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

function build(): Promise<void> {
  return new Promise((resolve, reject) => {
    const vite = spawn(
      path.join(root, 'node_modules', '.bin', 'vite'),
      ['build', '--config', 'test/bench/attachment-stores/vite.config.ts'],
      { cwd: root, stdio: 'inherit' },
    )
    vite.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`vite build exited with ${code}`))))
  })
}

const load = () => os.loadavg()[0]!

async function runBrowser({ label, kind }: Browser, url: string, profile: string): Promise<BrowserRun> {
  const started = Date.now()
  const result: BrowserRun = { browser: label, runs: [], load: { start: load(), end: 0 }, seconds: 0 }
  const missing = kind.missing()
  if (missing) return { ...result, error: missing, load: { start: result.load.start, end: load() } }
  let session: BrowserSession | undefined
  try {
    await withDeadline(
      (async () => {
        session = await kind.launch(profile)
        const tab = await session.newTab(url)
        const features = await tab.call<Features & { pageHasGetDirectory: boolean }>('features')
        result.features = features
        console.log(`::: ${label}: ${JSON.stringify(features)}`)
        const writers: OpfsWriter[] = []
        if (features.syncAccessHandle === 'ok') writers.push('sync-access-handle')
        if (features.createWritable === 'ok') writers.push('writable')
        for (const size of SIZES) {
          const run = await tab.call<MeasureResult>('measure', {
            bytes: size.bytes,
            reps: size.reps,
            writers,
          })
          result.runs.push({ ...run, label: size.label })
          console.log(`::: ${label}: ${size.label} done (${((Date.now() - started) / 1000).toFixed(0)} s)`)
        }
      })(),
      PER_BROWSER_MS,
      label,
    )
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error)
  } finally {
    if (session) await withDeadline(session.close(), 20_000, `${label} close`).catch(() => undefined)
    killStarted(profile)
  }
  return {
    ...result,
    load: { start: result.load.start, end: load() },
    seconds: (Date.now() - started) / 1000,
  }
}

const runDir = await mkdtemp(path.join(os.tmpdir(), 'sessionline-attachment-stores-'))
const whole = setTimeout(() => {
  console.error(`::: attachment-stores: the whole run's deadline of ${WHOLE_RUN_MS / 60_000} min passed`)
  killStarted(runDir)
  process.exit(124)
}, WHOLE_RUN_MS)
let server: http.Server | undefined
try {
  const uptime = execFileSync('uptime', { encoding: 'utf8' }).trim()
  console.log(`::: ${uptime}`)
  await build()
  server = await serveStatic(dist)
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`
  const results: BrowserRun[] = []
  for (const browser of browsers) {
    console.log(`::: ${browser.label}`)
    results.push(await runBrowser(browser, url, path.join(runDir, browser.label)))
  }
  const report = [
    featuresTable(results),
    ...results.filter((b) => b.runs.length > 0 || b.error).map(browserTable),
  ].join('\n\n')
  console.log(`\n${report}\n`)
  const json = JSON.stringify(
    {
      date: new Date().toISOString(),
      uptime,
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
      sizes: SIZES,
      browsers: results,
    },
    null,
    2,
  )
  const latest = here('../results/latest-attachment-stores.json')
  fs.writeFileSync(latest, json)
  if (out) fs.writeFileSync(path.resolve(out), json)
  console.log(`::: wrote ${path.relative(root, latest)}${out ? ` and ${out}` : ''}`)
} finally {
  clearTimeout(whole)
  server?.close()
  killStarted(runDir)
  await rm(runDir, { recursive: true, force: true, maxRetries: 3 })
}
