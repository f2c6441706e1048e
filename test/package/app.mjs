// The packed package in someone else's app: `npm pack`, then a fresh Vite + React app in a
// temporary folder outside the repo installs the tarball (its other dependencies come from the
// npm registry, at the versions this repo pins), starts the shipped default worker the way the
// README's "In a Vite app" section says, and is driven in Chromium twice:
// - built statically (with no adapter library installed) and served on loopback: admit → the
//   row is promoted in place → reload → it is still there;
// - then, with `ai`, `@ai-sdk/react` and `@assistant-ui/react` installed beside it, under the
//   `vite` dev server with the same config: the same admit check, and the README's AI SDK and
//   assistant-ui examples (copied from test/adapters) each send, call a tool and Stop (no text
//   arrives after Stop went disabled), then Regenerate and Edit, each on a new branch.
// No console error anywhere, page or worker. Run after `npm run build`; exits non-zero on any failure.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { startServer } from '../../demo/serve.mjs'
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))
const TEMPLATE = fileURLToPath(new URL('./app/', import.meta.url))
const repo = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const pinned = (name) => {
  const version = repo.devDependencies[name] ?? repo.dependencies[name]
  assert.ok(version, `${name} is not pinned in package.json`)
  return version
}
const DEADLINE_MS = Number(process.env.PACKAGE_APP_DEADLINE_MS ?? 8 * 60_000)
const started = Date.now()
const work = await mkdtemp(join(tmpdir(), 'sessionline-app-'))
assert.ok(!work.startsWith(root), 'the app must live outside the repo')
const app = join(work, 'app')
let context
let server
let dev
let passed = 0

const deadline = setTimeout(async () => {
  console.error(`package app: deadline of ${DEADLINE_MS / 1000} s reached`)
  await cleanUp()
  process.exit(124)
}, DEADLINE_MS)

async function cleanUp() {
  await context?.close().catch(() => undefined)
  await server?.close().catch(() => undefined)
  if (dev && dev.exitCode === null) {
    dev.kill()
    await new Promise((resolve) => dev.once('exit', resolve))
  }
  await rm(work, { recursive: true, force: true, maxRetries: 3 })
}

function step(name) {
  console.log(`::: ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
}

function collectErrors(page, errors) {
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`)
  })
  page.on('worker', (w) =>
    w.on('console', (message) => {
      if (message.type() === 'error') errors.push(`worker console: ${message.text()}`)
    }),
  )
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
}

async function until(check, timeoutMs, what) {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** The core page (README's "In a Vite app"): a sent row is promoted in place and survives a reload. */
async function admitAndReload(page, url) {
  await page.goto(url)
  await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 })
  // The first row element the page adds is marked as it appears, with the kind it had then.
  await page.evaluate(() => {
    const list = document.querySelector('ol')
    new MutationObserver((records, observer) => {
      const added = records.flatMap((record) => [...record.addedNodes]).find((node) => node.nodeName === 'LI')
      if (!added) return
      added.dataset.mark = added.dataset.kind
      observer.disconnect()
    }).observe(list, { childList: true })
  })
  await page.fill('input', 'hello from an app')
  await page.click('button[type=submit]')
  // It showed at once as an input, before the worker answered, and the same element (same key)
  // became the transcript's user row: promoted in place.
  const promoted = await page.waitForSelector(
    'li[data-mark="input"][data-kind="message"][data-role="user"]',
    {
      timeout: 20_000,
    },
  )
  const key = await promoted.getAttribute('data-key')
  await page.waitForSelector('li[data-role="assistant"][data-status="complete"]', { timeout: 30_000 })
  const before = await page.$$eval('li', (items) => items.map((item) => [item.dataset.key, item.textContent]))
  await page.reload()
  await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 })
  await page.waitForSelector('li[data-role="assistant"][data-status="complete"]', { timeout: 20_000 })
  const after = await page.$$eval('li', (items) => items.map((item) => [item.dataset.key, item.textContent]))
  assert.deepEqual(after, before, 'after a reload the same rows, from IndexedDB')
  assert.equal(after[0][0], key)
}

/** The README examples' controls (test/adapters/*-example.tsx). */
const AI_SDK = {
  name: 'AI SDK',
  adapter: 'ai-sdk',
  root: '.chat',
  input: '.chat input',
  send: '.chat button[type=submit]',
  stop: '.chat button:text-is("Stop")',
  assistant: '.chat article[data-role="assistant"]',
  user: '.chat article[data-role="user"]',
  regenerate: '.chat button:text-is("Regenerate")',
  edit: '.chat button.edit',
  // The example edits in its one input; its submit button reads Resend meanwhile.
  editInput: '.chat input',
  resend: '.chat button:text-is("Resend")',
}
const ASSISTANT_UI = {
  name: 'assistant-ui',
  adapter: 'assistant-ui',
  root: '.thread',
  input: '.thread textarea',
  send: '.thread button:text-is("Send")',
  stop: '.thread button:text-is("Stop")',
  assistant: '.thread [data-role="assistant"]',
  user: '.thread [data-role="user"]',
  regenerate: '.thread .actions button:text-is("Regenerate")',
  edit: '.thread .actions button:text-is("Edit")',
  editInput: '.thread .edit textarea',
  resend: '.thread .edit button:text-is("Resend")',
  branches: '.thread .branches',
}

