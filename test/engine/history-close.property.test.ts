/**
 * Closing the engine while history verbs and prompts are in flight (fake-indexeddb): whatever
 * each call answered, the engine reopened on the same database stores exactly the rows a plain
 * replay of its log gives (visibility from the tree, every row's branch place), its context is
 * the replay's, and every input acknowledged is in the log or still pending, exactly once.
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { branchOf, contextIds, replayTree, visibleIds } from '../../src/core/history-tree'
import { replayTranscript } from '../../src/core/transcript'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { inProcessEngine } from '../support/engines'

const answer = (turn: number, messageId: string): SessionEvent[] => [
  { type: 'step/start', data: { turn, step: 1 } },
  { type: 'assistant/start', data: { messageId, turn, step: 1 } },
  { type: 'assistant/delta', data: { messageId, text: `answer ${messageId}` } },
  { type: 'assistant/end', data: { messageId, finish: 'stop', usage: { input: 1, output: 1 } } },
  { type: 'step/end', data: { turn, step: 1, usage: { input: 1, output: 1 } } },
  { type: 'turn/end', data: { turn, reason: 'completed' } },
]

const allRows = async (engine: Engine, sessionId: string) =>
  (await engine.page(sessionId, { limit: 1000, includeInactive: true })).messages

type Verb = 'rewind' | 'regenerate' | 'switchBranch' | 'resend' | 'prompt'
const verbArb = fc.record({
  verb: fc.constantFrom<Verb>('rewind', 'regenerate', 'switchBranch', 'resend', 'prompt'),
  pick: fc.nat(40),
})

test('an engine closed while verbs run reopens on a log whose replay is its stored rows', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.nat(4),
      fc.array(verbArb, { minLength: 1, maxLength: 6 }),
      fc.nat(6),
      async (warmup, racing, closeAfter) => {
        const { engine, dbName, close } = await inProcessEngine({ now: () => 1_000 })
        let n = 0
        const acknowledged: string[] = []
        try {
          await engine.createSession({ id: 's' })
          // A few answered prompts and a branch, awaited: the history the race starts from.
          for (let i = 0; i <= warmup; i++) {
            const id = `w${n++}`
            await engine.admit('s', { id, text: id, delivery: 'queue' })
            acknowledged.push(id)
            const [row] = await engine.promote('s', 'settled')
            if (row) await engine.append('s', answer(row.turn, `${id}-a`))
          }
          const rows = await allRows(engine, 's')
          const target = (pick: number) => rows[pick % rows.length]!.id
          const run = async ({ verb, pick }: { verb: Verb; pick: number }) => {
            switch (verb) {
              case 'rewind':
                await engine.rewind('s', target(pick))
                return
              case 'regenerate':
                await engine.regenerate('s', target(pick))
                return
              case 'switchBranch':
                await engine.switchBranch('s', target(pick))
                return
              case 'resend': {
                const id = `r${n++}`
                await engine.resend('s', target(pick), { id, text: `edited ${id}` })
                acknowledged.push(id)
                return
              }
              case 'prompt': {
                const id = `p${n++}`
                await engine.admit('s', { id, text: id, delivery: 'queue' })
                acknowledged.push(id)
                return
              }
            }
          }
          // Everything at once, and the engine closing in the middle of it.
          const calls = racing.map((act, i) =>
            (async () => {
              if (i === closeAfter) await engine.close()
              await run(act)
            })().catch((error: unknown) => {
              // Refused (wrong kind of row) or cut off by the close: typed, never a stray throw.
              if (!isSessionlineError(error)) throw error
            }),
          )
          if (closeAfter >= racing.length) calls.push(engine.close())
          await Promise.all(calls)
        } finally {
          await close()
        }
        const reopened = await inProcessEngine({ dbName, now: () => 2_000 })
        try {
          const log = await reopened.engine.events('s', { limit: 10_000 })
          expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1))
          const tree = replayTree(log)
          const visible = new Set(visibleIds(tree))
          const expected = replayTranscript(log).map((row) => ({
            ...row,
            visibility: visible.has(row.id) ? 'visible' : 'inactive',
          }))
          const stored = await allRows(reopened.engine, 's')
          const withoutBranch = (list: readonly SessionMessage[]) => list.map(({ branch: _, ...row }) => row)
          expect(withoutBranch(stored)).toEqual(expected)
          for (const row of stored) expect(row.branch, `branch of ${row.id}`).toEqual(branchOf(tree, row.id))
          expect((await reopened.engine.context('s')).rows.map((r) => r.id)).toEqual(contextIds(tree))
          const pending = (await reopened.engine.pending('s')).map((r) => r.id)
          for (const id of acknowledged) {
            const logged = log.filter((e) => e.type === 'user/message' && e.data.inputId === id).length
            expect(logged + pending.filter((p) => p === id).length, `input ${id}`).toBe(1)
          }
        } finally {
          await reopened.close()
        }
      },
    ),
    { seed: 5033, numRuns: 30 },
  )
}, 180_000)
