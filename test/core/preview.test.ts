import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  clampPrompt,
  clampResponse,
  collapseWhitespace,
  ELLIPSIS,
  PREVIEW_LIMITS,
} from '../../src/core/preview'

const SEED = 4_242
/** No lone surrogate (String#isWellFormed, which our lib target does not declare). */
const wellFormed = (text: string) =>
  !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)
const { promptChars, responseChars, responseLines, scanChars } = PREVIEW_LIMITS

const arbText = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc
    .array(
      fc.oneof(fc.lorem({ maxCount: 3 }), fc.constantFrom(' ', '\n', '\n\n\n', '\t', '\r\n', '\u2028', '😀')),
      {
        maxLength: 60,
      },
    )
    .map((parts) => parts.join('')),
)

describe('collapseWhitespace', () => {
  test('turns every whitespace run into one space and trims', () => {
    expect(collapseWhitespace('  a \n\n b\t\tc\u00a0 ')).toBe('a b c')
    expect(collapseWhitespace(' \n ')).toBe('')
  })
})

describe('clampPrompt', () => {
  test('keeps a short prompt as one collapsed line', () => {
    expect(clampPrompt('  Fix the\n  failing   test  ')).toBe('Fix the failing test')
  })

  test('fits exactly 50 characters without an ellipsis', () => {
    const fifty = 'x'.repeat(50)
    expect(clampPrompt(fifty)).toBe(fifty)
    expect(clampPrompt(`${fifty}y`)).toBe(`${'x'.repeat(49)}${ELLIPSIS}`)
  })

  test('puts the ellipsis inside the budget and never after a space', () => {
    expect(clampPrompt(`${'word '.repeat(9)}and more words`)).toBe(`${'word '.repeat(9)}and${ELLIPSIS}`)
    expect(clampPrompt(`${'a'.repeat(48)} bbbb`)).toBe(`${'a'.repeat(48)}${ELLIPSIS}`)
  })

  test('never splits a surrogate pair', () => {
    const out = clampPrompt(`${'a'.repeat(48)}😀😀`)
    expect(out).toBe(`${'a'.repeat(48)}${ELLIPSIS}`)
    expect(wellFormed(out)).toBe(true)
  })

  test('holds for any text: one line, within budget, lossless when it fits', () => {
    fc.assert(
      fc.property(arbText, (text) => {
        const out = clampPrompt(text)
        expect(out.length).toBeLessThanOrEqual(promptChars)
        expect(out).not.toMatch(/[\n\r\u2028\u2029]/)
        if (wellFormed(text)) expect(wellFormed(out)).toBe(true)
        const collapsed = collapseWhitespace(text)
        if (collapsed.length <= promptChars) expect(out).toBe(collapsed)
        else expect(out.endsWith(ELLIPSIS)).toBe(true)
      }),
      { seed: SEED, numRuns: 1000 },
    )
  })
})

describe('clampResponse', () => {
  test('drops blank lines and collapses whitespace within lines', () => {
    expect(clampResponse('  first   line \n\n   \n second\tline\r\nthird')).toBe(
      'first line\nsecond line\nthird',
    )
  })

  test('keeps three lines and marks the rest with an ellipsis', () => {
    expect(clampResponse('a\n\n\nb\nc\nd')).toBe(`a\nb\nc${ELLIPSIS}`)
    expect(clampResponse('a\nb\nc\n\n  \n')).toBe('a\nb\nc')
  })

  test('keeps 120 characters, newlines and ellipsis included', () => {
    const line = 'y'.repeat(50)
    expect(clampResponse(`${line}\n${line}`)).toBe(`${line}\n${line}`)
    const out = clampResponse(`${line}\n${line}\n${line}`)
    expect(out).toHaveLength(responseChars)
    expect(out).toBe(`${line}\n${line}\n${'y'.repeat(17)}${ELLIPSIS}`)
  })

  test('holds for any text: at most 3 non-blank collapsed lines, within budget, lossless when it fits', () => {
    fc.assert(
      fc.property(arbText, (text) => {
        const out = clampResponse(text)
        expect(out.length).toBeLessThanOrEqual(responseChars)
        const lines = out === '' ? [] : out.split('\n')
        expect(lines.length).toBeLessThanOrEqual(responseLines)
        for (const line of lines) expect(line).toBe(collapseWhitespace(line))
        for (const line of lines) expect(line).not.toBe('')
        if (wellFormed(text)) expect(wellFormed(out)).toBe(true)
        const whole = text
          .split(/\r\n?|\n|\u2028|\u2029/)
          .map(collapseWhitespace)
          .filter((l) => l !== '')
        const exact = whole.join('\n')
        if (whole.length <= responseLines && exact.length <= responseChars) expect(out).toBe(exact)
        else expect(out.endsWith(ELLIPSIS)).toBe(true)
      }),
      { seed: SEED + 1, numRuns: 1000 },
    )
  })
})

