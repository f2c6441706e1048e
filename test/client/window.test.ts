import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  addRange,
  applyMessages,
  baseSeqOf,
  keepEqualRows,
  pageRange,
  type TranscriptWindow,
  windowFromTail,
} from '../../src/client/window'
import type { SessionMessage } from '../../src/schema/messages'
import type { MessagePage } from '../../src/schema/requests'

const filter = { includeInactive: false }

const row = (
  seq: number,
  text = `m${seq}`,
  visibility: SessionMessage['visibility'] = 'visible',
): SessionMessage => ({
  id: `id-${seq}`,
  sessionId: 's',
  seq,
  role: 'assistant',
  turn: 1,
  parts: [{ type: 'text', text }],
  status: 'complete',
  visibility,
  createdAt: 0,
  updatedAt: 0,
})

/** A transcript to page over: visible rows at `seqs`, read as the engine's `page` reads it. */
function transcript(seqs: readonly number[], headSeq: number) {
  const rows = seqs.map((seq) => row(seq))
  return (beforeSeq: number | undefined, limit: number): MessagePage => {
    const below = rows.filter((r) => beforeSeq === undefined || r.seq < beforeSeq)
    const messages = below.slice(Math.max(0, below.length - limit))
    return { messages, baseSeq: messages[0]?.seq ?? 0, headSeq, hasOlder: below.length > messages.length }
  }
}

const seqsOf = (w: TranscriptWindow) => w.rows.map((r) => r.message.seq)