/** Send, a tool call and Stop on one adapter's README example, each on a new session. */
async function driveAdapter(page, base, ui) {
  const open = async (query) => {
    await page.goto(`${base}adapters.html?adapter=${ui.adapter}&${query}`)
    await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 })
  }
  const answers = () => page.$$eval(ui.assistant, (items) => items.map((item) => item.textContent))
  const send = async (text) => {
    await page.fill(ui.input, text)
    await page.click(ui.send)
  }
  // One answer with text, and the turn over (Stop disabled).
  const answered = () =>
    page.waitForFunction(
      ({ assistant, root }) => {
        const shown = [...document.querySelectorAll(assistant)]
        const stop = [...document.querySelectorAll(`${root} button`)].find(
          (button) => button.textContent === 'Stop',
        )
        return shown.length > 0 && shown.at(-1).textContent.trim() !== '' && stop?.disabled === true
      },
      ui,
      { timeout: 30_000 },
    )

  await open('delay=5')
  await send('hello from an app')
  await answered()

  // With toolRate 1 the scripted model calls one of the default worker's demo tools first.
  await open('delay=5&toolRate=1')
  await send('what time is it?')
  await page.waitForSelector(`${ui.assistant} code[data-tool]`, { state: 'attached', timeout: 30_000 })
  await answered()
  // The AI SDK gives one assistant message per turn: the tool step and the answer are one.
  if (ui.adapter === 'ai-sdk') assert.equal((await answers()).length, 1, 'one assistant message for the turn')
  const tool = await page.$eval(`${ui.assistant} code[data-tool]`, (code) => code.dataset.tool)
  assert.ok(['clock', 'calculator'].includes(tool), `a demo tool was called (${tool})`)

  // Stop while it streams (a word per 100 ms): once Stop is disabled no more text arrives.
  await open('delay=100')
  await send('tell me something long')
  await page.waitForFunction(
    (assistant) => (document.querySelector(assistant)?.textContent ?? '').length >= 10,
    ui.assistant,
    { timeout: 30_000 },
  )
  await page.click(ui.stop)
  await page.waitForSelector(`${ui.stop}:disabled`, { timeout: 10_000 })
  const stopped = await answers()
  assert.ok(stopped.at(-1).length >= 10, 'the partial answer stays')
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  assert.deepEqual(await answers(), stopped, 'no text arrives after Stop went disabled')

  // Regenerate, then Edit: each answers on a new branch, and the thread shows that branch alone.
  await open('delay=5')
  await send('a prompt to answer twice')
  await answered()
  const lastId = (selector) =>
    page.$$eval(selector, (items) => items.at(-1)?.getAttribute('data-id') ?? undefined)
  const replaced = (selector, id) =>
    page.waitForFunction(
      ({ selector, id }) => {
        const last = [...document.querySelectorAll(selector)].at(-1)
        return last !== undefined && last.getAttribute('data-id') !== id
      },
      { selector, id },
      { timeout: 30_000 },
    )
  const firstAnswer = await lastId(ui.assistant)
  await page.click(ui.regenerate)
  await replaced(ui.assistant, firstAnswer)
  await answered()
  assert.equal((await answers()).length, 1, 'one answer shown: the new branch')
  if (ui.branches)
    await page.waitForFunction(
      (branches) => [...document.querySelectorAll(branches)].some((b) => b.textContent.includes('2 / 2')),
      ui.branches,
      { timeout: 10_000 },
    )

  const prompt = await lastId(ui.user)
  const secondAnswer = await lastId(ui.assistant)
  await page.click(ui.edit)
  await page.fill(ui.editInput, 'the prompt, edited')
  await page.click(ui.resend)
  await replaced(ui.user, prompt)
  await replaced(ui.assistant, secondAnswer)
  await answered()
  const users = await page.$$eval(ui.user, (items) => items.map((item) => item.textContent))
  assert.deepEqual(users, ['the prompt, edited'], 'the edited prompt replaces the first in the thread')
  assert.equal((await answers()).length, 1, 'one answer, to the edited prompt')
}

const npm = (args, cwd) =>
  execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })

