// The Durable Streams conformance suite against the reference server that `npm run sync-server`
// runs, in this process. Not a unit test: run.mjs runs it (`npm run test:sync-conformance`) and
// compares its failures with known-failures.json, so that an upgrade of the server or of the
// suite that fixes or breaks a case is noticed before the sync relies on it.
import { DurableStreamTestServer } from '@durable-streams/server'
import { runConformanceTests } from '@durable-streams/server-conformance-tests'
import { afterAll, beforeAll } from 'vitest'

// The server holds a long-poll open this long (its default is 30 s, as long as a test may take,
// so the suite's two `offset=now` long-poll cases timed out instead of seeing the 204).
const LONG_POLL_MS = 2_000
// Filled in before any test runs: the suite reads `baseUrl` lazily.
const options = { baseUrl: '', longPollTimeoutMs: LONG_POLL_MS }
let server: DurableStreamTestServer | undefined

beforeAll(async () => {
  server = new DurableStreamTestServer({ port: 0, host: '127.0.0.1', longPollTimeout: LONG_POLL_MS })
  options.baseUrl = await server.start()
})
afterAll(async () => {
  await server?.stop()
})

runConformanceTests(options)
