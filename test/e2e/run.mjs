// `npm run test:e2e`: build the demo, run the Chromium tests against it, and always clean up —
// under a hard deadline that kills, by pid, everything this run started.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { killProcessesNaming } from '../support/processes.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))
const bin = (name) => join(root, 'node_modules', '.bin', name)
const DEADLINE_MS = Number(process.env.E2E_DEADLINE_MS ?? 10 * 60_000)
const runDir = await mkdtemp(join(tmpdir(), 'sessionline-e2e-'))
// Screenshots are of this run only (a stale failure shot would mislead).
await rm(join(root, 'test', 'e2e', 'artifacts'), { recursive: true, force: true })
const started = Date.now()
let current

function run(command, args, extraEnv = {}) {
  return new Promise((resolve) => {
    current = spawn(command, args, {
      cwd: root,
      stdio: 'inherit',
      detached: true,
      env: { ...process.env, SESSIONLINE_E2E_TMP: runDir, ...extraEnv },
    })
    current.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

async function cleanUp() {
  if (current && current.exitCode === null) {
    try {
      process.kill(-current.pid, 'SIGKILL')
    } catch {}
  }
  killProcessesNaming(runDir) // the browsers, by pid
  await rm(runDir, { recursive: true, force: true, maxRetries: 3 })
}

const deadline = setTimeout(async () => {
  console.error(`\n::: e2e deadline of ${DEADLINE_MS / 1000} s reached: stopping`)
  await cleanUp()
  process.exit(124)
}, DEADLINE_MS)

// The children run in their own process group (so the deadline can kill the whole group):
// pass on an interrupt by cleaning up, or they would outlive this script.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await cleanUp()
    process.exit(130)
  })
}

let code = 1
try {
  console.log('::: building the demo')
  code = await run(bin('vite'), ['build', '--config', 'demo/vite.config.ts', '--logLevel', 'warn'])
  if (code === 0) {
    console.log('::: browser tests (Chromium)')
    code = await run(bin('vitest'), [
      'run',
      '--config',
      'test/e2e/vitest.config.ts',
      ...process.argv.slice(2),
    ])
  }
} finally {
  clearTimeout(deadline)
  await cleanUp()
}
console.log(`::: e2e finished in ${((Date.now() - started) / 1000).toFixed(1)} s`)
process.exit(code)
