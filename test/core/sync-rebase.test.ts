import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { foldCheckedEvents, initFolds } from '../../src/core/folds'
import { childCount, headOf, nodesOf } from '../../src/core/history-tree'
import { rowIdsCreated } from '../../src/core/ids'
import {
  batchKey,
  type CanonicalState,
  canonicalOf,
  foldBatch,
  foldMessage,
  initCanonical,
  replayStream,
} from '../../src/core/sync-rebase'
import type { StoredEvent } from '../../src/schema/events'
import type { SyncBatch, SyncEvent } from '../../src/schema/sync'

const SID = 's1'

/** A device of the model: what it folded from the stream, and its own batches not yet folded there. */
interface Device {
  name: string
  canon: CanonicalState
  log: StoredEvent[]
  cursor: number
  outbox: { batch: SyncBatch; pushed: boolean }[]
  local: CanonicalState
  made: number
}

const newDevice = (name: string): Device => ({
  name,
  canon: initCanonical(SID),
  log: [],
  cursor: 0,
  outbox: [],
  local: initCanonical(SID),
  made: 0,
})

/** One turn a device writes on its own log, after an optional head move to `rewindTo`. */
function writeBatch(d: Device, at: number, rewindTo: number | undefined): SyncBatch {
  const head = headOf(d.local.tree)
  const lastTurn = d.local.folds.transcript.lastTurn
  const n = ++d.made
  const id = `${d.name}-${n}`
  const events: SyncEvent[] = []
  if (d.local.seq === 0) events.push({ type: 'session/created', data: { title: 't' }, at })
  if (rewindTo !== undefined && d.local.tree.size > 0) {
    const nodes = nodesOf(d.local.tree)
    const target = nodes[rewindTo % nodes.length]!.id
    const children = childCount(d.local.tree, target)
    events.push({
      type: 'history/head',
      data: { head: target, cause: 'rewind', ...(children > 0 ? { children } : {}) },
      at,
    })
  }
  const turn = lastTurn + 1
  events.push(
    { type: 'turn/start', data: { turn }, at },
    {
      type: 'user/message',
      data: { inputId: `u-${id}`, text: `hi ${id}`, delivery: 'queue', source: 'user' },
      at,
    },
    { type: 'step/start', data: { turn, step: 1 }, at },
    { type: 'assistant/start', data: { messageId: `a-${id}`, turn, step: 1 }, at },
    { type: 'assistant/delta', data: { messageId: `a-${id}`, text: `answer ${id}` }, at },
    { type: 'assistant/end', data: { messageId: `a-${id}`, finish: 'stop' }, at },
    { type: 'step/end', data: { turn, step: 1 }, at },
    { type: 'turn/end', data: { turn, reason: 'completed' }, at },
  )
  const batch: SyncBatch = {
    v: 1,
    kind: 'batch',
    device: d.name,
    batchId: `b${n}`,
    parentHead: head,
    baseTurn: lastTurn,
    events,
  }
  const folded = foldBatch(d.local, batch)
  expect(folded.outcome).toMatchObject({ kind: 'appended', rebased: false })
  d.local = folded.state
  d.outbox.push({ batch, pushed: false })
  return batch
}

function pull(d: Device, stream: readonly unknown[]): void {
  for (; d.cursor < stream.length; d.cursor++) {
    const folded = foldMessage(d.canon, stream[d.cursor])
    expect(folded.outcome.kind).not.toBe('skipped')
    d.canon = folded.state
    if (folded.outcome.kind === 'appended') d.log.push(...folded.outcome.events)
  }
  d.outbox = d.outbox.filter((o) => !d.canon.seen.has(batchKey(o.batch)))
  // The device's own log: the canonical one, then its batches not yet folded there, rebased.
  let local = d.canon
  for (const o of d.outbox) {
    const folded = foldBatch(local, o.batch)
    expect(folded.outcome.kind).toBe('appended')
    local = folded.state
  }
  d.local = local
}

function push(d: Device, stream: unknown[], again: boolean): void {
  const next = d.outbox.find((o) => !o.pushed)
  if (next) {
    next.pushed = true
    stream.push(next.batch)
  } else if (again && d.outbox[0]) stream.push(d.outbox[0].batch) // a restarted engine sends it again
}

const Step = fc.oneof(
  fc.record({
    kind: fc.constant('write' as const),
    device: fc.nat(2),
    rewind: fc.option(fc.nat(40), { nil: undefined }),
  }),
  fc.record({ kind: fc.constant('push' as const), device: fc.nat(2), again: fc.boolean() }),
  fc.record({ kind: fc.constant('pull' as const), device: fc.nat(2) }),
)

