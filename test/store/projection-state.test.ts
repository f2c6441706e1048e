import fc from 'fast-check'
import { expect, test } from 'vitest'
import { appendItem, emptyList, LIST_CHUNK, listItems, replaceLast } from '../../src/core/chunked-list'
import type { ProjectionRow } from '../../src/store/db'
import { CHUNK_SIZE, decodeStates, encodeState } from '../../src/store/projection-state'

type Step =
  | { kind: 'push'; n: number }
  | { kind: 'replaceLast' }
  | { kind: 'replaceAt'; at: number }
  | { kind: 'same' }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('push' as const), n: fc.integer({ min: 1, max: 300 }) }),
  fc.constant({ kind: 'replaceLast' as const }),
  fc.record({ kind: fc.constant('replaceAt' as const), at: fc.nat() }),
  fc.constant({ kind: 'same' as const }),
)

/** The table as bulkPut leaves it: rows by name, later writes replacing earlier ones. */
const store = () => {
  const rows = new Map<string, ProjectionRow>()
  return {
    put: (written: ProjectionRow[]) => {
      for (const row of written) rows.set(row.name, row)
    },
    // What a reader gets back: a structured copy, as IndexedDB returns.
    read: () => structuredClone([...rows.values()]),
  }
}

test('incremental chunked writes always decode to the current state', () => {
  fc.assert(
    fc.property(fc.array(step, { maxLength: 30 }), fc.boolean(), (steps, reloadEachTime) => {
      const table = store()
      let counter = 0
      let state = { entries: [] as { n: number }[], open: undefined as { n: number } | undefined }
      let stored: unknown
      table.put(encodeState('s', 'outline', 1, 0, state))
      stored = state
      for (const s of steps) {
        const entries = [...state.entries]
        if (s.kind === 'push') for (let i = 0; i < s.n; i++) entries.push({ n: counter++ })
        else if (s.kind === 'replaceLast' && entries.length > 0)
          entries[entries.length - 1] = { n: counter++ }
        else if (s.kind === 'replaceAt' && entries.length > 0)
          entries[s.at % entries.length] = { n: counter++ }
        state = s.kind === 'same' ? state : { entries, open: { n: counter } }
        const written = encodeState('s', 'outline', 1, 0, state, stored)
        table.put(written)
        const decoded = decodeStates(table.read()).get('outline')?.state
        expect(decoded).toEqual(state)
        // A reader's copy becomes the base of the next write (as after a cold open) or ours does.
        stored = reloadEachTime ? decoded : state
        if (reloadEachTime) state = decoded as typeof state
      }
    }),
    { seed: 99, numRuns: 200 },
  )
})

test('a change at the end of a long array rewrites one chunk, not the array', () => {
  const entries = Array.from({ length: CHUNK_SIZE * 4 + 10 }, (_, n) => ({ n }))
  const first = { entries, open: undefined }
  expect(encodeState('s', 'outline', 1, 5, first)).toHaveLength(1 + 5)
  const next = { entries: [...entries.slice(0, -1), { n: -1 }], open: undefined }
  const written = encodeState('s', 'outline', 1, 6, next, first)
  // Chunk names sort by index (schema version 6), so a reverse range read finds the last ones.
  expect(written.map((row) => row.name)).toEqual(['outline', 'outline#entries#00000004'])
  expect(encodeState('s', 'small', 1, 6, { list: [1, 2, 3] })).toEqual([
    { sessionId: 's', name: 'small', version: 1, throughSeq: 6, state: { list: [1, 2, 3] } },
  ])
})

test('a state whose previous copy was stored whole is written in full', () => {
  const entries = Array.from({ length: CHUNK_SIZE + 1 }, (_, n) => ({ n }))
  const unchunkedBefore = { entries: [...entries] } // e.g. written by an importer as one row
  const written = encodeState('s', 'outline', 1, 1, { entries: [...entries, { n: 99 }] }, unchunkedBefore)
  expect(written.map((row) => row.name)).toEqual([
    'outline',
    'outline#entries#00000000',
    'outline#entries#00000001',
  ])
})

test('a missing chunk is an error, not a silently shorter state', () => {
  const rows = encodeState('s', 'outline', 1, 1, {
    entries: Array.from({ length: CHUNK_SIZE * 2 }, (_, n) => n),
  })
  expect(() => decodeStates(rows.filter((row) => !row.name.endsWith('#00000001')))).toThrow(/missing/)
})

test('incremental writes of a chunked list decode to the current list and write only the chunks that changed', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(step, fc.constant({ kind: 'same' as const })), { maxLength: 30 }),
      fc.boolean(),
      (steps, reloadEachTime) => {
        const table = store()
        let counter = 0
        let state = { entries: emptyList<{ n: number }>(), open: undefined as { n: number } | undefined }
        table.put(encodeState('s', 'outline', 1, 0, state))
        let stored: unknown = state
        for (const s of steps) {
          let entries = state.entries
          if (s.kind === 'push') for (let i = 0; i < s.n; i++) entries = appendItem(entries, { n: counter++ })
          else if (s.kind === 'replaceLast') entries = replaceLast(entries, { n: counter++ })
          // A list changes only at its end; replaceAt stands for "nothing else moves" here.
          const next = s.kind === 'same' ? state : { entries, open: { n: counter } }
          const written = encodeState('s', 'outline', 1, 0, next, stored)
          // Chunks the previous list shares by identity are not written again.
          const before = (stored as typeof state).entries
          const expectedChunks = next.entries.chunks.filter((chunk, i) => before.chunks[i] !== chunk).length
          expect(written.filter((row) => row.name.includes('#'))).toHaveLength(expectedChunks)
          table.put(written)
          const decoded = decodeStates(table.read()).get('outline')?.state as typeof state
          expect(listItems(decoded.entries)).toEqual(listItems(next.entries))
          expect(decoded.entries.chunks.slice(0, -1).every((c) => c?.length === LIST_CHUNK)).toBe(true)
          state = reloadEachTime ? decoded : next
          stored = state
        }
      },
    ),
    { seed: 7, numRuns: 200 },
  )
})
