/**
 * The index's fast path for ASCII text cuts the same terms as the general tokenizer that
 * snippets use (optimized vs reference), on any mix of ASCII, accented, CJK and other text.
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { indexTerms, indexTokens } from '../../../src/engine/search/terms'
import { trickyTextPieces } from '../../support/text-pieces'

const pieces = trickyTextPieces

test('indexTerms gives exactly the terms of indexTokens, ASCII fast path or not', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(pieces, fc.string(), fc.string({ unit: 'binary' })), { maxLength: 12 }),
      (parts) => {
        const text = parts.join('')
        expect(indexTerms(text)).toEqual(indexTokens(text).map((t) => t.term))
      },
    ),
    { seed: 15017, numRuns: 1000 },
  )
})
