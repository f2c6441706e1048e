/**
 * A pull confirms this device's own batches without checking and folding them again when they
 * arrive exactly as stored, where its log has them (src/sync/plan.ts `ownBatchAt`). Differential:
 * the same stream with every message's keys in another order (the same batches to the fold, but
 * never equal as stored, so every message takes the full fold) must plan the same commit, folds
 * included, whatever else is mixed in (another device's batch, garbage, a repeat).
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { SyncBatch } from '../../src/schema/sync'
import type { SessionRow, SyncStateRow } from '../../src/store/db'
import type { SyncView } from '../../src/store/sync'
import { type PullPlan, planCut, planPull } from '../../src/sync/plan'

const turnEvents = (turn: number, prefix: string): SessionEvent[] => [
  { type: 'turn/start', data: { turn } },
  {
    type: 'user/message',
    data: { inputId: `${prefix}u${turn}`, text: `t${turn}`, delivery: 'queue', source: 'user' },
  },
  { type: 'step/start', data: { turn, step: 1 } },
  { type: 'assistant/start', data: { messageId: `${prefix}a${turn}`, turn, step: 1 } },
  { type: 'assistant/end', data: { messageId: `${prefix}a${turn}`, finish: 'stop' } },
  { type: 'step/end', data: { turn, step: 1 } },
  { type: 'turn/end', data: { turn, reason: 'completed' } },
]

function viewOf(events: SessionEvent[], deviceId: string, canonicalSeq = 0): SyncView {
  const stored = events.map((e, i) => ({ ...e, sessionId: 's', seq: i + 1, at: 10 + i }) as StoredEvent)
  const row: SessionRow = {
    id: 's',
    title: '',
    createdAt: 10,
    updatedAt: 10,
    headSeq: stored.length,
    nextInputSeq: 1,
    source: 'native',
    rev: 1,
  }
  const state: SyncStateRow = {
    sessionId: 's',
    url: 'http://x',
    deviceId,
    epoch: 0,
    nextProducerSeq: 0,
    offset: '-1',
    canonicalSeq,
    seen: [],
    skipped: 0,
  }
  return { row, events: stored, state, outbox: [] }
}

/** The same batch, its keys in another order (`events` first): equal to the fold, not as stored. */
const reordered = (message: unknown): unknown => {
  if (typeof message !== 'object' || message === null || !('events' in message)) return message
  const { events, ...rest } = message as SyncBatch
  return { events, ...rest }
}

/** A plan as data: the commit, and the folds its `putFolds` stores. */
function planned(view: SyncView, messages: readonly unknown[]) {
  const stored: unknown[] = []
  const plan: PullPlan = planPull(view, messages, 'next', (_s, through, folds) => {
    stored.push({ through, folds })
    return undefined
  })
  if (plan.kind === 'commit') {
    plan.commit.log?.putFolds()
    plan.commit.append?.putFolds()
  }
  return JSON.parse(JSON.stringify({ plan, stored }))
}

let ids = 0
const newId = () => `b${++ids}`

test('own batches confirmed as stored plan what the full fold plans', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 7, max: 20 }),
      fc.array(fc.constantFrom('own', 'other', 'garbage', 'repeat'), { minLength: 1, maxLength: 12 }),
      (ownTurns, otherTurns, maxEvents, script) => {
        // This device: a session and its turns, every event after the first batch still its own.
        const created: SessionEvent = { type: 'session/created', data: { title: '' } }
        const ownEvents = [
          created,
          ...Array.from({ length: ownTurns }, (_, i) => turnEvents(i + 1, 'd-')).flat(),
        ]
        const view = viewOf(ownEvents, 'dev')
        view.outbox = planCut(view, newId, maxEvents)
        // Another device that holds this device's first batch and wrote its own turns after it.
        const first = view.outbox[0]!
        const shared = ownEvents.slice(0, first.toSeq)
        const lastTurn = shared.filter((e) => e.type === 'turn/start').length
        const otherView = viewOf(
          [
            ...shared,
            ...Array.from({ length: otherTurns }, (_, i) => turnEvents(lastTurn + 1 + i, 'o-')).flat(),
          ],
          'other',
          first.toSeq,
        )
        const others = planCut(otherView, newId, maxEvents).map((o) => o.batch)
        const messages: unknown[] = []
        let own = 0
        let other = 0
        for (const step of script) {
          if (step === 'own' && own < view.outbox.length) messages.push(view.outbox[own++]!.batch)
          else if (step === 'other' && other < others.length && own > 0) messages.push(others[other++])
          else if (step === 'garbage') messages.push({ garbage: messages.length })
          else if (step === 'repeat' && messages.length > 0) messages.push(messages.at(-1))
        }
        const fast = planned(view, messages)
        const full = planned(view, messages.map(reordered))
        expect(fast).toEqual(full)
      },
    ),
    { numRuns: 300 },
  )
})
