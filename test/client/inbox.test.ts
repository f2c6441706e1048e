import fc from 'fast-check'
import { expect, test } from 'vitest'
import { Inbox } from '../../src/client/inbox'
import { SessionlineError } from '../../src/schema/errors'
import type { InputReceipt } from '../../src/schema/inputs'

const receipt = (id: string, seq: number, patch: Partial<InputReceipt> = {}): InputReceipt => ({
  id,
  sessionId: 's',
  seq,
  delivery: 'steer',
  text: `text of ${id}`,
  status: 'pending',
  admittedAt: 100,
  revision: 0,
  ...patch,
})

test('receipts delivered in any order settle on each input’s newest state (fixed seed)', () => {
  const history = fc.record({
    delivery: fc.constantFrom('steer' as const, 'queue' as const),
    edits: fc.nat(3),
    end: fc.constantFrom('pending' as const, 'promoted' as const, 'cancelled' as const),
  })
  fc.assert(
    fc.property(
      fc.array(history, { minLength: 1, maxLength: 6 }).chain((inputs) => {
        // every version of every receipt, as the admit answer, the feed and a pending() read may carry them
        const versions = inputs.flatMap((h, i) => {
          const id = `in-${i}`
          const base = receipt(id, i + 1, { delivery: h.delivery })
          const list = [base]
          for (let e = 1; e <= h.edits; e++)
            list.push({ ...base, text: `edit ${e}`, updatedAt: 100 + e, revision: e })
          const last = list.at(-1)!
          if (h.end !== 'pending')
            list.push({ ...last, status: h.end, updatedAt: 200, revision: last.revision + 1 })
          return list
        })
        return fc.tuple(fc.constant(inputs), fc.shuffledSubarray(versions, { minLength: versions.length }))
      }),
      ([inputs, delivered]) => {
        const inbox = new Inbox()
        for (const r of delivered) inbox.applyReceipt(r)
        const { steers, queued } = inbox.inputs()
        const expected = inputs.flatMap((h, i) =>
          h.end === 'pending'
            ? [
                {
                  id: `in-${i}`,
                  delivery: h.delivery,
                  text: h.edits > 0 ? `edit ${h.edits}` : `text of in-${i}`,
                },
              ]
            : [],
        )
        const shown = [...steers, ...queued].sort((a, b) => a.seq! - b.seq!)
        expect(shown.map(({ id, delivery, text }) => ({ id, delivery, text }))).toEqual(expected)
        expect(steers.every((input) => input.delivery === 'steer')).toBe(true)
        expect(queued.every((input) => input.delivery === 'queue')).toBe(true)
      },
    ),
    { seed: 31337, numRuns: 500 },
  )
})

test('a local input is sending, then failed, then pending once a receipt arrives; settled never comes back', () => {
  const inbox = new Inbox()
  inbox.sending('a', 'hello', 'steer')
  expect(inbox.inputs().steers).toMatchObject([{ id: 'a', state: 'sending' }])
  const error = new SessionlineError('timeout', 'slow')
  inbox.failed('a', error)
  expect(inbox.inputs().steers).toMatchObject([{ id: 'a', state: 'failed', error }])
  inbox.sending('a', 'hello', 'steer') // retry: same row
  inbox.applyReceipt(receipt('a', 1, { text: 'hello' }))
  expect(inbox.inputs().steers).toEqual([
    { id: 'a', text: 'hello', delivery: 'steer', state: 'pending', seq: 1 },
  ])
  inbox.settle('a')
  inbox.applyReceipt(receipt('a', 1, { text: 'hello' })) // a late answer
  inbox.sending('a', 'hello', 'steer') // even a retry of a promoted id shows nothing
  expect(inbox.inputs().steers).toEqual([])
})

test('optimistic edits and cancels hide behind tokens; only the latest one ends them', () => {
  const inbox = new Inbox()
  inbox.applyReceipt(receipt('a', 1))
  const first = inbox.beginEdit('a', 'one')
  const second = inbox.beginEdit('a', 'two')
  inbox.endEdit('a', first) // the older edit's answer must not undo the newer one
  expect(inbox.inputs().steers[0]!.text).toBe('two')
  inbox.endEdit('a', second)
  expect(inbox.inputs().steers[0]!.text).toBe('text of a')
  const cancel = inbox.beginCancel('a')
  expect(inbox.inputs().steers).toEqual([])
  inbox.endCancel('a', cancel)
  expect(inbox.inputs().steers).toHaveLength(1)
})

