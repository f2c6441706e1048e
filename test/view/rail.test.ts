import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { TurnOutlineEntry } from '../../src/schema/session'
import { createTurnRail, EMPTY_RAIL, type LoadedTurn, mergeTurnRailItems } from '../../src/view/rail'

const entry = (turn: number, seq: number, prompt = `p${turn}`, response = `r${turn}`): TurnOutlineEntry => ({
  turn,
  seq,
  prompt,
  response,
})
const loaded = (turn: number, key: string, seq: number, prompt = '', response = ''): LoadedTurn => ({
  turn,
  key,
  seq,
  prompt,
  response,
})

describe('mergeTurnRailItems', () => {
  test('an empty result is always the same frozen array', () => {
    const a = mergeTurnRailItems([], [])
    const b = mergeTurnRailItems([], [entry(0, 1), { turn: 2, seq: -1, prompt: '', response: '' }])
    expect(a).toBe(EMPTY_RAIL)
    expect(b).toBe(EMPTY_RAIL)
    expect(Object.isFrozen(a)).toBe(true)
  })

  test('outline entries become unloaded marks in ascending turn order', () => {
    const rail = mergeTurnRailItems([], [entry(3, 30), entry(1, 1), entry(2, 12)])
    expect(rail).toEqual([
      { kind: 'unloaded', turn: 1, seq: 1, prompt: 'p1', response: 'r1' },
      { kind: 'unloaded', turn: 2, seq: 12, prompt: 'p2', response: 'r2' },
      { kind: 'unloaded', turn: 3, seq: 30, prompt: 'p3', response: 'r3' },
    ])
  })

  test('a loaded turn wins over its mark and borrows the outline preview where its own is empty', () => {
    const outline = [entry(1, 1, 'first', 'one'), entry(2, 9, 'second', 'two')]
    const rail = mergeTurnRailItems([loaded(2, 'in-2', 10, '', 'fresh words')], outline)
    expect(rail).toEqual([
      { kind: 'unloaded', turn: 1, seq: 1, prompt: 'first', response: 'one' },
      // the anchor stays the turn's start, as it was before the rows loaded
      { kind: 'loaded', turn: 2, key: 'in-2', seq: 9, prompt: 'second', response: 'fresh words' },
    ])
  })

  test('a loaded turn the outline lacks still gets its mark, in turn order', () => {
    const rail = mergeTurnRailItems([loaded(2, 'k2', 5, 'hi', 'yo')], [entry(1, 1), entry(3, 8)])
    expect(rail.map((item) => [item.kind, item.turn])).toEqual([
      ['unloaded', 1],
      ['loaded', 2],
      ['unloaded', 3],
    ])
  })

  test('damaged outline entries are dropped', () => {
    const damaged = [
      entry(1, 1),
      { turn: 0, seq: 2, prompt: '', response: '' },
      { turn: 2.5, seq: 3, prompt: '', response: '' },
      { turn: 3, seq: 0, prompt: '', response: '' },
      { turn: 4, seq: 1.5, prompt: '', response: '' },
      { turn: 5, seq: 6, prompt: 7, response: '' },
      { turn: 6, seq: 7, prompt: '', response: null },
      null,
      'turn 7',
      { turn: Number.NaN, seq: 8, prompt: '', response: '' },
      entry(8, 20),
    ] as unknown as TurnOutlineEntry[]
    expect(mergeTurnRailItems([], damaged).map((item) => item.turn)).toEqual([1, 8])
  })

  test('is sorted by turn, covers every sound turn once, and loaded turns win (500 cases, fixed seed)', () => {
    const outlineArb = fc.array(
      fc.record({
        turn: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(0, -3, 1.5)),
        seq: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constant(0)),
        prompt: fc.string({ maxLength: 4 }),
        response: fc.string({ maxLength: 4 }),
      }),
      { maxLength: 30 },
    )
    const loadedArb = fc.uniqueArray(
      fc.record({
        turn: fc.integer({ min: 1, max: 40 }),
        key: fc.string({ minLength: 1, maxLength: 4 }),
        seq: fc.integer({ min: 1, max: 1000 }),
        prompt: fc.constantFrom('', 'own'),
        response: fc.constantFrom('', 'mine'),
      }),
      { selector: (t) => t.turn, maxLength: 8 },
    )
    fc.assert(
      fc.property(outlineArb, loadedArb, (outline, turns) => {
        const rail = mergeTurnRailItems(turns, outline)
        const turnsSeen = rail.map((item) => item.turn)
        expect(turnsSeen).toEqual([...new Set(turnsSeen)].sort((a, b) => a - b))
        const sound = outline.filter((e) => Number.isInteger(e.turn) && e.turn > 0 && e.seq > 0)
        for (const e of sound) expect(turnsSeen).toContain(e.turn)
        for (const t of turns) {
          const item = rail.find((i) => i.turn === t.turn)
          expect(item).toMatchObject({ kind: 'loaded', key: t.key })
          const mark = sound.find((e) => e.turn === t.turn)
          if (t.prompt !== '' || mark === undefined) expect(item?.prompt).toBe(t.prompt)
          else expect(item?.prompt).toBe(mark.prompt)
        }
        expect(rail.filter((i) => i.kind === 'loaded')).toHaveLength(turns.length)
      }),
      { seed: 20261130, numRuns: 500 },
    )
  })
})

