import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { createDemoTools, evaluateArithmetic } from '../../src/engine/tools'
import type { Json } from '../../src/schema/common'

const context = (signal = new AbortController().signal) => ({ signal, sessionId: 's', callId: 'c' })

describe('demo tools', () => {
  test('calculator agrees with integer arithmetic on generated expressions', () => {
    const leaf = fc.integer({ min: 0, max: 999 }).map((n) => ({ text: String(n), value: n }))
    const expr = fc.letrec<{ node: { text: string; value: number } }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.tuple(tie('node'), fc.constantFrom('+', '-', '*'), tie('node')).map(([a, op, b]) => ({
          text: `(${a.text} ${op} ${b.text})`,
          value: op === '+' ? a.value + b.value : op === '-' ? a.value - b.value : a.value * b.value,
        })),
      ),
    })).node
    fc.assert(
      fc.property(expr, ({ text, value }) => {
        expect(evaluateArithmetic(text)).toBe(value)
      }),
      { seed: 7, numRuns: 300 },
    )
  })

  test('calculator honours precedence, unary minus and rejects junk', async () => {
    const { calculator } = createDemoTools()
    expect(await calculator!.run({ expression: '6 * (3 + 4)' }, context())).toEqual({
      expression: '6 * (3 + 4)',
      value: 42,
    })
    expect(evaluateArithmetic('2 + 3 * -4 / 2')).toBe(-4)
    expect(() => evaluateArithmetic('1 / 0')).toThrow(/division by zero/)
    expect(() => evaluateArithmetic('alert(1)')).toThrow(/Cannot evaluate/)
    await expect(calculator!.run({ nope: 1 }, context())).rejects.toMatchObject({ code: 'invalid_input' })
  })

  test('clock reads the injected clock; search_notes is deterministic', async () => {
    const tools = createDemoTools({ now: () => Date.UTC(2026, 0, 2, 3, 4, 5) })
    expect(await tools.clock!.run({}, context())).toEqual({
      iso: '2026-01-02T03:04:05.000Z',
      epochMs: 1767323045000,
    })
    const found = await tools.search_notes!.run({ query: 'queue steer' }, context())
    expect(found).toEqual(await tools.search_notes!.run({ query: 'queue steer' }, context()))
    expect(JSON.stringify(found)).toMatch(/Queue/)
  })

  test('every tool honours abort', async () => {
    const tools = createDemoTools({ latencyMs: 600_000 })
    for (const [name, tool] of Object.entries(tools)) {
      const controller = new AbortController()
      const input: Json =
        name === 'calculator' ? { expression: '1+1' } : name === 'search_notes' ? { query: 'x' } : {}
      const running = tool.run(input, context(controller.signal))
      controller.abort()
      await expect(running).rejects.toMatchObject({ code: 'aborted' })
    }
  })
})
