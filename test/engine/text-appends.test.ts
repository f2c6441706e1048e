/**
 * `watch(…, { textAppends: true })`: a watcher that takes streamed text as appends ends every
 * change with exactly the rows a watcher of whole rows holds, on both transports, and what it is
 * sent for one answer grows with the answer, not with its square.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { applyTextAppend } from '../../src/core/text-append'
import type { SessionChange } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { engineKinds } from '../support/engines'

/** Through Comlink a push may land after the call that caused it answered: wait for it. */
async function until(ok: () => boolean, what: string) {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 2))
  if (!ok()) throw new Error(`never saw ${what}`)
}

/** The rows a watcher holds after applying its changes in order. */
function holder() {
  const rows = new Map<string, SessionMessage>()
  let appended = 0
  let mismatched = 0
  let headSeq = 0
  const apply = (change: SessionChange) => {
    headSeq = change.headSeq
    for (const row of change.rows) rows.set(row.id, row)
    for (const append of change.appends ?? []) {
      const held = rows.get(append.id)
      const next = held && applyTextAppend(held, append)
      if (next === undefined) mismatched++
      else rows.set(append.id, next)
      appended += append.text.length
    }
  }
  return { rows, apply, appended: () => appended, mismatched: () => mismatched, headSeq: () => headSeq }
}

type Chunk = { kind: 'text' | 'reasoning' | 'tool'; text: string }

const chunk = fc.record({
  kind: fc.constantFrom<Chunk['kind']>('text', 'text', 'text', 'reasoning', 'tool'),
  text: fc.string({ minLength: 1, maxLength: 12 }),
})

describe.each(engineKinds)('text appends %s', (_, makeEngine) => {
  test('a watcher of appends holds exactly what a watcher of whole rows holds, after every change', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(chunk, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 4 }),
        async (messages, perAppend) => {
          const { engine, close } = await makeEngine()
          try {
            const { id } = await engine.createSession({ id: 's' })
            const whole = holder()
            const appends = holder()
            const stops = [
              await engine.watch(id, whole.apply),
              await engine.watch(id, appends.apply, { textAppends: true }),
            ]
            const bothAt = async ({ headSeq }: { headSeq: number }) => {
              await until(
                () => whole.headSeq() === headSeq && appends.headSeq() === headSeq,
                `seq ${headSeq}`,
              )
              expect(appends.rows).toEqual(whole.rows)
            }
            await engine.append(id, [
              { type: 'turn/start', data: { turn: 1 } },
              { type: 'step/start', data: { turn: 1, step: 1 } },
            ])
            for (const [m, chunks] of messages.entries()) {
              const messageId = `m${m}`
              await engine.append(id, [{ type: 'assistant/start', data: { messageId, turn: 1, step: 1 } }])
              let batch: SessionEvent[] = []
              for (const [c, { kind, text }] of chunks.entries()) {
                if (kind === 'tool')
                  batch.push({
                    type: 'tool/call',
                    data: { messageId, callId: `${messageId}-c${c}`, name: 'echo', input: { text } },
                  })
                else
                  batch.push({
                    type: 'assistant/delta',
                    data: kind === 'text' ? { messageId, text } : { messageId, reasoning: text },
                  })
                if (batch.length >= perAppend) {
                  await bothAt(await engine.append(id, batch))
                  batch = []
                }
              }
              if (batch.length) await bothAt(await engine.append(id, batch))
              await bothAt(
                await engine.append(id, [{ type: 'assistant/end', data: { messageId, finish: 'stop' } }]),
              )
            }
            for (const stop of stops) stop()
            expect(appends.mismatched()).toBe(0)
            expect([...appends.rows.values()]).toEqual((await engine.loadThrough(id, { seq: 1 })).messages)
          } finally {
            await close()
          }
        },
      ),
      { seed: 20261201, numRuns: 25 },
    )
  })

  test('a 100 KB answer in 1 KB deltas sends its watcher about 100 KB of text, not the square', async () => {
    const { engine, close } = await makeEngine()
    try {
      const { id } = await engine.createSession({ id: 's' })
      let wholeText = 0
      let appendText = 0
      let seen = [0, 0]
      const size = (rows: readonly SessionMessage[]) =>
        rows.reduce((n, r) => n + r.parts.reduce((k, p) => k + ('text' in p ? p.text.length : 0), 0), 0)
      const stops = [
        await engine.watch(id, (change) => {
          wholeText += size(change.rows)
          seen = [change.headSeq, seen[1]!]
        }),
        await engine.watch(
          id,
          (change) => {
            appendText += size(change.rows) + (change.appends ?? []).reduce((n, a) => n + a.text.length, 0)
            seen = [seen[0]!, change.headSeq]
          },
          { textAppends: true },
        ),
      ]
      await engine.append(id, [
        { type: 'turn/start', data: { turn: 1 } },
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'a', turn: 1, step: 1 } },
      ])
      const delta = 'x'.repeat(1024)
      for (let i = 0; i < 100; i++)
        await engine.append(id, [{ type: 'assistant/delta', data: { messageId: 'a', text: delta } }])
      const { headSeq } = await engine.append(id, [
        { type: 'assistant/end', data: { messageId: 'a', finish: 'stop' } },
      ])
      await until(() => seen[0] === headSeq && seen[1] === headSeq, 'the last change')
      for (const stop of stops) stop()
      const answer = 100 * 1024
      // Whole rows: 1 + 2 + … + 100 KB, and the last row once more (≈ 5 MB).
      expect(wholeText).toBe((answer * 101) / 2 + answer)
      // Appends: the first delta arrives whole with its row, 99 as appends, the settled row whole.
      expect(appendText).toBe(answer + answer)
    } finally {
      await close()
    }
  })
})
