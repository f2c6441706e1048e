// `npm run test:storybook`: build Storybook statically, then drive its stories in Chromium.
// `SKIP_STORYBOOK_BUILD=1` reuses an existing storybook-static/.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const bin = (name) => join(root, 'node_modules', '.bin', name)
const started = Date.now()

function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit' })
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

let code = 0
if (!process.env.SKIP_STORYBOOK_BUILD) {
  console.log('::: building Storybook (static)')
  code = await run(bin('storybook'), ['build', '--output-dir', 'storybook-static', '--quiet'])
}
if (code === 0) {
  console.log('::: Storybook stories in Chromium')
  code = await run(bin('vitest'), [
    'run',
    '--config',
    'test/storybook/vitest.config.ts',
    ...process.argv.slice(2),
  ])
}
console.log(`::: storybook finished in ${((Date.now() - started) / 1000).toFixed(1)} s`)
process.exit(code)
