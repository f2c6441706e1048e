/**
 * How text becomes search terms, shared by the index (what is stored), the query (what is
 * looked up) and the snippets (where a term sits in the original text). Pure.
 *
 * - Words are runs of letters, marks and digits; everything else separates them.
 * - Terms are folded: lower case, and Latin/Greek/Cyrillic diacritics dropped ("Café" → "cafe"),
 *   while marks that change a CJK character (Japanese voicing marks) are kept.
 * - Han, kana and Hangul have no spaces between words: a run of them becomes its overlapping
 *   character pairs (bigrams) plus its last character alone, so any substring of two or more
 *   characters is found through its pairs and a single character through prefix matching.
 */

export interface Token {
  /** The folded term. */
  term: string
  /** Offsets of the term in the original text, `[start, end)` in UTF-16 units. */
  start: number
  end: number
}

const WORD = /[\p{L}\p{M}\p{N}]+/gu
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u
/** Combining Diacritical Marks: the accents NFD splits off Latin, Greek and Cyrillic letters. */
const DIACRITICS = /[\u0300-\u036f]/g

/** No code point above U+007F (a text that needs no Unicode folding or script checks). */
const ASCII = /^[^\u0080-\uffff]*$/

export function foldTerm(text: string): string {
  // Most words are ASCII: lower case is all their folding needs.
  if (ASCII.test(text)) return text.toLowerCase()
  // NFKD also unifies compatibility forms (full-width Latin, ligatures); NFC puts kana back together.
  return text.normalize('NFKD').replace(DIACRITICS, '').normalize('NFC').toLowerCase().replace(/ß/g, 'ss')
}

const isCjk = (char: string) => CJK.test(char)

/** Splits one word into runs of CJK and of other characters, with offsets in the original text. */
function runsOf(word: string, at: number): { text: string; start: number; cjk: boolean }[] {
  const runs: { text: string; start: number; cjk: boolean }[] = []
  let offset = at
  for (const char of word) {
    const cjk = isCjk(char)
    const last = runs.at(-1)
    if (last !== undefined && last.cjk === cjk) last.text += char
    else runs.push({ text: char, start: offset, cjk })
    offset += char.length
  }
  return runs
}

/** The terms of a CJK run: its bigrams, and for the index its last character alone. */
function cjkTokens(text: string, start: number, forQuery: boolean, out: Token[]): void {
  const chars = [...text]
  const offsets: number[] = []
  let offset = start
  for (const char of chars) {
    offsets.push(offset)
    offset += char.length
  }
  const endOf = (i: number) => offsets[i]! + chars[i]!.length
  if (chars.length === 1) {
    out.push({ term: foldTerm(chars[0]!), start, end: endOf(0) })
    return
  }
  for (let i = 0; i + 1 < chars.length; i++) {
    out.push({ term: foldTerm(chars[i]! + chars[i + 1]!), start: offsets[i]!, end: endOf(i + 1) })
  }
  const lastIndex = chars.length - 1
  if (!forQuery)
    out.push({ term: foldTerm(chars[lastIndex]!), start: offsets[lastIndex]!, end: endOf(lastIndex) })
}

const ASCII_WORD = /[A-Za-z0-9]+/g

function tokenize(text: string, forQuery: boolean): Token[] {
  const out: Token[] = []
  if (ASCII.test(text)) {
    // The common case, without Unicode property classes (several times faster).
    for (const match of text.matchAll(ASCII_WORD)) {
      out.push({ term: match[0].toLowerCase(), start: match.index, end: match.index + match[0].length })
    }
    return out
  }
  for (const match of text.matchAll(WORD)) {
    const word = match[0]
    if (ASCII.test(word)) {
      out.push({ term: word.toLowerCase(), start: match.index, end: match.index + word.length })
      continue
    }
    for (const run of runsOf(word, match.index)) {
      if (run.cjk) cjkTokens(run.text, run.start, forQuery, out)
      else {
        const term = foldTerm(run.text)
        if (term !== '') out.push({ term, start: run.start, end: run.start + run.text.length })
      }
    }
  }
  return out
}

/** The terms of a text to index, with their offsets (snippets use the offsets). */
export const indexTokens = (text: string): Token[] => tokenize(text, false)

/** The terms of a query: the same rules, without the lone last character of a CJK run. */
export const queryTerms = (query: string): string[] => [...new Set(tokenize(query, true).map((t) => t.term))]

/**
 * Index terms only (what the index stores), without offsets: the same terms as `indexTokens`,
 * with a path for ASCII text that lowers the text once and cuts words by character code.
 */
export function indexTerms(text: string): string[] {
  if (!ASCII.test(text)) return indexTokens(text).map((t) => t.term)
  const lower = text.toLowerCase()
  const out: string[] = []
  let start = -1
  for (let i = 0; i <= lower.length; i++) {
    const c = i < lower.length ? lower.charCodeAt(i) : 0
    // After lower-casing, a word character is a-z or 0-9.
    const word = (c >= 97 && c <= 122) || (c >= 48 && c <= 57)
    if (word) {
      if (start < 0) start = i
    } else if (start >= 0) {
      out.push(lower.slice(start, i))
      start = -1
    }
  }
  return out
}
