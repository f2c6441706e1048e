#!/usr/bin/env node
/**
 * sessionline's benchmark runner (`npm run bench`). Every figure is a ratio against raw Dexie
 * doing the same work in the same run; see test/bench/README.md.
 *
 *   node test/bench/run.mjs [--quick] [--node] [--skip-build] [--out FILE] [--config '{"seedTurns":2000}']
 *                           [--only writes,reads,comlink,search,admit-under-load,jumps,stream-page,stream-page-tools,peers,provider-ai-sdk,context-growth,switch-branch,resend,tabs,portability,main-thread,folds,sync-push,sync-converge]
 *
 * Browser mode: builds the bench pages with Vite (a child process), serves them on 127.0.0.1,
 * starts Chromium with a fresh on-disk profile (a persistent context: an incognito context keeps
 * IndexedDB in memory), drives the pages, prints a markdown table, and cleans up every process
 * it started, by pid, before a hard deadline.
 * Node mode (`--node`): the same suites on fake-indexeddb, in-process. It only proves the suite
 * runs; fake-indexeddb figures say nothing about speed.
 */
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CHROMIUM, CHROMIUM_ARGS as HEADLESS_ARGS } from '../support/chromium.mjs'
import {
  foldTable,
  growthTable,
  markdownTable,
  missedSyncTargets,
  missedTargets,
  syncTable,
} from './report.mjs'
import { serveStatic } from './static-server.mjs'
import { runTabs, tabsTable } from './tabs.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '../..')
const TMP = path.join(HERE, '.tmp')
const DIST = path.join(TMP, 'dist')
const RESULTS = path.join(HERE, 'results')

const argv = process.argv.slice(2)
const flag = (/** @type {string} */ name) => argv.includes(name)
const option = (/** @type {string} */ name) => {
  const i = argv.indexOf(name)
  return i >= 0 ? argv[i + 1] : undefined
}
const KNOWN = new Set([
  '--quick',
  '--huge',
  '--node',
  '--skip-build',
  '--out',
  '--config',
  '--deadline-ms',
  '--only',
])
for (const [i, arg] of argv.entries()) {
  if (arg.startsWith('--') && !KNOWN.has(arg)) fail(`unknown option ${arg}`)
  if (!arg.startsWith('--') && !['--out', '--config', '--deadline-ms', '--only'].includes(argv[i - 1] ?? ''))
    fail(`unexpected ${arg}`)
}

const MODE = flag('--node') ? 'node' : 'browser'
const PRESET = MODE === 'node' ? 'node' : flag('--huge') ? 'huge' : flag('--quick') ? 'quick' : 'full'
const OVERRIDES = JSON.parse(option('--config') ?? '{}')
/** `BENCH_TRACE=<file>`: record a Chromium trace of the run (see startTrace). */
const TRACE = process.env.BENCH_TRACE
/** `--only a,b`: the browser steps (and `folds`) to run; the rest is skipped, so one step can be rerun alone. */
const STEPS = [
  'writes',
  'reads',
  'comlink',
  'search',
  'admit-under-load',
  'jumps',
  'stream-page',
  'stream-page-tools',
  'peers',
  'provider-ai-sdk',
  'context-growth',
  'switch-branch',
  'resend',
  'tabs',
  'portability',
  'main-thread',
  'folds',
  'sync-push',
  'sync-converge',
]
/** Steps that run in Node whatever the mode: `--only` with these alone starts no browser. */
const NODE_STEPS = ['folds']
/** The sync steps: in the bench worker on Chromium's IndexedDB (browser mode), or in Node (`--node`). */
const SYNC_STEPS = ['sync-push', 'sync-converge']
const ONLY = option('--only')?.split(',')
for (const name of ONLY ?? [])
  if (!STEPS.includes(name)) fail(`--only: unknown step ${name} (${STEPS.join(', ')})`)
const runs = (/** @type {string} */ name) => ONLY === undefined || ONLY.includes(name)
// The full run's peers (11) stream 20 replies of 2,000 deltas on three sides: minutes on their own.
const DEADLINE_MS = Number(
  option('--deadline-ms') ?? { full: 60, quick: 15, node: 5, huge: 30 }[PRESET] * 60_000,
)
const CHROMIUM_ARGS = [
  ...HEADLESS_ARGS,
  // (7) reads `performance.memory` after forced collections; neither flag changes timings.
  '--enable-precise-memory-info',
  '--js-flags=--expose-gc',
]

