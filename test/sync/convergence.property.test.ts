/**
 * Property: 2–3 devices (engines on their own databases) share a session through the real
 * Durable Streams server, each writing turns, rewinding, compacting, going offline, restarting and meeting
 * faults (an answer lost after the commit, a request lost, a busy server, garbage in the
 * stream) in a random order. Once all are
 * online they hold the same events, rows and head; every turn written is there once; and a row
 * seen while its device was live with nothing pending kept its seq.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionMessage } from '../../src/schema/messages'
import { allRows, converged, type Device, device, expectSameSession, startServer, turn } from './support'

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server.stop()
})

type Fault = 'ack-lost' | 'lost' | 'busy'
const Op = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('turn' as const), d: fc.nat(2) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('offline' as const), d: fc.nat(2) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      d: fc.nat(2),
      fault: fc.constantFrom<Fault>('ack-lost', 'lost', 'busy'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('rewind' as const), d: fc.nat(2), pick: fc.nat(10) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('settle' as const), d: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), d: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('compact' as const), d: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('garbage' as const), d: fc.nat(2) }) },
)

/** Breaks the device's next POST once, as `fault` says. */
function arm(d: Device, fault: Fault) {
  let armed = true
  d.net.fault = async (input, init, real) => {
    if (!armed || init?.method !== 'POST') return real(input, init)
    armed = false
    if (fault === 'lost') throw new TypeError('request lost')
    if (fault === 'busy') return new Response('busy', { status: 503, headers: { 'retry-after': '1' } })
    await real(input, init)
    throw new TypeError('answer lost after the commit')
  }
}

test('devices that write, rewind, go offline and meet faults converge to one log', async () => {
  let run = 0
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 2, max: 3 }),
      fc.array(Op, { minLength: 1, maxLength: 8 }),
      async (count, ops) => {
        run++
        const devices = Array.from({ length: count }, (_, i) => device(`p${run}-${i}`))
        try {
          const [first] = devices
          const { id } = await first!.engine.createSession({ title: `property ${run}` })
          await turn(first!.engine, id, 'start')
          for (const d of devices) await d.engine.sync(id, { url: server.url })
          await converged(devices, id)
          let turns = 1
          let summaries = 0
          const shown = new Map<string, number>()
          const remember = (rows: SessionMessage[]) => {
            for (const r of rows) shown.set(r.id, r.seq)
          }
          for (const op of ops) {
            const d = devices[op.d % count]!
            if (op.kind === 'turn') {
              await turn(d.engine, id, `t${turns++} on ${d.name}`)
            } else if (op.kind === 'offline') {
              d.net.offline = !d.net.offline
            } else if (op.kind === 'fault') {
              arm(d, op.fault)
            } else if (op.kind === 'rewind') {
              const users = (await allRows(d.engine, id)).filter(
                (r) => r.role === 'user' && r.visibility === 'visible',
              )
              const target = users[op.pick % users.length]
              if (target) await d.engine.rewind(id, target.id)
            } else if (op.kind === 'compact') {
              // Refused (nothing written) when the path is empty, as after a rewind to the first prompt.
              const done = await d.engine.compact(id, { summary: `summary by ${d.name}` }).then(
                () => true,
                (e: unknown) =>
                  isSessionlineError(e) && e.code === 'invalid_state' ? false : Promise.reject(e),
              )
              if (done) summaries++
            } else if (op.kind === 'restart') {
              // The worker dies (its sync mid-round, perhaps mid-request) and a new one opens the database.
              await d.engine.close()
              const next = device(d.name, { dbName: d.dbName, net: d.net })
              devices[op.d % count] = next
              await next.engine.sync(id, { url: server.url })
            } else if (op.kind === 'garbage') {
              await fetch(`${server.url}/v1/stream/sessionline/${id}`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify([{ garbage: op.d }]),
              })
            } else if (!d.net.offline) {
              await converged([d], id)
              remember(await allRows(d.engine, id))
            }
          }
          for (const d of devices) d.net.offline = false
          await converged(devices, id, 20_000)
          const { rows } = await expectSameSession(devices, id)
          // Every turn written is there once: its prompt and its answer.
          expect(rows.filter((r) => r.role === 'user')).toHaveLength(turns)
          expect(rows.filter((r) => r.role === 'assistant')).toHaveLength(turns)
          expect(rows.filter((r) => r.role === 'summary')).toHaveLength(summaries)
          for (const [rowId, seq] of shown) expect(rows.find((r) => r.id === rowId)?.seq, rowId).toBe(seq)
        } finally {
          await Promise.all(devices.map((d) => d.engine.close()))
        }
      },
    ),
    {
      numRuns: Number(process.env.SYNC_RUNS ?? 12),
      endOnFailure: true,
      ...(process.env.SYNC_SEED ? { seed: Number(process.env.SYNC_SEED) } : {}),
    },
  )
}, 600_000)