test('the same inputs come back as the same arrays and objects', () => {
  const inbox = new Inbox()
  inbox.applyReceipt(receipt('a', 1))
  inbox.applyReceipt(receipt('q', 2, { delivery: 'queue' }))
  const before = inbox.inputs()
  expect(inbox.applyReceipt(receipt('a', 1))).toBe(false)
  expect(inbox.inputs()).toBe(before)
  inbox.applyReceipt(receipt('q', 2, { delivery: 'queue', text: 'changed', updatedAt: 101 }))
  const after = inbox.inputs()
  expect(after.steers).toBe(before.steers)
  expect(after.queued).not.toBe(before.queued)
})

test('the highest revision of a receipt wins, whatever its stamp and arrival order', () => {
  // Two edits in one millisecond, and a peer whose clock runs behind: stamps cannot order these.
  const v1 = receipt('a', 1, { text: 'first edit', updatedAt: 500, revision: 1 })
  const v2 = receipt('a', 1, { text: 'second edit', updatedAt: 500, revision: 2 })
  const v3 = receipt('a', 1, { text: 'third edit', updatedAt: 400, revision: 3 })
  for (const order of [
    [v1, v2, v3],
    [v3, v2, v1],
    [v2, v3, v1],
    [v3, v1, v2],
  ]) {
    const inbox = new Inbox()
    for (const r of order) inbox.applyReceipt(r)
    expect(inbox.inputs().steers.map((i) => i.text)).toEqual(['third edit'])
  }
  const stale = new Inbox()
  stale.applyReceipt(v2)
  expect(stale.applyReceipt(v1)).toBe(false)
  expect(stale.inputs().steers.map((i) => i.text)).toEqual(['second edit'])
})

type EngineOp = { kind: 'admit' | 'edit' | 'cancel' | 'promote'; pick: number }

test('a full re-read replaces what it covers: after a gap with no feed, the tray ends where the engine does (fixed seed)', () => {
  const engineOp = fc.record({
    kind: fc.constantFrom<EngineOp['kind']>('admit', 'admit', 'edit', 'cancel', 'promote'),
    pick: fc.nat(8),
  })
  fc.assert(
    fc.property(
      fc.array(engineOp, { maxLength: 8 }),
      fc.array(engineOp, { maxLength: 8 }),
      fc.array(engineOp, { maxLength: 8 }),
      fc.nat(),
      fc.nat(),
      (heard, missed, meanwhile, readAt, answerAt) => {
        // The engine: every receipt's versions in commit order; each op yields one version.
        const stored = new Map<string, InputReceipt>()
        let seq = 0
        const run = (op: EngineOp): InputReceipt | undefined => {
          if (op.kind === 'admit') {
            seq++
            const r = receipt(`in-${seq}`, seq)
            stored.set(r.id, r)
            return r
          }
          const open = [...stored.values()].filter((r) => r.status === 'pending')
          const target = open[op.pick % Math.max(1, open.length)]
          if (!target) return undefined
          const next: InputReceipt =
            op.kind === 'edit'
              ? { ...target, text: `${target.text}+`, revision: target.revision + 1 }
              : {
                  ...target,
                  status: op.kind === 'cancel' ? 'cancelled' : 'promoted',
                  revision: target.revision + 1,
                }
          stored.set(next.id, next)
          return next
        }
        const pendingNow = () => [...stored.values()].filter((r) => r.status === 'pending')
        const inbox = new Inbox()
        // Connected: the view hears every receipt.
        for (const op of heard) {
          const r = run(op)
          if (r) inbox.applyReceipt(r)
        }
        // The worker died: these commits (another tab's) reach no feed.
        for (const op of missed) run(op)
        // A fresh worker: the view subscribes, marks what it knows and reads; commits made
        // meanwhile reach the feed (buffered until the read answers) and may predate the read.
        const mark = inbox.reportedIds()
        const fed: InputReceipt[] = []
        let read: InputReceipt[] = pendingNow()
        const at = readAt % (meanwhile.length + 1)
        meanwhile.forEach((op, i) => {
          if (i === at) read = pendingNow()
          const r = run(op)
          if (r) fed.push(r)
        })
        if (at === meanwhile.length) read = pendingNow()
        // The read's answer lands among admit answers that carry some of the fed receipts.
        const early = fed.slice(0, answerAt % (fed.length + 1))
        for (const r of early) inbox.applyReceipt(r)
        inbox.replacePending(read, mark)
        for (const r of fed) inbox.applyReceipt(r)
        const shown = [...inbox.inputs().steers, ...inbox.inputs().queued].map((i) => [i.id, i.text])
        const truth = pendingNow()
          .sort((a, b) => a.seq - b.seq)
          .map((r) => [r.id, r.text])
        expect(shown).toEqual(truth)
      },
    ),
    { seed: 2828, numRuns: 300 },
  )
})
