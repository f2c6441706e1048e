import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { ToolSpec } from '../../src/engine/provider'
import { createScriptedProvider, planScriptedStep } from '../../src/engine/providers/scripted'
import { isSessionlineError } from '../../src/schema/errors'
import { collect, request, row, textOf } from './fixtures'

const TOOLS: ToolSpec[] = [{ name: 'clock' }, { name: 'calculator' }, { name: 'search_notes' }]
const settings = (seed: number, toolRate = 0.3) => ({ seed, wordDelayMs: 0, toolRate })

describe('scripted provider', () => {
  test('same seed and transcript give the same stream; the stream is its plan', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.string({ minLength: 1, maxLength: 80 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 5 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (seed, prompt, turn, step, toolRate) => {
          const req = request({ turn, step, context: [row('user', prompt)], tools: TOOLS })
          const provider = createScriptedProvider({ kind: 'scripted', seed, wordDelayMs: 0, toolRate })
          const first = await collect(provider(req))
          expect(await collect(provider(req))).toEqual(first)
          expect(first).toEqual(planScriptedStep(req, settings(seed, toolRate)))
        },
      ),
      { seed: 4242, numRuns: 150 },
    )
  })

  test('every step ends with exactly one finish; tool calls only in a tool-calls step', () => {
    fc.assert(
      fc.property(fc.integer(), fc.double({ min: 0, max: 1, noNaN: true }), (seed, toolRate) => {
        const chunks = planScriptedStep(request({ tools: TOOLS }), settings(seed, toolRate))
        const finishes = chunks.filter((c) => c.type === 'finish')
        expect(finishes).toHaveLength(1)
        expect(chunks.at(-1)?.type).toBe('finish')
        const calls = chunks.filter((c) => c.type === 'tool-call')
        expect(finishes[0]).toMatchObject({ finish: calls.length > 0 ? 'tool-calls' : 'stop' })
        expect(new Set(calls.map((c) => c.type === 'tool-call' && c.name)).size).toBe(calls.length)
      }),
      { seed: 99, numRuns: 300 },
    )
  })

  test('toolRate bounds tool use: 0 never, 1 always (while there are tools), never after a tool result', () => {
    for (let seed = 0; seed < 60; seed++) {
      const withTools = request({ tools: TOOLS })
      expect(planScriptedStep(withTools, settings(seed, 0)).some((c) => c.type === 'tool-call')).toBe(false)
      expect(planScriptedStep(withTools, settings(seed, 1)).some((c) => c.type === 'tool-call')).toBe(true)
      expect(planScriptedStep(request(), settings(seed, 1)).some((c) => c.type === 'tool-call')).toBe(false)
      const afterTool = request({
        step: 2,
        tools: TOOLS,
        context: [
          row('user', 'what is 6 * 7'),
          row('assistant', [
            {
              type: 'tool',
              callId: 'c',
              name: 'calculator',
              input: {},
              output: { expression: '6 * 7', value: 42 },
              state: 'done',
            },
          ]),
        ],
      })
      const answer = planScriptedStep(afterTool, settings(seed, 1))
      expect(answer.some((c) => c.type === 'tool-call')).toBe(false)
      expect(textOf(answer)).toContain('6 * 7 = 42')
    }
  })

  test('different seeds give different answers, some of them multi-line', () => {
    const answers = new Set<string>()
    let multiLine = 0
    for (let seed = 0; seed < 40; seed++) {
      const text = textOf(planScriptedStep(request(), settings(seed, 0)))
      answers.add(text)
      if (text.includes('\n')) multiLine++
    }
    expect(answers.size).toBeGreaterThan(20)
    expect(multiLine).toBeGreaterThan(5)
  })

  test('usage counts the words it streamed', () => {
    const chunks = planScriptedStep(request(), settings(3, 0))
    const finish = chunks.at(-1)
    expect(finish).toMatchObject({ type: 'finish', usage: { output: chunks.length - 1 } })
  })

  test('stops promptly when its signal aborts mid-stream', async () => {
    const controller = new AbortController()
    // A delay far beyond the test timeout: only the abort can end this stream.
    const provider = createScriptedProvider({ kind: 'scripted', seed: 1, wordDelayMs: 600_000, toolRate: 0 })
    const iterator = provider(request({ signal: controller.signal }))[Symbol.asyncIterator]()
    const next = iterator.next()
    controller.abort()
    const error = await next.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isSessionlineError(error) && error.code).toBe('aborted')
  })

  test('refuses an aborted request before streaming anything', async () => {
    const controller = new AbortController()
    controller.abort()
    const provider = createScriptedProvider({ kind: 'scripted', wordDelayMs: 0 })
    await expect(collect(provider(request({ signal: controller.signal })))).rejects.toMatchObject({
      code: 'aborted',
    })
  })

  test('bad config is invalid_input', () => {
    const error = (() => {
      try {
        createScriptedProvider({ kind: 'scripted', toolRate: 2 })
      } catch (e) {
        return e
      }
    })()
    expect(isSessionlineError(error) && error.code).toBe('invalid_input')
    expect(String(error)).toMatch(/toolRate/)
  })
})