describe('the canonical log of a synced session', () => {
  it('converges: every device folds the same log, valid, with every batch once and turn numbers growing', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 3 }), fc.array(Step, { maxLength: 40 }), (count, steps) => {
        const devices = Array.from({ length: count }, (_, i) => newDevice(`d${i}`))
        const stream: unknown[] = []
        writeBatch(devices[0]!, 0, undefined)
        push(devices[0]!, stream, false)
        for (const d of devices) pull(d, stream)
        steps.forEach((step, i) => {
          const d = devices[step.device % count]!
          if (step.kind === 'write') writeBatch(d, i + 1, step.rewind)
          else if (step.kind === 'push') push(d, stream, step.again)
          else pull(d, stream)
        })
        for (const d of devices) while (d.outbox.some((o) => !o.pushed)) push(d, stream, false)
        for (const d of devices) pull(d, stream)

        const reference = replayStream(SID, stream)
        for (const d of devices) {
          // Folded piecewise as it pulled = one replay of the whole stream; its own log is that log.
          expect(d.log).toEqual(reference)
          expect(d.outbox).toEqual([])
          expect(d.local.seq).toBe(reference.length)
          expect(headOf(d.local.tree)).toBe(headOf(devices[0]!.canon.tree))
        }
        // A valid log: the grammar holds from its first event.
        expect(() => foldCheckedEvents(initFolds(), reference)).not.toThrow()
        expect(reference.map((e) => e.seq)).toEqual(reference.map((_, i) => i + 1))
        // Every written row is there exactly once.
        const made = devices.reduce((n, d) => n + d.made, 0)
        const ids = rowIdsCreated(reference)
        expect(ids.length).toBe(made * 2)
        expect(new Set(ids).size).toBe(ids.length)
        const turns = reference.flatMap((e) => (e.type === 'turn/start' ? [e.data.turn] : []))
        expect(turns).toEqual(turns.map((_, i) => i + 1))
        // The later batch in stream order holds the head: the last answer written there.
        const keys = new Set<string>()
        let last = stream[0] as SyncBatch
        for (const b of stream as SyncBatch[]) {
          if (keys.has(batchKey(b))) continue
          keys.add(batchKey(b))
          last = b
        }
        expect(headOf(devices[0]!.canon.tree)).toBe(`a-${last.device}-${last.batchId.slice(1)}`)
      }),
      { numRuns: 150 },
    )
  })

  it('rebases a batch written on an older head into a sibling branch with the next turn number', () => {
    const a = newDevice('a')
    const b = newDevice('b')
    const stream: unknown[] = []
    writeBatch(a, 1, undefined)
    push(a, stream, false)
    pull(a, stream)
    pull(b, stream)
    writeBatch(a, 2, undefined)
    writeBatch(b, 3, undefined)
    push(a, stream, false)
    push(b, stream, false)
    pull(a, stream)
    const log = a.log
    const switchAt = log.findIndex((e) => e.type === 'history/head')
    expect(log[switchAt]).toMatchObject({
      type: 'history/head',
      data: { head: 'a-a-1', cause: 'switch', children: 1 },
    })
    expect(log.slice(switchAt + 1).find((e) => e.type === 'turn/start')).toMatchObject({ data: { turn: 3 } })
    // b's answer is the head; a's second turn is its sibling branch, still in the log.
    expect(headOf(a.canon.tree)).toBe('a-b-1')
    expect(rowIdsCreated(log)).toContain('a-a-2')
  })

  it('skips what is not a batch, an unknown event type and a batch naming rows it lacks, the same way each time', () => {
    const a = newDevice('a')
    const first = writeBatch(a, 1, undefined)
    const garbage = [
      { hello: 'world' },
      [1, 2, 3],
      'text',
      { ...first, batchId: 'x1', events: [{ type: 'tool/teleport', data: {}, at: 1 }] },
      { ...first, batchId: 'x2', parentHead: 'nowhere', events: first.events.slice(1) },
      // A second session/created and a batch that leaves its turn open.
      { ...first, batchId: 'x3', parentHead: 'a-a-1', baseTurn: 1 },
      { ...first, batchId: 'x4', parentHead: 'a-a-1', baseTurn: 1, events: first.events.slice(1, 3) },
    ]
    let state = foldBatch(initCanonical(SID), first).state
    const after = state
    for (const message of garbage) {
      const folded = foldMessage(state, message)
      expect(folded.outcome.kind).toBe('skipped')
      expect(folded.state).toBe(after)
      state = folded.state
    }
    expect(foldMessage(state, first).outcome.kind).toBe('duplicate')
    expect(replayStream(SID, [first, ...garbage])).toEqual(replayStream(SID, [first]))
  })

  it('canonicalOf a log equals the state the fold left', () => {
    const a = newDevice('a')
    writeBatch(a, 1, undefined)
    writeBatch(a, 2, 0)
    const stream = a.outbox.map((o) => o.batch)
    const log = replayStream(SID, stream)
    const rebuilt = canonicalOf(SID, log, a.local.seen)
    expect(rebuilt.seq).toBe(a.local.seq)
    expect(headOf(rebuilt.tree)).toBe(headOf(a.local.tree))
    expect(rebuilt.folds.transcript.lastTurn).toBe(a.local.folds.transcript.lastTurn)
  })
})
