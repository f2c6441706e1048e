// `npm run test:sync-conformance`: the Durable Streams conformance suite against the reference
// server, as a canary. The reference server fails a few cases; this passes when exactly those
// fail (and exactly the known ones are skipped), and fails when the list changes either way — a
// case newly failing is a server regression the sync may trip on, a known failure now passing
// means known-failures.json (and what the sync works around) should be revisited.
//
//   node test/sync/conformance/run.mjs [--update]   (--update rewrites the list from this run)
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compareWithKnown } from './compare.mjs'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const LIST = fileURLToPath(new URL('./known-failures.json', import.meta.url))
// The suite takes ≈ 50 s here (TTL cases sleep 3 s, the property cases run hundreds of requests).
const DEADLINE_MS = Number(process.env.SYNC_CONFORMANCE_DEADLINE_MS ?? 5 * 60_000)
const update = process.argv.includes('--update')
const started = Date.now()

const version = async (name) =>
  JSON.parse(await readFile(join(root, 'node_modules', name, 'package.json'), 'utf8')).version
const versions = {
  server: await version('@durable-streams/server'),
  suite: await version('@durable-streams/server-conformance-tests'),
}

const dir = await mkdtemp(join(tmpdir(), 'sessionline-sync-conformance-'))
const reportFile = join(dir, 'report.json')
let child
const deadline = setTimeout(async () => {
  console.error(`\n::: sync conformance: deadline of ${DEADLINE_MS / 1000} s reached, stopping`)
  if (child?.exitCode === null) process.kill(-child.pid, 'SIGKILL')
  await rm(dir, { recursive: true, force: true })
  process.exit(124)
}, DEADLINE_MS)
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, async () => {
    if (child?.exitCode === null) process.kill(-child.pid, 'SIGKILL')
    await rm(dir, { recursive: true, force: true })
    process.exit(130)
  })

console.log(
  `::: Durable Streams conformance ${versions.suite} against the reference server ${versions.server}`,
)
// vitest exits 1 because of the known failures: the verdict is ours, from its JSON report. Its
// own output (the known failures' stacks, every run) is shown only when the verdict is not clean.
let output = ''
await new Promise((done) => {
  child = spawn(
    join(root, 'node_modules', '.bin', 'vitest'),
    [
      'run',
      '--config',
      'test/sync/conformance/vitest.config.ts',
      '--reporter=dot',
      '--reporter=json',
      `--outputFile.json=${reportFile}`,
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  )
  child.stdout.on('data', (d) => {
    output += d
  })
  child.stderr.on('data', (d) => {
    output += d
  })
  child.on('exit', done)
})
clearTimeout(deadline)

let report
try {
  report = JSON.parse(await readFile(reportFile, 'utf8'))
} catch {
  console.error(`${output}\n::: sync conformance: vitest wrote no report (its output is above)`)
  process.exit(1)
} finally {
  await rm(dir, { recursive: true, force: true })
}
const cases = report.testResults.flatMap((file) => file.assertionResults)
const named = (status) =>
  cases
    .filter((c) => c.status === status)
    .map((c) => c.fullName)
    .sort()
const got = {
  failed: named('failed'),
  skipped: [...named('skipped'), ...named('pending'), ...named('todo')].sort(),
}
const passed = cases.filter((c) => c.status === 'passed').length
const seconds = ((Date.now() - started) / 1000).toFixed(1)
console.log(
  `::: ${passed} passed, ${got.failed.length} failed, ${got.skipped.length} skipped, in ${seconds} s`,
)

if (update) {
  const notes = Object.fromEntries(
    (JSON.parse(await readFile(LIST, 'utf8').catch(() => '{}')).failed ?? []).map((f) => [f.name, f.why]),
  )
  const list = {
    ...versions,
    failed: got.failed.map((name) => ({ name, why: notes[name] ?? 'TODO: say why' })),
    skipped: got.skipped,
  }
  await writeFile(LIST, `${JSON.stringify(list, null, 2)}\n`)
  console.log(`::: wrote ${LIST}`)
  process.exit(0)
}

const known = JSON.parse(await readFile(LIST, 'utf8'))
const problems = compareWithKnown({ passed, ...got }, known)
const upgraded = known.server !== versions.server || known.suite !== versions.suite
if (problems.length === 0) {
  console.log(`::: the known failures and skips, exactly (${LIST.slice(root.length)})`)
  if (upgraded)
    console.log(
      `::: the list is for server ${known.server} and suite ${known.suite}; installed ${versions.server} and ${versions.suite} give the same: rerun with --update to record them`,
    )
  process.exit(0)
}
console.error(
  [
    output,
    '::: sync conformance: the results differ from the known list',
    ...problems.map((p) => `  ${p}`),
    upgraded
      ? `  (the list is for server ${known.server} and suite ${known.suite}; installed: ${versions.server}, ${versions.suite})`
      : '',
    '  If the change is understood, rerun with --update and say why in the list.',
  ]
    .filter(Boolean)
    .join('\n'),
)
process.exit(1)
