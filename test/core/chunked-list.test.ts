import fc from 'fast-check'
import { expect, test } from 'vitest'
import {
  appendItem,
  emptyList,
  isChunkedList,
  LIST_CHUNK,
  lastItem,
  listFrom,
  listItems,
  listOfChunks,
  replaceLast,
} from '../../src/core/chunked-list'

type Op = { kind: 'append'; count: number } | { kind: 'replaceLast' }
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 600 }) }),
  fc.constant({ kind: 'replaceLast' as const }),
)

test('a chunked list holds what a plain array given the same appends and replacements holds', () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 20 }), (ops) => {
      let list = emptyList<number>()
      const reference: number[] = []
      let counter = 0
      for (const o of ops) {
        const before = list
        if (o.kind === 'append') {
          for (let i = 0; i < o.count; i++) {
            list = appendItem(list, counter)
            reference.push(counter++)
          }
        } else {
          list = replaceLast(list, counter)
          if (reference.length > 0) reference[reference.length - 1] = counter
          counter++
        }
        expect(listItems(list)).toEqual(reference)
        expect(list.length).toBe(reference.length)
        expect(lastItem(list)).toBe(reference.at(-1))
        expect(listItems(listFrom(reference))).toEqual(reference)
        // Every chunk but the last is full, and a step shares every chunk but the last two.
        expect(list.chunks.slice(0, -1).every((chunk) => chunk?.length === LIST_CHUNK)).toBe(true)
        if (o.kind === 'replaceLast')
          expect(list.chunks.slice(0, -1).every((chunk, i) => chunk === before.chunks[i])).toBe(true)
        expect(listItems(structuredClone(list))).toEqual(reference)
        expect(isChunkedList(structuredClone(list))).toBe(true)
      }
    }),
    { seed: 11, numRuns: 100 },
  )
})

test('the items of one list are one array, so a view over them passes an identity gate only on change', () => {
  const list = listFrom([1, 2, 3])
  expect(listItems(list)).toBe(listItems(list))
  expect(listItems(replaceLast(list, 3))).not.toBe(listItems(list))
  expect(replaceLast(emptyList<number>(), 1).length).toBe(0)
})

test('a list rebuilt from stored chunks refuses a short chunk before the last', () => {
  expect(() => listOfChunks([[1], [2]])).toThrow(/chunk 0/)
  expect(listOfChunks([Array.from({ length: LIST_CHUNK }, (_, i) => i), [9]]).length).toBe(LIST_CHUNK + 1)
})