describe('the transcript window', () => {
  test('overlapping older pages, merged in any order, keep it a contiguous suffix (fixed seed)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 120 }),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 60 }), fc.nat(5)), { maxLength: 12 }),
        (raw, requests) => {
          const seqs = [...raw].sort((a, b) => a - b)
          const page = transcript(seqs, 400)
          let w = windowFromTail(page(undefined, 10), filter)
          // Requests are made against the base at their time and come back in a shuffled order.
          const inFlight: { p: MessagePage; beforeSeq: number | undefined }[] = []
          for (const [limit, delay] of requests) {
            const beforeSeq = w.known[0]!.from > 1 ? w.known[0]!.from : undefined
            if (beforeSeq !== undefined) inFlight.push({ p: page(beforeSeq, limit), beforeSeq })
            if (delay % 2 === 0 && inFlight.length > 0) {
              const { p, beforeSeq: asked } = inFlight.splice(delay % inFlight.length, 1)[0]!
              w = addRange(w, p, pageRange(p, { beforeSeq: asked }), filter)
            }
          }
          for (const { p, beforeSeq } of inFlight.reverse())
            w = addRange(w, p, pageRange(p, { beforeSeq }), filter)
          const loaded = seqsOf(w)
          expect(loaded).toEqual(seqs.slice(seqs.length - loaded.length))
          expect(w.hasOlder).toBe(loaded.length < seqs.length)
        },
      ),
      { seed: 424242, numRuns: 400 },
    )
  })

  test('a change upserts by id, appends new rows in seq order and leaves rows below the window out', () => {
    const page = transcript([1, 2, 3, 4, 5, 6], 6)
    const w = windowFromTail(page(undefined, 3), filter)
    const { window: next, outside } = applyMessages(
      w,
      [row(2, 'old row changed'), row(5, 'edited'), row(8, 'new')],
      { headSeq: 8, durable: true },
      filter,
    )
    expect(seqsOf(next)).toEqual([4, 5, 6, 8])
    expect(next.rows[1]!.message.parts).toEqual([{ type: 'text', text: 'edited' }])
    expect(next.rows[0]).toBe(w.rows[0]) // untouched rows keep their identity
    expect(outside.map((m) => m.seq)).toEqual([2])
    expect(next.headSeq).toBe(8)
  })

  test('durable changes the rows already hold, and live previews older than them, are ignored', () => {
    const page = transcript([1, 2], 9)
    const w = windowFromTail(page(undefined, 5), filter)
    expect(applyMessages(w, [row(2, 'stale')], { headSeq: 9, durable: true }, filter).window).toBe(w)
    expect(applyMessages(w, [row(2, 'stale')], { headSeq: 8, durable: false }, filter).window).toBe(w)
    const live = applyMessages(w, [row(2, 'streaming…')], { headSeq: 9, durable: false }, filter).window
    expect(live.rows[1]!.message.parts).toEqual([{ type: 'text', text: 'streaming…' }])
    const durable = applyMessages(
      live,
      [row(2, 'streaming… done')],
      { headSeq: 10, durable: true },
      filter,
    ).window
    expect(durable.rows[1]!.message.parts).toEqual([{ type: 'text', text: 'streaming… done' }])
    // a preview from before that durable change no longer applies
    expect(applyMessages(durable, [row(2, 'streaming')], { headSeq: 9, durable: false }, filter).window).toBe(
      durable,
    )
  })

  test('a durable batch behind the preview does not take streamed words back', () => {
    const streaming = (text: string, status: SessionMessage['status'] = 'streaming'): SessionMessage => ({
      ...row(2, text),
      status,
    })
    const w = windowFromTail(transcript([1, 2], 5)(undefined, 5), filter)
    const live = applyMessages(
      w,
      [streaming('the quick brown fox')],
      { headSeq: 5, durable: false },
      filter,
    ).window
    const behind = applyMessages(live, [streaming('the quick')], { headSeq: 6, durable: true }, filter).window
    expect(behind.rows[1]!.message.parts).toEqual([{ type: 'text', text: 'the quick brown fox' }])
    expect(behind.syncedThrough).toBe(6)
    const diverged = applyMessages(
      behind,
      [streaming('a different text')],
      { headSeq: 7, durable: true },
      filter,
    )
    expect(diverged.window.rows[1]!.message.parts).toEqual([{ type: 'text', text: 'a different text' }])
    const ended = applyMessages(
      live,
      [streaming('the quick', 'complete')],
      { headSeq: 6, durable: true },
      filter,
    )
    expect(ended.window.rows[1]!.message.status).toBe('complete')
  })

  test('a row that becomes inactive leaves the window unless inactive rows were asked for', () => {
    const page = transcript([1, 2, 3], 3)
    const w = windowFromTail(page(undefined, 5), filter)
    const hidden = applyMessages(w, [row(2, 'm2', 'inactive')], { headSeq: 4, durable: true }, filter).window
    expect(seqsOf(hidden)).toEqual([1, 3])
    const kept = applyMessages(
      windowFromTail(page(undefined, 5), { includeInactive: true }),
      [row(2, 'm2', 'inactive')],
      { headSeq: 4, durable: true },
      { includeInactive: true },
    ).window
    expect(seqsOf(kept)).toEqual([1, 2, 3])
  })

  test('a page read before a change to one of its rows does not bring back the old text', () => {
    const page = transcript([1, 2, 3, 4], 4)
    const w = windowFromTail(page(undefined, 2), filter)
    const older = page(baseSeqOf(w), 2) // read at head 4
    const newer = new Map([['id-2', { message: row(2, 'changed at 5'), headSeq: 5 }]])
    const merged = addRange(w, older, pageRange(older, { beforeSeq: baseSeqOf(w) }), filter, newer)
    expect(merged.rows[1]!.message.parts).toEqual([{ type: 'text', text: 'changed at 5' }])
  })
})

describe('keepEqualRows', () => {
  const page = (messages: SessionMessage[], hasOlder = false): MessagePage => ({
    messages,
    baseSeq: messages[0]?.seq ?? 0,
    headSeq: 9,
    hasOlder,
  })

  test('a read that brings what is shown keeps every row object and the rows array', () => {
    const shown = windowFromTail(page([row(1), row(2), row(3)]), filter)
    const again = keepEqualRows(shown, windowFromTail(page([row(1), row(2), row(3)]), filter))
    expect(again.rows).toBe(shown.rows)
  })

  test('a row that changed, and a row added, are the new ones; the rest are kept', () => {
    const shown = windowFromTail(page([row(1), row(2)]), filter)
    const next = keepEqualRows(shown, windowFromTail(page([row(1), row(2, 'm2 and more'), row(3)]), filter))
    expect(next.rows).not.toBe(shown.rows)
    expect(next.rows[0]).toBe(shown.rows[0])
    expect(next.rows[1]).not.toBe(shown.rows[1])
    expect(next.rows.map((r) => r.message)).toEqual([row(1), row(2, 'm2 and more'), row(3)])
  })
})
