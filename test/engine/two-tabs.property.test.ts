/**
 * Two tabs on one session, any interleaving: two engines on one database admit, cancel, edit and
 * stream into one answer at once, each on its own cache. Whatever the interleaving, every
 * engine and a fresh one read exactly the rows a plain replay of the log makes, and agree on the
 * inbox (the differential oracle is `replayTranscript`).
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { replayTranscript } from '../../src/core/transcript'
import type { Engine } from '../../src/engine/types'
import { engineKinds, freshDbName } from '../support/engines'

type Kind = 'steer' | 'queue' | 'cancel' | 'edit' | 'delta' | 'read'
type Op = { engine: 0 | 1; kind: Kind; pick: number }

const op = fc.record({
  engine: fc.constantFrom<0 | 1>(0, 1),
  kind: fc.constantFrom<Kind>('steer', 'queue', 'cancel', 'edit', 'delta', 'delta', 'delta', 'read'),
  pick: fc.nat(20),
})

// Through Comlink only: each call then starts in a task of its own, as a tab's calls reach its
// worker. Two in-process engines called in one task share Dexie's transaction zones (one realm,
// one Dexie), and a delta appended there beside the other engine's admit fails with
// PrematureCommitError; two tabs never share a realm (seen on the code before these fixes too).
const tabs = engineKinds.filter(([name]) => name === 'through Comlink')

describe.each(tabs)('two tabs %s, any interleaving', (_, makeEngine) => {
  test('inbox writes on a stale cache beside streaming keep every row equal to a replay of the log', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 2, maxLength: 8 }),
        async (rounds) => {
          const dbName = freshDbName('tabs-prop')
          const a = await makeEngine({ dbName })
          const b = await makeEngine({ dbName })
          const fresh = await makeEngine({ dbName })
          try {
            const { id } = await a.engine.createSession({ id: 's' })
            await a.engine.admit(id, { id: 'p', text: 'go' })
            await b.engine.pending(id) // b's cache holds the session before the answer starts
            await a.engine.promote(id, 'settled')
            await a.engine.append(id, [
              { type: 'step/start', data: { turn: 1, step: 1 } },
              { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
            ])
            const engines: Engine[] = [a.engine, b.engine]
            const admitted: string[] = []
            let n = 0
            // Each round runs its operations at once; rounds follow each other.
            for (const round of rounds) {
              const results = await Promise.allSettled(
                round.map(({ engine, kind, pick }: Op) => {
                  const e = engines[engine] as Engine
                  const k = n++
                  const target = admitted[pick % Math.max(1, admitted.length)] ?? 'none'
                  switch (kind) {
                    case 'steer':
                    case 'queue':
                      admitted.push(`in-${k}`)
                      return e.admit(id, { id: `in-${k}`, text: `input ${k}`, delivery: kind })
                    case 'cancel':
                      return e.cancel(id, target)
                    case 'edit':
                      return e.edit(id, target, { text: `edited ${k}` })
                    case 'delta':
                      return e.append(id, [
                        { type: 'assistant/delta', data: { messageId: 'm1', text: `w${k} ` } },
                      ])
                    default:
                      return e.loadThrough(id, { seq: 0 })
                  }
                }),
              )
              for (const r of results) {
                if (r.status === 'rejected')
                  expect(['not_found', 'invalid_state'], String(r.reason)).toContain(
                    (r.reason as { code: string }).code,
                  )
              }
              // Mid-stream, a fresh read equals the replay of the log as it stands.
              const events = await fresh.engine.events(id, { limit: 10_000 })
              expect((await fresh.engine.loadThrough(id, { seq: 0 })).messages).toEqual(
                replayTranscript(events),
              )
            }
            await a.engine.append(id, [
              { type: 'assistant/end', data: { messageId: 'm1', finish: 'stop' } },
              { type: 'step/end', data: { turn: 1, step: 1 } },
            ])
            const events = await fresh.engine.events(id, { limit: 10_000 })
            expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
            const replayed = replayTranscript(events)
            for (const e of [a.engine, b.engine, fresh.engine]) {
              expect((await e.loadThrough(id, { seq: 0 })).messages).toEqual(replayed)
            }
            expect(await a.engine.pending(id)).toEqual(await fresh.engine.pending(id))
            expect(await b.engine.pending(id)).toEqual(await fresh.engine.pending(id))
          } finally {
            await a.close()
            await b.close()
            await fresh.close()
          }
        },
      ),
      { seed: 2222, numRuns: 20 },
    )
  }, 180_000)
})