/** @param {string} message @returns {never} */
function fail(message) {
  console.error(`bench: ${message}`)
  process.exit(2)
}

const started = Date.now()
const log = (/** @type {unknown[]} */ ...parts) =>
  console.error(`[bench ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s]`, ...parts)

// --- cleanup: everything this run started, undone in reverse, by pid ------------------------------

/** @type {(() => unknown)[]} */
const cleanups = []
/** @type {Set<number>} */
const startedPids = new Set()
/** @type {Promise<void> | undefined} */
let cleaning
function cleanup() {
  cleaning ??= (async () => {
    while (cleanups.length) {
      try {
        await cleanups.pop()?.()
      } catch (error) {
        log('cleanup:', error instanceof Error ? error.message : error)
      }
    }
  })()
  return cleaning
}
const deadline = setTimeout(async () => {
  log(`hard deadline of ${DEADLINE_MS / 1000}s reached: stopping`)
  await cleanup()
  process.exit(3)
}, DEADLINE_MS)
deadline.unref()
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, async () => {
    await cleanup()
    process.exit(130)
  })
}

const alive = (/** @type {number} */ pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
/** Direct children of `pid`. */
function childPids(/** @type {number} */ pid) {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter(Boolean)
  } catch {
    return []
  }
}

/**
 * @template T
 * @param {Promise<T>} promise @param {number} ms @param {string} what
 * @returns {Promise<T>}
 */
