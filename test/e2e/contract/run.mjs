// `npm run test:contract [-- chromium|firefox|webkit] [-- <vitest flags>]`: build the contract
// page, run the browser contract in each browser, always clean up — under a hard deadline that kills, by pid,
// everything this run started (browsers, drivers, Xvfb).
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { killProcessesNaming } from '../../support/processes.mjs'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const bin = (name) => join(root, 'node_modules', '.bin', name)
// Both worker modes in three browsers take about 9 minutes here (shared mode about 2.7 of them);
// the rest is room for a WebKit stall's recovery (a wait of 60 s, then a relaunch).
const DEADLINE_MS = Number(process.env.CONTRACT_DEADLINE_MS ?? 15 * 60_000)
const runDir = await mkdtemp(join(tmpdir(), 'sessionline-contract-'))
await rm(join(root, 'test', 'e2e', 'artifacts', 'contract'), { recursive: true, force: true })
const started = Date.now()
let current

function run(command, args) {
  return new Promise((resolve) => {
    current = spawn(command, args, {
      cwd: root,
      stdio: 'inherit',
      detached: true,
      env: { ...process.env, SESSIONLINE_E2E_TMP: runDir },
    })
    current.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

/** Every process of this run's group, and any whose command line names this run's folder. */
function killStragglers() {
  if (current?.pid) {
    try {
      process.kill(-current.pid, 'SIGKILL')
    } catch {}
  }
  killProcessesNaming(runDir)
}

async function cleanUp() {
  killStragglers()
  await rm(runDir, { recursive: true, force: true, maxRetries: 3 })
}

const deadline = setTimeout(async () => {
  console.error(`\n::: contract deadline of ${DEADLINE_MS / 1000} s reached: stopping`)
  await cleanUp()
  process.exit(124)
}, DEADLINE_MS)
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await cleanUp()
    process.exit(130)
  })
}

// Everything after a `--` goes to vitest as it is: `-- webkit -- -t 'an attachment'` runs the
// scenarios whose name holds those words (with CONTRACT_MODES=shared, in one mode).
const args = process.argv.slice(2)
const cut = args.indexOf('--')
const vitestFlags = cut < 0 ? [] : args.slice(cut + 1)
const browsers = (cut < 0 ? args : args.slice(0, cut)).filter((arg) => !arg.startsWith('-'))
const files = (browsers.length > 0 ? browsers : ['chromium', 'firefox', 'webkit']).map(
  (name) => `test/e2e/contract/${name}.contract.ts`,
)
let code = 1
try {
  console.log('::: building the contract page')
  code = await run(bin('vite'), ['build', '--config', 'test/e2e/contract/vite.config.ts'])
  if (code === 0) {
    console.log(`::: browser contract (${files.map((f) => f.split('/').pop()).join(', ')})`)
    code = await run(bin('vitest'), [
      'run',
      '--config',
      'test/e2e/contract/vitest.config.ts',
      ...files,
      ...vitestFlags,
    ])
  }
} finally {
  clearTimeout(deadline)
  await cleanUp()
}
console.log(`::: contract finished in ${((Date.now() - started) / 1000).toFixed(1)} s`)
process.exit(code)
