/**
 * Cutting a device's log into batches (src/sync/plan.ts): only settled runs leave, each batch
 * names where its device stood, and a long run is split between turns only.
 */
import { expect, test } from 'vitest'
import { batchKey, foldBatch, initCanonical } from '../../src/core/sync-rebase'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { SessionRow, SyncStateRow } from '../../src/store/db'
import type { SyncView } from '../../src/store/sync'
import { planCut } from '../../src/sync/plan'
import { turnEvents } from './turn-events'

function viewOf(events: SessionEvent[], canonicalSeq = 0): SyncView {
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
    deviceId: 'dev',
    epoch: 0,
    nextProducerSeq: 0,
    offset: '-1',
    canonicalSeq,
    seen: [],
    skipped: 0,
  }
  return { row, events: stored, state, outbox: [] }
}

let ids = 0
const newId = () => `b${++ids}`

test('a turn still open stays out; what is settled before it leaves in one batch', () => {
  const events: SessionEvent[] = [
    { type: 'session/created', data: { title: '' } },
    ...turnEvents(1),
    ...turnEvents(2).slice(0, 3),
  ]
  const [batch, ...more] = planCut(viewOf(events), newId)
  expect(more).toEqual([])
  expect(batch).toMatchObject({
    fromSeq: 1,
    toSeq: 8,
    batch: { parentHead: null, baseTurn: 0, device: 'dev' },
  })
  expect(batch!.batch.events.map((e) => e.type).at(-1)).toBe('turn/end')
})

test('a long run is split between turns; each batch follows the one before it, as written', () => {
  const events: SessionEvent[] = [{ type: 'session/created', data: { title: '' } }]
  for (let t = 1; t <= 6; t++) events.push(...turnEvents(t))
  const cut = planCut(viewOf(events), newId, 10)
  // 43 events, cut after a turn once 10 or more are in: 1+7+7 = 15, then 14, then 14.
  expect(cut.map((c) => [c.fromSeq, c.toSeq])).toEqual([
    [1, 15],
    [16, 29],
    [30, 43],
  ])
  expect(cut.map((c) => [c.batch.parentHead, c.batch.baseTurn])).toEqual([
    [null, 0],
    ['a2', 2],
    ['a4', 4],
  ])
  let state = initCanonical('s')
  for (const c of cut) {
    const folded = foldBatch(state, c.batch)
    expect(folded.outcome).toMatchObject({ kind: 'appended', rebased: false })
    state = folded.state
  }
  expect(state.seq).toBe(43)
  expect([...state.seen]).toEqual(cut.map((c) => batchKey(c.batch)))
})

test('nothing is cut from the canonical prefix or twice', () => {
  const events: SessionEvent[] = [{ type: 'session/created', data: { title: '' } }, ...turnEvents(1)]
  expect(planCut(viewOf(events, 8), newId)).toEqual([])
  const view = viewOf([...events, ...turnEvents(2)], 8)
  const [only] = planCut(view, newId)
  expect(only).toMatchObject({ fromSeq: 9, toSeq: 15, batch: { parentHead: 'a1', baseTurn: 1 } })
  expect(planCut({ ...view, outbox: [only!] }, newId)).toEqual([])
})
