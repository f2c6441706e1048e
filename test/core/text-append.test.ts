/**
 * Streamed text as appends (core/text-append) on generated logs: every version of every row the
 * transcript fold produces, sent as an append against the version before it, rebuilds exactly
 * that version; a receiver holding any later version keeps it; and an append is only ever made
 * where nothing but the text at the row's end changed.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { applyTextAppend, textAppendOf } from '../../src/core/text-append'
import { applyTranscript, initTranscript, type TranscriptState } from '../../src/core/transcript'
import type { SessionMessage } from '../../src/schema/messages'
import { arbSessionLog, stamp } from '../support/arb-log'

/** Every version of every row, in the order the fold produced them (one fold step per event). */
function versionsOf(log: ReturnType<typeof stamp>): Map<string, SessionMessage[]> {
  let state: TranscriptState = initTranscript()
  const versions = new Map<string, SessionMessage[]>()
  for (const event of log) {
    const step = applyTranscript(state, event)
    state = step.state
    for (const row of step.changed) {
      const list = versions.get(row.id) ?? []
      list.push(row)
      versions.set(row.id, list)
    }
  }
  return versions
}

const textOf = (row: SessionMessage, part: number) => {
  const p = row.parts[part]
  return p && 'text' in p ? p.text : undefined
}

describe('text appends', () => {
  test('an append onto the version before rebuilds the next version exactly, and only text at the end changed', () => {
    let made = 0
    fc.assert(
      fc.property(arbSessionLog({ maxChunks: 8 }), (log) => {
        for (const list of versionsOf(stamp(log, 's')).values()) {
          for (let i = 1; i < list.length; i++) {
            const before = list[i - 1]!
            const after = list[i]!
            const append = textAppendOf(before, after)
            if (append === undefined) continue
            made++
            expect(after.status).toBe('streaming')
            expect(applyTextAppend(before, append)).toEqual(after)
            // What was there stays: the append starts where the held text ended.
            expect(textOf(after, append.part)?.slice(0, append.from)).toBe(textOf(before, append.part) ?? '')
          }
        }
      }),
      { seed: 20261201, numRuns: 300 },
    )
    // Deltas onto a streaming row are the common case: most of them must become appends.
    expect(made).toBeGreaterThan(300)
  })

  test('a receiver holding a later version keeps it; one holding a version in between catches up', () => {
    fc.assert(
      fc.property(arbSessionLog({ maxChunks: 8 }), (log) => {
        for (const list of versionsOf(stamp(log, 's')).values()) {
          for (let i = 0; i < list.length; i++) {
            for (let j = i + 1; j < list.length; j++) {
              const append = textAppendOf(list[i]!, list[j]!)
              if (append === undefined) continue
              // Held: every version between, and every later one.
              for (let k = i; k < list.length; k++) {
                const applied = applyTextAppend(list[k]!, append)
                if (k >= j) expect(applied).toBe(list[k])
                else if (applied !== undefined) expect(applied.parts).toEqual(list[j]!.parts)
              }
            }
          }
        }
      }),
      { seed: 20261201, numRuns: 150 },
    )
  })

  test('no append is made from another row, a settled row, or a changed field', () => {
    const row: SessionMessage = {
      id: 'm',
      sessionId: 's',
      seq: 3,
      role: 'assistant',
      turn: 1,
      step: 1,
      parts: [{ type: 'text', text: 'hel' }],
      status: 'streaming',
      visibility: 'visible',
      createdAt: 1,
      updatedAt: 1,
    }
    const grown: SessionMessage = { ...row, parts: [{ type: 'text', text: 'hello' }], updatedAt: 2 }
    expect(textAppendOf(row, grown)).toEqual({
      id: 'm',
      seq: 3,
      part: 0,
      type: 'text',
      from: 3,
      text: 'lo',
      updatedAt: 2,
    })
    expect(textAppendOf(undefined, grown)).toBeUndefined()
    expect(textAppendOf({ ...row, id: 'other' }, grown)).toBeUndefined()
    expect(textAppendOf(row, { ...grown, status: 'complete' })).toBeUndefined()
    expect(textAppendOf(row, { ...grown, usage: { input: 1, output: 1 } })).toBeUndefined()
    expect(textAppendOf(row, { ...grown, parts: [{ type: 'text', text: 'jello' }] })).toBeUndefined()
    expect(textAppendOf(row, { ...grown, parts: [{ type: 'reasoning', text: 'hello' }] })).toBeUndefined()
    // A held version the append does not continue: the receiver must read the row again.
    const append = textAppendOf(row, grown)!
    expect(applyTextAppend({ ...row, parts: [{ type: 'text', text: 'h' }] }, append)).toBeUndefined()
    expect(applyTextAppend({ ...row, parts: [{ type: 'text', text: 'help' }] }, append)).toBeUndefined()
  })
})
