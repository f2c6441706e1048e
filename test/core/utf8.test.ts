import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { utf8Bytes } from '../../src/core/utf8'

const reference = (text: string) => new TextEncoder().encode(text)

// Strings of UTF-16 units mixing ASCII, two- and three-byte characters, surrogate pairs and
// lone surrogates (which both encoders write as U+FFFD), so the first buffer runs out anywhere.
const unit = fc.oneof(
  fc.constantFrom('a', '{', '"', '\n', 'é', 'ß', '€', '中', '\u{1F600}', '\u{10FFFF}', '\uD800', '\uDFFF'),
  fc.string({ unit: 'binary', maxLength: 3 }),
)
const text = fc.array(unit, { maxLength: 200 }).map((parts) => parts.join(''))

describe('utf8Bytes', () => {
  it('gives the bytes TextEncoder.encode gives, for any string', () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(Array.from(utf8Bytes(t))).toEqual(Array.from(reference(t)))
      }),
      { numRuns: 2000 },
    )
  })
})
