/**
 * What a query asks of the index, word by word (docs/decisions/0015): every word must match
 * (AND); a word matches terms that start with it, except a lone Latin letter or digit that is not
 * the last word (the last may still be being typed; elsewhere one letter would expand to a large
 * part of the vocabulary for nothing); words of five letters or more also match terms one edit
 * away per five letters. Pure.
 */
import type { QueryWord } from './postings'
import { queryTerms } from './terms'

const CJK_START = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u
/** Edits allowed per letter of a word, and the length from which any are. */
const FUZZY_RATE = 0.2
const FUZZY_FROM = 5

export function compileQuery(query: string): QueryWord[] {
  const terms = queryTerms(query)
  return terms.map((term, i) => {
    const cjk = CJK_START.test(term)
    return {
      term,
      prefix: i === terms.length - 1 || term.length > 1 || cjk,
      fuzzy: term.length >= FUZZY_FROM && !cjk ? Math.round(term.length * FUZZY_RATE) : 0,
    }
  })
}
