// A local Durable Streams server for session sync (`npm run sync-server`): the protocol's Node
// reference server (@durable-streams/server), on 127.0.0.1 only, in memory or file-backed.
//
//   npm run sync-server -- [--port N] [--data DIR]
//
// It is a development and test server, not a service: it has no authentication, answers every
// origin (`access-control-allow-origin: *`, so the playground on another port can reach it) and
// keeps the reference server's fault-injection endpoint. That is why it refuses any address but
// the loopback one.
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DurableStreamTestServer } from '@durable-streams/server'

/** The only address this server listens on. */
export const LOOPBACK = '127.0.0.1'
/** The reference server's own default port, kept so its docs' examples work unchanged. */
export const DEFAULT_PORT = 4437

/**
 * Starts the reference server on `127.0.0.1:port` (0 picks a free port), in memory, or in
 * `dataDir` (created if missing) so that streams survive a restart.
 * @returns its URL, the base under which streams live (`${streams}/<name>`) and `close()`.
 */
export async function startSyncServer({ host = LOOPBACK, port = 0, dataDir, longPollTimeout } = {}) {
  if (host !== LOOPBACK)
    throw new Error(
      `the sync server listens on ${LOOPBACK} only (asked for ${host}): it has no authentication`,
    )
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`not a port: ${port}`)
  if (dataDir !== undefined) mkdirSync(dataDir, { recursive: true })
  const server = new DurableStreamTestServer({
    host,
    port,
    ...(dataDir === undefined ? {} : { dataDir: resolve(dataDir) }),
    ...(longPollTimeout === undefined ? {} : { longPollTimeout }),
  })
  const url = await server.start()
  return { url, streams: `${url}/v1/stream`, close: () => server.stop() }
}

/** `--port N --data DIR --host H` into options; throws on anything else. */
export function parseArguments(argv) {
  const options = { port: DEFAULT_PORT }
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]
    const value = argv[i + 1]
    if (!['--port', '--data', '--host'].includes(name)) throw new Error(`unknown argument ${name}`)
    if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value`)
    i++
    if (name === '--port') {
      if (!/^\d+$/.test(value)) throw new Error(`--port: not a port: ${value}`)
      options.port = Number(value)
    } else if (name === '--data') options.dataDir = value
    else options.host = value
  }
  return options
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let options
  try {
    options = parseArguments(process.argv.slice(2))
  } catch (error) {
    console.error(`sync-server: ${error.message}\nusage: npm run sync-server -- [--port N] [--data DIR]`)
    process.exit(2)
  }
  let server
  try {
    server = await startSyncServer(options)
  } catch (error) {
    const hint = error.code === 'EADDRINUSE' ? ' (is one running already? --port N picks another port)' : ''
    console.error(`sync-server: ${error.message}${hint}`)
    process.exit(1)
  }
  const storage = options.dataDir === undefined ? 'in memory' : `in ${resolve(options.dataDir)}`
  console.log(`sessionline sync server (Durable Streams reference server, ${storage}) at ${server.url}`)
  console.log(`streams: ${server.streams}/<name>`)
  let stopping = false
  const stop = async (signal) => {
    if (stopping) return
    stopping = true
    try {
      await server.close()
      console.log(`sync-server: stopped (${signal})`)
      process.exit(0)
    } catch (error) {
      console.error(`sync-server: stopping failed: ${error.message}`)
      process.exit(1)
    }
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}