/** The clamps as first written: every line collapsed whole (the reference the bounded ones must equal). */
const naive = {
  prompt(text: string): string {
    const line = collapseWhitespace(text.slice(0, scanChars))
    const clipped = text.length > scanChars || line.length > promptChars
    return clipped ? `${cutBefore(line, promptChars - 1).trimEnd()}${ELLIPSIS}` : line
  },
  response(text: string): string {
    const lines = text
      .slice(0, scanChars)
      .split(/\r\n?|\n|\u2028|\u2029/)
      .map(collapseWhitespace)
      .filter((l) => l !== '')
    const joined = lines.slice(0, responseLines).join('\n')
    const clipped = text.length > scanChars || lines.length > responseLines || joined.length > responseChars
    return clipped ? `${cutBefore(joined, responseChars - 1).trimEnd()}${ELLIPSIS}` : joined
  },
}

/** The first `length` code units, one fewer when that would split a surrogate pair. */
function cutBefore(text: string, length: number): string {
  if (text.length <= length) return text
  const last = text.charCodeAt(length - 1)
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length)
}

describe('the clamps read only what a preview needs', () => {
  // Long lines with whitespace runs anywhere, those across the cuts included (64, 128, 256…).
  const arbLongLines = fc
    .array(
      fc.oneof(
        fc.lorem({ maxCount: 40 }),
        fc.string({ unit: 'grapheme', maxLength: 300 }),
        fc.constantFrom(' ', '   ', '\t \t', '\n', '\n\n', '\r\n', '\u2029', '😀'),
        fc.nat(600).map((n) => ' '.repeat(n)),
        fc.nat(600).map((n) => 'x'.repeat(n)),
      ),
      { maxLength: 40 },
    )
    .map((parts) => parts.join(''))

  // Lines that fill the budget to within a few characters, then more lines (or none).
  const arbNearBudget = fc
    .tuple(fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 2 }), fc.integer({ min: -3, max: 3 }))
    .chain(([heads, slack]) => {
      const filled = heads.reduce((n, h) => n + h + 1, 0)
      const last = Math.max(0, Math.min(200, responseChars - filled + slack))
      return fc
        .array(
          fc.oneof(
            fc.constant(''),
            fc.lorem({ maxCount: 2 }),
            // A line whose first word comes after a long run of whitespace.
            fc.nat(300).map((n) => `${' '.repeat(n)}x`),
          ),
          { maxLength: 3 },
        )
        .map((tail) => [...heads.map((n) => 'y'.repeat(n)), 'x'.repeat(last), ...tail].join('\n'))
    })

  test('equal the clamps that collapse every line whole, for any text', () => {
    fc.assert(
      fc.property(fc.oneof(arbText, arbLongLines, arbNearBudget), (text) => {
        expect(clampPrompt(text)).toBe(naive.prompt(text))
        expect(clampResponse(text)).toBe(naive.response(text))
      }),
      { seed: SEED + 2, numRuns: 3000 },
    )
  })
})

describe('huge blocks', () => {
  const block = `${'lorem ipsum dolor sit amet '.repeat(20_000)}`.slice(0, 500_000)

  test('a 500,000-character block clips to 50 and 120 characters', () => {
    expect(block).toHaveLength(500_000)
    const prompt = clampPrompt(block)
    const response = clampResponse(block)
    expect(prompt.length).toBeLessThanOrEqual(50)
    expect(response.length).toBeLessThanOrEqual(120)
    expect(prompt.endsWith(ELLIPSIS)).toBe(true)
    expect(response.endsWith(ELLIPSIS)).toBe(true)
    expect(clampPrompt(`\n\n${'x'.repeat(500_000)}`)).toBe(`${'x'.repeat(49)}${ELLIPSIS}`)
  })

  test('only a bounded prefix is read: whatever follows it cannot change a preview', () => {
    const arbLongPrefix = fc.array(arbText, { minLength: 1, maxLength: 5 }).map((parts) => {
      const unit = parts.join('') || ' '
      return unit.repeat(Math.ceil((scanChars + 1) / unit.length)).slice(0, scanChars + 1)
    })
    fc.assert(
      fc.property(arbLongPrefix, arbText, arbText, (prefix, a, b) => {
        expect(clampPrompt(prefix + a)).toBe(clampPrompt(prefix + b))
        expect(clampResponse(prefix + a)).toBe(clampResponse(prefix + b))
        expect(clampResponse(prefix + a)).toBe(clampResponse(prefix))
      }),
      { seed: SEED + 2, numRuns: 300 },
    )
  })
})
