import fc from 'fast-check'
import { expect, test } from 'vitest'
import type { ModelProvider } from '../../src/engine/provider'
import { createDemoTools } from '../../src/engine/tools'
import type { Delivery } from '../../src/schema/common'
import type { StoredEvent } from '../../src/schema/events'
import { allEvents, expectWellFormed, scripted, startEngine, waitFor } from './harness'

interface Admission {
  delivery: Delivery
  /** Admitted just before the finish of the n-th provider request (0: while idle). */
  at: number
  id?: string
  /** Admission seq of the receipt. */
  seq?: number
  during?: { turn: number; step: number }
}

const admission = fc.record({
  delivery: fc.constantFrom<Delivery>('steer', 'queue'),
  at: fc.integer({ min: 0, max: 8 }),
})

/**
 * Random admissions, each made at a chosen point of the run (mid-step, just before the model
 * finishes, or while idle), against the real engine: the inbox rules of docs/architecture.md §5 must hold.
 */
test('steer and queue follow the inbox rules under generated admission schedules', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(admission, { minLength: 1, maxLength: 7 }),
      fc.integer({ min: 0, max: 1000 }),
      async (plan, seed) => {
        const admissions: Admission[] = plan.map((a, i) => ({ ...a, at: i === 0 ? 0 : a.at }))
        let calls = 0
        let admit!: (a: Admission, during?: Admission['during']) => Promise<void>
        const inner = scripted(seed, 0.4)
        const provider: ModelProvider = (request) =>
          (async function* () {
            const n = ++calls
            for await (const chunk of inner(request)) {
              if (chunk.type === 'finish') {
                for (const a of admissions.filter((x) => x.at === n && !x.id))
                  await admit(a, { turn: request.turn, step: request.step })
              }
              yield chunk
            }
          })()
        const { engine, sessionId, close } = await startEngine({
          provider,
          tools: createDemoTools({ now: () => 0 }),
        })
        admit = async (a, during) => {
          const receipt = await engine.admit(sessionId, {
            text: `${a.delivery} at ${a.at}`,
            delivery: a.delivery,
          })
          a.id = receipt.id
          a.seq = receipt.seq
          if (during) a.during = during
        }
        const idle = () =>
          waitFor(engine, sessionId, async () => {
            // In this order: two reads at once may see the log before a promotion and the inbox
            // after it; the log read after the inbox read includes every promotion it missed.
            const pending = await engine.pending(sessionId)
            const events = await allEvents(engine, sessionId)
            return pending.length === 0 && events.at(-1)?.type === 'turn/end'
          })
        try {
          for (const a of admissions.filter((x) => x.at === 0)) await admit(a)
          await idle()
          // Points the run never reached: admit those while idle, one batch at a time.
          while (admissions.some((a) => !a.id)) {
            const next = Math.min(...admissions.filter((a) => !a.id).map((a) => a.at))
            for (const a of admissions.filter((x) => x.at === next && !x.id)) await admit(a)
            await idle()
          }
          checkInboxRules(await allEvents(engine, sessionId), admissions)
        } finally {
          await close()
        }
      },
    ),
    { seed: 20261130, numRuns: 12 },
  )
})

function checkInboxRules(events: readonly StoredEvent[], admissions: readonly Admission[]): void {
  expect(expectWellFormed(events)).toEqual([])
  const promoted = events.flatMap((e, i) => (e.type === 'user/message' ? [{ id: e.data.inputId, i }] : []))
  // Every input promoted exactly once.
  expect(promoted.map((p) => p.id).sort()).toEqual(admissions.map((a) => a.id!).sort())
  const indexOf = (id: string) => promoted.find((p) => p.id === id)!.i
  const turnOf = (i: number) => {
    for (let j = i; j >= 0; j--) {
      const e = events[j]!
      if (e.type === 'turn/start') return e.data.turn
    }
    return 0
  }
  for (const a of admissions) {
    const at = indexOf(a.id!)
    if (a.delivery === 'queue') {
      // A queued input always opens a turn of its own.
      expect(events[at - 1]?.type).toBe('turn/start')
    } else if (a.during) {
      // A steer admitted mid-step joins that turn right after that step (after fellow steers).
      let j = at - 1
      while (events[j]?.type === 'user/message') j--
      expect(events[j]).toMatchObject({ type: 'step/end', data: a.during })
      expect(turnOf(at)).toBe(a.during.turn)
    }
  }
  // Queued inputs run in admission order.
  const queued = admissions.filter((a) => a.delivery === 'queue')
  const byPromotion = [...queued].sort((x, y) => indexOf(x.id!) - indexOf(y.id!))
  const byAdmission = [...queued].sort((x, y) => x.seq! - y.seq!)
  expect(byPromotion.map((a) => a.id)).toEqual(byAdmission.map((a) => a.id))
}
