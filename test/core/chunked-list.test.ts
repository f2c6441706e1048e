import fc from 'fast-check'
import { expect, test } from 'vitest'
import {
  appendItem,
  type ChunkedList,
  createTransientEdits,
  emptyList,
  isChunkedList,
  LIST_CHUNK,
  lastItem,
  listFrom,
  listItems,
  listOfChunks,
  persistentEdits,
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

type EditOp = Op | { kind: 'seal' }
const editOp: fc.Arbitrary<EditOp> = fc.oneof(op, fc.constant({ kind: 'seal' as const }))

/** Freezes a list, its chunk array and its chunks, so that patching any of them throws. */
function frozen<T>(list: ChunkedList<T>): ChunkedList<T> {
  for (const chunk of list.chunks) Object.freeze(chunk)
  Object.freeze(list.chunks)
  return Object.freeze(list)
}

/** The items read afresh from the chunks (`listItems` would answer from its cache). */
const itemsOf = <T>(list: ChunkedList<T>): T[] => list.chunks.flatMap((chunk) => [...chunk!])

test('transient edits hold what persistent edits hold, and never patch a list they were given or sealed', () => {
  fc.assert(
    fc.property(
      fc.nat({ max: 3 * LIST_CHUNK }).map((n) => Array.from({ length: n }, (_, i) => -1 - i)),
      fc.array(editOp, { maxLength: 20 }),
      (start, ops) => {
        const given = frozen(listFrom(start))
        const edits = createTransientEdits()
        let list: ChunkedList<number> = given
        let reference: ChunkedList<number> = given
        const sealed: Array<{ list: ChunkedList<number>; items: number[] }> = [
          { list: given, items: [...start] },
        ]
        let counter = 0
        for (const o of ops) {
          if (o.kind === 'seal') {
            edits.seal()
            sealed.push({ list: frozen(list), items: itemsOf(list) })
            continue
          }
          if (o.kind === 'append') {
            for (let i = 0; i < o.count; i++) {
              list = edits.appendItem(list, counter)
              reference = persistentEdits.appendItem(reference, counter++)
            }
          } else {
            list = edits.replaceLast(list, counter)
            reference = persistentEdits.replaceLast(reference, counter++)
          }
          expect(list.length).toBe(reference.length)
          expect(list.chunks.map((chunk) => chunk?.length)).toEqual(
            reference.chunks.map((chunk) => chunk?.length),
          )
          expect(listItems(list)).toEqual(listItems(reference))
          expect(lastItem(list)).toBe(lastItem(reference))
        }
        for (const { list, items } of sealed) expect(itemsOf(list)).toEqual(items)
      },
    ),
    { seed: 12, numRuns: 100 },
  )
})
