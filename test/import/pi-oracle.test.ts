/**
 * Differential test of the Pi adapter against the reference of Pi's context algorithm
 * (pi-oracle.ts) on generated session trees, with a fixed seed so every run checks the same
 * 600 files.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { assembleSessionDetail, parseTranscript, recordsToRows } from '../../src/import/index'
import { SessionMessage } from '../../src/schema/messages'
import { isOrderedRecord, type OrderedRecord, TranscriptRecord } from '../../src/schema/records'
import { piContext } from './pi-oracle'
import { buildPiFile, PI_TREE_RUNS, piScriptArb } from './pi-trees'

const RUNS = PI_TREE_RUNS.numRuns

function ordered(text: string): OrderedRecord[] {
  const { records } = parseTranscript(text)
  return records.filter(isOrderedRecord).sort((a, b) => a.order - b.order)
}

describe('Pi adapter against the reference context algorithm', () => {
  test(`shown records and the model's context each equal the reference, in order, on ${RUNS} generated trees`, () => {
    const seen = new Set<string>()
    fc.assert(
      fc.property(piScriptArb, (script) => {
        const built = buildPiFile(script)
        for (const f of built.features) seen.add(f)
        const context = piContext(built.text)
        const records = ordered(built.text)
        const visible = records.filter((r) => r.visibility === 'visible').map((r) => r.id)
        expect(visible).toEqual(context.filter((m) => !m.hidden).map((m) => m.key))
        // hidden: exactly the display:false custom messages, wherever they are
        const hidden = records.filter((r) => r.visibility === 'hidden').map((r) => r.id)
        expect(new Set(hidden)).toEqual(built.hidden)
        for (const m of context.filter((c) => c.hidden)) expect(built.hidden.has(m.key)).toBe(true)
        // what the model is given: every record in the context (shown or hidden) but the shell
        // commands kept out of it; those are shown like any other message of the path
        const modelContext = records
          .filter((r) => r.visibility !== 'inactive' && !(r.type === 'message' && r.excludedFromContext))
          .map((r) => r.id)
        expect(modelContext).toEqual(context.filter((m) => !m.excluded).map((m) => m.key))
        const excludedShown = records.filter(
          (r) => r.type === 'message' && r.excludedFromContext && r.visibility !== 'hidden',
        )
        expect(new Set(excludedShown.map((r) => r.id))).toEqual(built.excluded)
        for (const m of context.filter((c) => c.excluded)) {
          expect(records.find((r) => r.id === m.key)?.visibility).toBe('visible')
        }
        // the rest is superseded history
        const inContext = new Set(context.map((m) => m.key))
        for (const r of records) {
          if (!inContext.has(r.id) && !built.hidden.has(r.id)) expect(r.visibility).toBe('inactive')
        }
      }),
      PI_TREE_RUNS,
    )
    // the generator reached every case it is meant to cover
    for (const feature of [
      'branch',
      'branchSummary',
      'emptyBranchSummary',
      'durableLeaf',
      'nullLeaf',
      'legacyCompaction',
      'tailCompaction',
      'mixedCompactions',
      'orphan',
      'hiddenCustom',
      'excludedBash',
      'toolCall',
      'garbage',
    ]) {
      expect(seen, feature).toContain(feature)
    }
  })

  test('usage counts every call once: abandoned branches and summaries included, tail copies not', () => {
    fc.assert(
      fc.property(piScriptArb, (script) => {
        const built = buildPiFile(script)
        const { records } = parseTranscript(built.text)
        expect(recordsToRows(records).usage).toEqual(built.usage)
      }),
      PI_TREE_RUNS,
    )
  })

  test('a tool result links to the nearest call with its id among its ancestors, and only there', () => {
    fc.assert(
      fc.property(piScriptArb, (script) => {
        const { text } = buildPiFile(script)
        const { records } = parseTranscript(text)
        // the tree, read straight from the file; a compaction's retained-tail copies sit between
        // it and its children (what follows the compaction answers the copies the model sees)
        const parent = new Map<string, string | null>()
        const lastTail = new Map<string, string>()
        for (const line of text.split('\n')) {
          try {
            const e = JSON.parse(line)
            if (e.type === 'leaf' || e.type === 'session') continue
            parent.set(e.id, e.parentId)
            if (Array.isArray(e.retainedTail)) {
              e.retainedTail.forEach((_: unknown, i: number) => {
                parent.set(`${e.id}#tail${i}`, i === 0 ? e.id : `${e.id}#tail${i - 1}`)
                lastTail.set(e.id, `${e.id}#tail${i}`)
              })
            }
          } catch {}
        }
        for (const [id, p] of parent) {
          if (p !== null && lastTail.has(p) && !id.startsWith(`${p}#`)) parent.set(id, lastTail.get(p)!)
        }
        const callsOf = new Map<string, { id: string; callId: string }[]>()
        for (const r of records) {
          if (r.type === 'tool_call') callsOf.set(r.messageId, [...(callsOf.get(r.messageId) ?? []), r])
        }
        for (const r of records) {
          if (r.type !== 'tool_result') continue
          let expected: string | undefined
          for (let at = parent.get(r.id); at && expected === undefined; at = parent.get(at) ?? undefined) {
            expected = callsOf.get(at)?.findLast((c) => c.callId === r.callId)?.id
          }
          expect(r.callRecordId).toBe(expected)
        }
      }),
      PI_TREE_RUNS,
    )
  })

  test('records to rows to a detail equals records to a detail, with and without inactive rows', () => {
    fc.assert(
      fc.property(piScriptArb, (script) => {
        const { records } = parseTranscript(buildPiFile(script).text)
        for (const record of records) TranscriptRecord.parse(record) // the adapter writes only valid records
        const { rows } = recordsToRows(records)
        for (const row of rows) SessionMessage.parse(row)
        for (const includeInactive of [false, true]) {
          expect(assembleSessionDetail(rows, { includeInactive })).toEqual(
            assembleSessionDetail(records, { includeInactive }),
          )
        }
        const detail = assembleSessionDetail(records, { includeInactive: true })
        expect(detail.messages.every((m) => m.visibility !== 'hidden')).toBe(true)
        const turns = detail.outline.map((e) => e.turn)
        expect(turns).toEqual([...turns].sort((a, b) => a - b))
        expect(new Set(turns).size).toBe(turns.length)
      }),
      PI_TREE_RUNS,
    )
  })
})
