/**
 * Pieces of text that break tokenizers, for fast-check: identifiers, case, whitespace, JSON,
 * accents precomposed and combining, ß, CJK and Hangul, digits, full-width letters, the Kelvin
 * sign (lower-cases to ASCII k) and an astral emoji.
 */
import fc from 'fast-check'

export const trickyTextPieces = fc.constantFrom(
  'read_file',
  'Hello',
  'WORLD',
  ' ',
  '\n',
  '{"q":"x1"}',
  'Café',
  'ß',
  '東京',
  '검색',
  '42',
  '-',
  'é',
  '\u0301',
  'ｆｕｌｌ',
  'K',
  '\u212a',
  '\u{1F600}',
)