describe('createTurnRail', () => {
  const outline = Array.from({ length: 10_000 }, (_, i) => entry(i + 1, i * 10 + 1))

  test('the same inputs give the same array, and a new outline with the same words keeps every mark', () => {
    const rail = createTurnRail()
    const turns = [loaded(10_000, 'tail', 99_992, 'p', 'streaming')]
    const first = rail(turns, outline)
    expect(rail(turns, outline)).toBe(first)
    const again = rail(
      turns,
      outline.map((e) => ({ ...e })),
    )
    expect(again).toBe(first)
  })

  test('a streamed delta replaces only the loaded item; unloaded marks keep their identity', () => {
    const rail = createTurnRail()
    const before = rail([loaded(10_000, 'tail', 99_992, 'p', 'one')], outline)
    const after = rail([loaded(10_000, 'tail', 99_992, 'p', 'one two')], outline)
    expect(after).not.toBe(before)
    expect(after).toHaveLength(10_000)
    expect(after[9_999]).toMatchObject({ kind: 'loaded', response: 'one two' })
    for (let i = 0; i < 9_999; i++) if (after[i] !== before[i]) throw new Error(`mark ${i} was rebuilt`)
  })

  test('patching the last rail in place agrees with mergeTurnRailItems: loaded turns kept as a prefix, the rest replaced (fixed seed)', () => {
    // The same outline array throughout and loaded turns that keep the objects of a prefix: the
    // rail takes its in-place path, and falls back to a whole merge when the suffix is not clean.
    const outline = Array.from({ length: 40 }, (_, i) => entry(i + 1, i * 3 + 1))
    const step = fc.record({
      keep: fc.nat(),
      turns: fc.array(
        fc.record({
          turn: fc.integer({ min: 1, max: 42 }),
          key: fc.constantFrom('a', 'b'),
          prompt: fc.constantFrom('', 'x'),
          response: fc.constantFrom('', 'y', 'yz'),
        }),
        { maxLength: 4 },
      ),
    })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 15 }), (steps) => {
        const rail = createTurnRail()
        let current: LoadedTurn[] = []
        let before = rail(current, outline)
        for (const { keep, turns } of steps) {
          const kept = current.slice(0, keep % (current.length + 1))
          const lastTurn = kept.at(-1)?.turn ?? 0
          // Mostly ascending after the kept prefix (the streaming case); sometimes not.
          const added = turns.map((t, i) =>
            loaded(t.turn % 5 === 0 ? t.turn : lastTurn + i + 1, t.key, 1, t.prompt, t.response),
          )
          const next = [...kept, ...added]
          const after = rail(next, outline)
          expect(after).toEqual(mergeTurnRailItems(next, outline))
          // Marks no loaded turn covers, before and after, keep their identity.
          const covered = new Set([...current, ...next].map((t) => t.turn))
          after.forEach((item, i) => {
            if (item.kind === 'unloaded' && !covered.has(item.turn) && before[i]?.turn === item.turn)
              expect(item).toBe(before[i])
          })
          current = next
          before = after
        }
      }),
      { seed: 9, numRuns: 300 },
    )
  })

  test('agrees with mergeTurnRailItems over a sequence of changes (fixed seed)', () => {
    const small = Array.from({ length: 30 }, (_, i) => entry(i + 1, i * 3 + 1))
    const step = fc.record({
      cut: fc.integer({ min: 0, max: 30 }),
      turns: fc.uniqueArray(
        fc.record({
          turn: fc.integer({ min: 1, max: 32 }),
          key: fc.constantFrom('a', 'b'),
          seq: fc.integer({ min: 1, max: 100 }),
          prompt: fc.constantFrom('', 'x'),
          response: fc.constantFrom('', 'y', 'yz'),
        }),
        { selector: (t) => t.turn, maxLength: 5 },
      ),
    })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        const rail = createTurnRail()
        for (const { cut, turns } of steps) {
          const o = small.slice(0, cut).map((e) => ({ ...e }))
          expect(rail(turns, o)).toEqual(mergeTurnRailItems(turns, o))
        }
      }),
      { seed: 7, numRuns: 200 },
    )
  })
})
