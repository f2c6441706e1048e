/**
 * The sync steps in Node on fake-indexeddb (`npm run bench -- --node`, or alone): the same
 * measurement as the browser run's (src/sync-measure.ts), against the Durable Streams reference
 * server (test/sync/server.mjs, in memory, a process of its own; the runner starts it, or this
 * script when run alone). fake-indexeddb's speed says little: the browser run's figures are the
 * ones to read.
 *
 *   node --import tsx test/bench/src/sync.ts <out.json> '{"pushEvents":10000,"reps":3}'
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { measureSync, type SyncRequest } from './sync-measure'

/** The server in a child process, so that its work does not share this event loop. */
async function startServer(): Promise<{ streams: string; stop: () => Promise<void> }> {
  const script = fileURLToPath(new URL('../../sync/server.mjs', import.meta.url))
  const child: ChildProcess = spawn(process.execPath, [script, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise((done) => child.once('exit', done))
  let output = ''
  const streams = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the sync server did not start: ${output}`)), 15_000)
    child.stdout?.on('data', (d) => {
      output += d
      const found = /streams: (\S+)\/<name>\n/.exec(output)?.[1]
      if (found) {
        clearTimeout(timer)
        resolve(found)
      }
    })
    child.once('exit', () => reject(new Error(`the sync server exited: ${output}`)))
  })
  return {
    streams,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
    },
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [out, given] = process.argv.slice(2)
  if (!out) throw new Error('usage: sync.ts <out.json> [request JSON]')
  const request = JSON.parse(given ?? '{}') as Partial<SyncRequest>
  const server = request.streams ? { streams: request.streams, stop: async () => {} } : await startServer()
  try {
    const sync = await measureSync(
      {
        dexie: { indexedDB, IDBKeyRange },
        engine: { indexedDB, IDBKeyRange },
        log: (message) => console.error(`[bench sync] ${message}`),
        where: 'Node, fake-indexeddb',
      },
      { ...request, streams: server.streams },
    )
    writeFileSync(out, `${JSON.stringify({ sync }, null, 2)}\n`)
  } finally {
    await server.stop()
  }
}