function within(promise, ms, what) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000}s`)), ms)
  })
  return /** @type {Promise<T>} */ (Promise.race([promise, late])).finally(() => clearTimeout(timer))
}

/** Runs `node args…` as a child, killed by pid after `ms`. */
function runNode(/** @type {string[]} */ args, /** @type {number} */ ms, /** @type {string} */ what) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    if (child.pid) startedPids.add(child.pid)
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => {
      output += d
      if (MODE === 'node') process.stderr.write(d)
    })
    const timer = setTimeout(() => {
      log(`${what} is late: killing pid ${child.pid}`)
      child.kill('SIGKILL')
    }, ms)
    const stop = () => child.kill('SIGKILL')
    cleanups.push(stop)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      cleanups.splice(cleanups.indexOf(stop), 1)
      if (code === 0) resolve(output)
      else reject(new Error(`${what} failed (code ${code}, signal ${signal})\n${output.slice(-4000)}`))
    })
  })
}

// --- browser mode ------------------------------------------------------------------------------------

/**
 * Records a Chromium trace of the page's renderer (its main thread and workers, V8 samples,
 * IndexedDB and user timing) into `file` when the run ends: `BENCH_TRACE=<file>` on the command
 * line. The file opens in Chrome's performance panel or Perfetto; it is large (≈ 300 MB for
 * `--quick --only peers`), and tracing slows the run, so its figures are not comparable.
 * @param {import('playwright-core').BrowserContext} context
 * @param {import('playwright-core').Page} page
 * @param {string} file
 */
async function startTrace(context, page, file) {
  const cdp = await context.newCDPSession(page)
  const categories = [
    'toplevel',
    'devtools.timeline',
    'disabled-by-default-devtools.timeline',
    'v8',
    'v8.execute',
    'disabled-by-default-v8.cpu_profiler',
    'IndexedDB',
    'blink.user_timing',
  ]
  await cdp.send('Tracing.start', {
    transferMode: 'ReturnAsStream',
    traceConfig: { includedCategories: categories },
  })
  // Cleanups run last first: this one before Chromium closes.
  cleanups.push(async () => {
    const complete = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve))
    await cdp.send('Tracing.end')
    const { stream } = /** @type {{ stream: string }} */ (await complete)
    const out = fs.openSync(file, 'w')
    try {
      for (;;) {
        const chunk = await cdp.send('IO.read', { handle: stream, size: 1 << 20 })
        fs.writeSync(out, chunk.base64Encoded ? Buffer.from(chunk.data, 'base64') : chunk.data)
        if (chunk.eof) break
      }
    } finally {
      fs.closeSync(out)
    }
    log('trace written to', file)
  })
}

/** @param {Record<string, unknown>} report */
async function runInBrowser(report) {
  if (!flag('--skip-build')) {
    log('building the bench pages (vite)')
    const vite = path.join(ROOT, 'node_modules/vite/bin/vite.js')
    await runNode([vite, 'build', '--config', path.join(HERE, 'vite.config.ts')], 120_000, 'vite build')
  }
  if (!fs.existsSync(path.join(DIST, 'index.html')))
    throw new Error(`no build in ${DIST} (drop --skip-build)`)

  const server = await serveStatic(DIST)
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve(undefined))
      }),
  )
  const address = server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`

  const { chromium } = await import('playwright-core')
  const profile = fs.mkdtempSync(path.join(TMP, 'profile-'))
  cleanups.push(() => fs.rmSync(profile, { recursive: true, force: true }))
  const before = new Set(childPids(process.pid))
  log('starting', CHROMIUM)
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
    env: { ...process.env, TMPDIR: TMP },
  })
  const browserPids = childPids(process.pid).filter((pid) => !before.has(pid))
  for (const pid of browserPids) startedPids.add(pid)
  cleanups.push(async () => {
    await within(context.close(), 30_000, 'closing Chromium').catch((e) => log(e.message))
    for (const pid of browserPids) if (alive(pid)) process.kill(pid, 'SIGKILL')
  })
  report.chromium =
    context.browser()?.version() ?? execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).trim()

  /** @type {string[]} */
  const consoleLines = []
  report.console = consoleLines
  /** @param {import('playwright-core').Page} page */
  const watch = (page) => {
    page.on('console', (m) => {
      const text = m.text()
      if (text.startsWith('[bench')) log(text.replace(/^\[bench \w+\] /, ''))
      else consoleLines.push(`${m.type()}: ${text}`.slice(0, 500))
    })
    page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`))
    page.on('crash', () => consoleLines.push('page crashed'))
  }

  const page = context.pages()[0] ?? (await context.newPage())
  watch(page)
  if (TRACE) await startTrace(context, page, TRACE)
  await page.goto(`${origin}/index.html`, { timeout: 30_000 })
  await page.waitForFunction(() => window.bench !== undefined, null, { timeout: 30_000 })
  const config = await page.evaluate((request) => window.bench?.config(request), {
    preset: PRESET,
    overrides: OVERRIDES,
  })
  report.config = config
  report.worker = await page.evaluate(() => window.bench?.describe())
  const step = (/** @type {string} */ what, /** @type {() => Promise<unknown>} */ run, ms = 240_000) =>
    within(run(), ms, what)

  /** @type {import('./report.mjs').Comparison[]} */
  const comparisons = []
  report.comparisons = comparisons
  if (PRESET === 'huge') {
    log('(10) growth with session length: 1,000, 10,000 and 100,000 turns')
    comparisons.push(
      .../** @type {never[]} */ (
        await step('growth', () => page.evaluate((c) => window.bench?.growth(c), config), 25 * 60_000)
      ),
    )
    return
  }
  if (runs('writes')) {
    log('writes: (1) admit, (2) append, (3) promote')
    comparisons.push(
      .../** @type {never[]} */ (
        await step('writes', () => page.evaluate((c) => window.bench?.writes(c), config))
      ),
    )
  }

  /** @type {Record<string, unknown>} */
  const seeded = {}
  report.seeding = seeded
  // The search suite seeds its own corpus; these read the long session.
  const needsSeed = ['reads', 'comlink', 'jumps'].some(runs)
  // (15) opens, searches and exports the long session too, on the sessionline side only.
  const sides = needsSeed ? ['raw', 'sessionline'] : runs('main-thread') ? ['sessionline'] : []
  for (const side of /** @type {('raw' | 'sessionline')[]} */ (sides)) {
    log(`seeding the long session on the ${side} side (its own page, for the heap)`)
    const seeder = await context.newPage()
    watch(seeder)
    await seeder.goto(`${origin}/memory.html`, { timeout: 30_000 })
    await seeder.waitForFunction(() => window.seedBench !== undefined, null, { timeout: 30_000 })
    report.heapAvailable = await seeder.evaluate(() => window.seedBench?.heapAvailable)
    seeded[side] = await step(
      `seeding (${side})`,
      () => seeder.evaluate(([s, c]) => window.seedBench?.seed(s, c), /** @type {const} */ ([side, config])),
      300_000,
    )
    await seeder.close()
  }

  /** Runs one step of the page's bench, unless `--only` leaves it out. */
  const run = async (
    /** @type {string} */ name,
    /** @type {string} */ what,
    /** @type {string} */ method,
    ms = 240_000,
  ) => {
    if (!runs(name)) return
    log(what)
    const got = await step(name, () => page.evaluate(([m, c]) => window.bench?.[m](c), [method, config]), ms)
    comparisons.push(.../** @type {never[]} */ ([got].flat()))
  }
  await run('reads', 'reads: (4) cold open, (4b) warm tail, (5) loadThrough', 'reads')
  await run('comlink', '(6) tail through Comlink', 'comlink')
  await run('search', '(8) search', 'search', 900_000)
  await run(
    'admit-under-load',
    'admit-under-load: admit p95 while a stream and an index build run in the worker',
    'admitUnderLoad',
    900_000,
  )
  await run('jumps', '(9) jumps', 'jumps')
  await run('stream-page', '(10) a streamed answer into a 10,000-row window', 'streamPage')
  await run(
    'stream-page-tools',
    'stream-page-tools: a step of 100 tool calls through fromLanguageModel into a 10,000-row window',
    'streamPageTools',
  )
  await run('peers', '(11) peers: one chat on sessionline, Dexie liveQuery and RxDB', 'peers', DEADLINE_MS)
  await run(
    'provider-ai-sdk',
    'provider-ai-sdk: fromLanguageModel per delta vs the raw stream',
    'providerAiSdk',
  )
  await run(
    'context-growth',
    'context-growth: context() after a compaction, long history vs short',
    'history',
    900_000,
  )
  await run(
    'switch-branch',
    'switch-branch: switchBranch vs a cold open of the tail',
    'switchBranch',
    900_000,
  )
  await run('resend', 'resend, regenerate: vs admit + promote', 'resend')
  if (runs('tabs')) {
    log("(13) two tabs: cross-tab latency and a second tab's cold open, dedicated and shared workers")
    const sizes =
      PRESET === 'full'
        ? { commits: 100, opens: 10, seedTurns: 2000 }
        : { commits: 30, opens: 5, seedTurns: 500 }
    report.tabs = await step('tabs', () => runTabs(context, origin, sizes))
  }
  await run('portability', '(14) attachments, export and import', 'portability', 600_000)
  const syncSteps = SYNC_STEPS.filter(runs)
  if (syncSteps.length) {
    log(`${syncSteps.join(', ')}: engines in the bench worker through a local Durable Streams server`)
    const request = { steps: syncSteps, reps: PRESET === 'full' ? 5 : 3, streams: await startSyncServer() }
    report.sync = await step('sync', () => page.evaluate((r) => window.bench?.sync(r), request), 600_000)
  }
  if (runs('main-thread')) {
    log('(15) main thread: long tasks and frame gaps while the playground streams, opens, imports, searches')
    const { runPlaygroundStream, pageRows } = await import('./main-thread.mjs')
    const result = await step('main-thread', () => page.evaluate((c) => window.bench?.mainThread(c), config))
    comparisons.push(...pageRows(/** @type {never} */ (result), config))
    const { startServer } = await import('../../demo/serve.mjs')
    comparisons.push(
      await step(
        'main-thread-stream',
        () =>
          runPlaygroundStream({
            context,
            root: ROOT,
            outDir: path.join(TMP, 'playground'),
            vite: path.join(ROOT, 'node_modules/vite/bin/vite.js'),
            log,
            answerBytes: 200_000,
            charsPerSecond: 2_000,
            startServer,
          }),
        400_000,
      ),
    )
  }
  if (needsSeed)
    comparisons.push(
      .../** @type {never[]} */ (
        await page.evaluate(
          ([sl, raw]) => window.bench?.memoryComparisons(sl, raw),
          [seeded.sessionline, seeded.raw],
        )
      ),
    )
  if (needsSeed && !report.heapAvailable)
    report.notes = ['(7b/7c) skipped: performance.memory or gc() is not available in this Chromium']
}

// --- node mode -----------------------------------------------------------------------------------------

/** @param {Record<string, unknown>} report */
async function runInNode(report) {
  const out = path.join(TMP, `node-${process.pid}.json`)
  cleanups.push(() => fs.rmSync(out, { force: true }))
  const entry = path.join(HERE, 'src/node.ts')
  await runNode(
    ['--expose-gc', '--import', 'tsx', entry, out, JSON.stringify({ preset: PRESET, overrides: OVERRIDES })],
    DEADLINE_MS - 10_000,
    'the Node run',
  )
  Object.assign(report, JSON.parse(fs.readFileSync(out, 'utf8')))
  report.notes = [
    'fake-indexeddb: these figures only prove that every benchmark runs; they say nothing about speed.',
  ]
}

// --- folds: events/s in Node, whatever the mode ---------------------------------------------------------

/** @param {Record<string, unknown>} report */
async function runFolds(report) {
  const out = path.join(TMP, `folds-${process.pid}.json`)
  cleanups.push(() => fs.rmSync(out, { force: true }))
  const request = { turns: [1000, 100_000], samples: PRESET === 'full' ? 5 : 3 }
  log('folds: replaying generated logs of 1,000 and 100,000 turns in Node')
  await runNode(
    ['--expose-gc', '--import', 'tsx', path.join(HERE, 'src/folds.ts'), out, JSON.stringify(request)],
    DEADLINE_MS - (Date.now() - started) - 5_000,
    'the fold run',
  )
  report.folds = JSON.parse(fs.readFileSync(out, 'utf8')).folds
}

// --- sync: through a local Durable Streams server, whatever the mode -----------------------------------

/**
 * `npm run sync-server` on a free port, as a child of this runner (so that it is stopped by pid
 * with the rest). @returns {Promise<string>} the stream base URL it prints
 */
function startSyncServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'test/sync/server.mjs'), '--port', '0'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    if (child.pid) startedPids.add(child.pid)
    const stop = () =>
      new Promise((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done(undefined)
        child.once('exit', () => done(undefined))
        child.kill('SIGTERM')
        setTimeout(() => child.kill('SIGKILL'), 5_000).unref()
      })
    cleanups.push(stop)
    let output = ''
    const timer = setTimeout(() => reject(new Error(`the sync server did not start: ${output}`)), 15_000)
    const read = (/** @type {Buffer} */ d) => {
      output += d
      const streams = /streams: (\S+)\/<name>\n/.exec(output)?.[1]
      if (streams) {
        clearTimeout(timer)
        resolve(streams)
      }
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) => reject(new Error(`the sync server exited (${code}): ${output}`)))
  })
}

/** @param {Record<string, unknown>} report */
async function runSync(report) {
  const out = path.join(TMP, `sync-${process.pid}.json`)
  cleanups.push(() => fs.rmSync(out, { force: true }))
  const steps = SYNC_STEPS.filter(runs)
  log(`${steps.join(', ')}: engines on fake-indexeddb through a local Durable Streams server`)
  const streams = await startSyncServer()
  const request = { steps, reps: PRESET === 'full' ? 5 : 3, streams }
  await runNode(
    ['--import', 'tsx', path.join(HERE, 'src/sync.ts'), out, JSON.stringify(request)],
    Math.min(300_000, DEADLINE_MS - (Date.now() - started) - 5_000),
    'the sync run',
  )
  report.sync = JSON.parse(fs.readFileSync(out, 'utf8')).sync
}

// --- main ----------------------------------------------------------------------------------------------

/** The commit measured, and the library files that differed from it (a shared tree moves). */
function codeVersion() {
  const git = (/** @type {string[]} */ args) =>
    execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trimEnd()
  try {
    const changed = git(['status', '--porcelain', '--', 'src', 'worker'])
    return {
      commit: git(['rev-parse', '--short', 'HEAD']),
      uncommitted: changed ? changed.split('\n').map((l) => l.slice(3)) : [],
    }
  } catch {
    return { commit: 'unknown', uncommitted: [] }
  }
}

fs.mkdirSync(TMP, { recursive: true })
fs.mkdirSync(RESULTS, { recursive: true })
process.env.TMPDIR = TMP

/** @type {Record<string, unknown>} */
const report = {
  mode: MODE,
  preset: PRESET,
  startedAt: new Date().toISOString(),
  // The machine is shared: a high load average explains a noisy run (ratios hold up better than times).
  loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
  machine: {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
  },
  command: `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`,
  code: codeVersion(),
}
let exitCode = 0
try {
  // In Node mode the sync steps run on their own (src/sync.ts), not in the Node suites.
  const ownRun = MODE === 'node' ? [...NODE_STEPS, ...SYNC_STEPS] : NODE_STEPS
  if (ONLY === undefined || ONLY.some((step) => !ownRun.includes(step)))
    await (MODE === 'node' ? runInNode(report) : runInBrowser(report))
  if (runs('folds')) await runFolds(report)
  if (MODE === 'node' && SYNC_STEPS.some(runs)) await runSync(report)
} catch (error) {
  exitCode = 1
  report.error = error instanceof Error ? (error.stack ?? error.message) : String(error)
  log('FAILED:', error instanceof Error ? error.message : error)
} finally {
  await cleanup()
  clearTimeout(deadline)
}
const leftovers = [...startedPids].filter(alive)
report.leftoverPids = leftovers
if (leftovers.length) {
  log('processes still alive after cleanup:', leftovers.join(', '))
  exitCode ||= 4
}
report.wallMs = Date.now() - started
report.loadAverageAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100)

const comparisons = /** @type {import('./report.mjs').Comparison[]} */ (report.comparisons ?? [])
const table = markdownTable(comparisons, { judge: MODE === 'browser' })
report.table = table
const file = path.join(RESULTS, `latest${PRESET === 'full' ? '' : `-${PRESET}`}.json`)
fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`)
const extra = option('--out')
if (extra) fs.writeFileSync(path.resolve(extra), `${JSON.stringify(report, null, 2)}\n`)