try {
  step('npm pack')
  const [packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root))
  const files = packed.files.map((file) => file.path)
  for (const file of [
    'dist/index.js',
    'dist/react.js',
    'dist/worker.js',
    'dist/sessionline.worker.js',
    'dist/ai-sdk.js',
    'dist/assistant-ui.js',
    'dist/types/src/index.d.ts',
    'dist/types/src/react.d.ts',
    'dist/types/src/ai-sdk.d.ts',
    'dist/types/src/assistant-ui.d.ts',
    'dist/types/worker/index.d.ts',
    'dist/types/worker/sessionline.worker.d.ts',
    'package.json',
    'README.md',
  ])
    assert.ok(files.includes(file), `the tarball has ${file}`)
  assert.ok(!files.some((file) => file.startsWith('src/') || file.startsWith('test/')), 'no sources or tests')
  // The core entry never reaches for an adapter's library.
  const core = readFileSync(join(root, 'dist/index.js'), 'utf8')
  assert.doesNotMatch(core, /from\s+["'](ai|@ai-sdk\/[^"']+|@assistant-ui\/[^"']+|react)["']/)
  passed++

  step('a fresh Vite + React app')
  // The app's files are test/package/app (README's "In a Vite app" quotes them); only its
  // package.json is written here, to point at the tarball and pin what the repo pins.
  await cp(TEMPLATE, app, { recursive: true })
  const tarball = join(work, packed.filename)
  await writeFile(
    join(app, 'package.json'),
    `${JSON.stringify(
      {
        name: 'someone-elses-app',
        private: true,
        type: 'module',
        dependencies: {
          sessionline: `file:${tarball}`,
          react: pinned('react'),
          'react-dom': pinned('react-dom'),
        },
        devDependencies: {
          vite: pinned('vite'),
          '@vitejs/plugin-react': '6.3.0',
          '@types/react': pinned('@types/react'),
          '@types/react-dom': pinned('@types/react-dom'),
        },
      },
      null,
      2,
    )}\n`,
  )

  step('npm install (the tarball, and the rest from the registry)')
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], app)
  const installed = JSON.parse(readFileSync(join(app, 'node_modules/sessionline/package.json'), 'utf8'))
  assert.equal(installed.version, repo.version)
  // Optional peers stay out of an app that does not use them.
  for (const peer of ['ai', '@ai-sdk/react', '@assistant-ui/react'])
    assert.ok(!existsSync(join(app, 'node_modules', peer)), `${peer} was not installed`)
  passed++

  step('vite build')
  execFileSync(join(app, 'node_modules/.bin/vite'), ['build', '--logLevel', 'warn'], {
    cwd: app,
    stdio: 'inherit',
  })
  assert.ok(existsSync(join(app, 'dist', 'index.html')))
  passed++

  step('drive the build in Chromium')
  server = await startServer({ root: join(app, 'dist') })
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS],
    timeout: 30_000,
  })
  const errors = []
  const page = context.pages()[0] ?? (await context.newPage())
  collectErrors(page, errors)
  await admitAndReload(page, server.url)
  assert.deepEqual(errors, [], 'no console error in the built app')
  passed++

  step('npm install ai, @ai-sdk/react and @assistant-ui/react beside it')
  npm(
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...['ai', '@ai-sdk/react', '@assistant-ui/react'].map((name) => `${name}@${pinned(name)}`),
    ],
    app,
  )
  for (const example of ['ai-sdk-example.tsx', 'assistant-ui-example.tsx'])
    await cp(join(root, 'test/adapters', example), join(app, 'src', example))
  passed++

  step('type-check the app (its pages and the README examples) against the packed declarations')
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', join(app, 'tsconfig.json')], {
    cwd: app,
    stdio: 'inherit',
  })
  passed++

  step('vite (the dev server, same config)')
  const port = await freePort()
  dev = spawn(
    join(app, 'node_modules/.bin/vite'),
    ['--port', String(port), '--strictPort', '--host', '127.0.0.1'],
    {
      cwd: app,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const devUrl = `http://127.0.0.1:${port}/`
  await until(
    async () => (await fetch(devUrl).catch(() => undefined))?.ok === true,
    30_000,
    'the dev server answers',
  )
  // A profile of its own: the dev origin differs from the build's, and its database starts empty.
  await admitAndReload(page, devUrl)
  assert.deepEqual(errors, [], 'no console error in the app under the dev server')
  passed++

  for (const ui of [AI_SDK, ASSISTANT_UI]) {
    step(`dev: the README's ${ui.name} example sends, calls a tool, stops, regenerates and edits`)
    await driveAdapter(page, devUrl, ui)
    assert.deepEqual(errors, [], `no console error on the ${ui.name} page`)
    passed++
  }
} catch (error) {
  console.error(error)
  await cleanUp()
  clearTimeout(deadline)
  console.log(`package app: ${passed} passed, 1 failed`)
  process.exit(1)
}
await cleanUp()
clearTimeout(deadline)
console.log(`package app: ${passed} passed, 0 failed (${((Date.now() - started) / 1000).toFixed(1)} s)`)