const code = /** @type {{ commit: string, uncommitted: string[] }} */ (report.code)
const dirty = code.uncommitted.length ? ` + ${code.uncommitted.length} uncommitted file(s)` : ''
console.log(
  `\n## sessionline vs raw Dexie — ${MODE}, ${PRESET}, ${code.commit}${dirty} (${new Date(started).toISOString().slice(0, 16)}Z)\n`,
)
if (MODE === 'node')
  console.log('> fake-indexeddb in Node: proves the suite runs; the figures say nothing about speed.\n')
// A run of Node or sync steps alone (`--only folds`, `--only sync-push`) has no comparisons: no empty table then.
if (comparisons.length || report.error) console.log(table)
const growth = growthTable(comparisons, { judge: MODE === 'browser' })
if (growth) console.log(`\n${growth}`)
const tabs = report.tabs ? tabsTable(/** @type {never} */ (report.tabs)) : ''
if (tabs) console.log(`\n${tabs}`)
const folds = /** @type {import('./report.mjs').FoldFigure[]} */ (report.folds ?? [])
if (folds.length) console.log(`\n${foldTable(folds)}`)
const sync = /** @type {import('./report.mjs').SyncFigure[]} */ (report.sync ?? [])
if (sync.length) console.log(`\n${syncTable(sync, { judge: MODE === 'browser' })}`)
for (const note of /** @type {string[]} */ (report.notes ?? []))
  if (MODE !== 'node') console.log(`\n> ${note}`)
const missed = [...missedTargets(comparisons), ...missedSyncTargets(sync)]
if (MODE === 'browser' && missed.length)
  console.log(`\nTargets missed: ${missed.map((c) => c.id).join(', ')}`)
console.log(
  `\nwall ${(report.wallMs / 1000).toFixed(0)} s · load average ${report.loadAverageAtStart.join(' ')} → ${report.loadAverageAtEnd.join(' ')} · full report: ${path.relative(ROOT, file)}`,
)
process.exitCode = exitCode
