/**
 * Every term the indexes hold, numbered: the postings of a build are keyed by these dense ids,
 * not by strings. Pure (in-memory).
 *
 * Building the index of 100,000 rows cuts about 2.7 M words. Cutting them the plain way makes
 * a string per word (a slice, lowered) and hashes it again for a map: millions of short-lived
 * strings, and the collector's time with them. Here an ASCII text is scanned once, lower-casing
 * and hashing each word as it goes, and the word is looked up in an open-addressing table by
 * comparing its characters in place; a string is made only for a word never seen before. Text
 * with anything beyond ASCII takes the general tokenizer (./terms.ts), so both paths cut
 * exactly the terms `indexTerms` does.
 */
import { indexTokens } from './terms'

/** No code point above U+007F (as ./terms.ts decides which text takes its ASCII path). */
const ASCII = /^[^\u0080-\uffff]*$/

/** FNV-1a over UTF-16 code units. */
const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

function hashOf(term: string): number {
  let h = FNV_OFFSET
  for (let i = 0; i < term.length; i++) h = Math.imul(h ^ term.charCodeAt(i), FNV_PRIME)
  return h >>> 0
}

/** A growable list of term ids (one reused buffer per build, not an array per field). */
export class TermIds {
  ids = new Uint32Array(256)
  length = 0

  push(id: number): void {
    if (this.length === this.ids.length) {
      const grown = new Uint32Array(this.ids.length * 2)
      grown.set(this.ids)
      this.ids = grown
    }
    this.ids[this.length++] = id
  }
}

export class TermDictionary {
  private readonly terms: string[] = []
  private hashes = new Uint32Array(1024)
  /** Open addressing, linear probing: term id + 1 per slot (0: empty); kept at most half full. */
  private table = new Uint32Array(2048)
  private mask = 2047
  /** Called with every new term and its id (the vocabulary's radix tree learns it there). */
  constructor(private readonly onNew: (term: string, id: number) => void = () => {}) {}

  get size(): number {
    return this.terms.length
  }

  term(id: number): string {
    return this.terms[id]!
  }

  /** The id of `term` (a folded term), undefined if no index ever held it. */
  find(term: string): number | undefined {
    const h = hashOf(term)
    for (let slot = h & this.mask; ; slot = (slot + 1) & this.mask) {
      const at = this.table[slot]!
      if (at === 0) return undefined
      if (this.hashes[at - 1] === h && this.terms[at - 1] === term) return at - 1
    }
  }

  /** The id of `term`, numbering it if new. */
  idOf(term: string): number {
    return this.find(term) ?? this.insert(term, hashOf(term))
  }

  /**
   * Appends the terms of `text` to `out` as ids: the same terms, in the same order, as
   * `indexTerms(text)`.
   */
  cut(text: string, out: TermIds): void {
    if (!this.cutAscii(text, out)) {
      for (const token of indexTokens(text)) out.push(this.idOf(token.term))
    }
  }

  /**
   * The ASCII path (as `indexTerms`'): the text lowered once, words are runs of letters and
   * digits. Answers false (with `out` as it was) for a text with anything beyond ASCII, which
   * the general tokenizer must cut.
   */
  private cutAscii(text: string, out: TermIds): boolean {
    if (!ASCII.test(text)) return false
    const lower = text.toLowerCase()
    let start = -1
    let h = FNV_OFFSET
    for (let i = 0; i <= lower.length; i++) {
      const c = i < lower.length ? lower.charCodeAt(i) : 32
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        if (start < 0) {
          start = i
          h = FNV_OFFSET
        }
        h = Math.imul(h ^ c, FNV_PRIME)
      } else if (start >= 0) {
        out.push(this.idOfRange(lower, start, i, h >>> 0))
        start = -1
      }
    }
    return true
  }

  /** The id of `text[start, end)`, hashed `h`, numbering it if new. */
  private idOfRange(text: string, start: number, end: number, h: number): number {
    const length = end - start
    for (let slot = h & this.mask; ; slot = (slot + 1) & this.mask) {
      const at = this.table[slot]!
      if (at === 0) break
      if (this.hashes[at - 1] !== h) continue
      const term = this.terms[at - 1]!
      if (term.length === length && text.startsWith(term, start)) return at - 1
    }
    return this.insert(text.slice(start, end), h)
  }

  private insert(term: string, h: number): number {
    const id = this.terms.length
    this.terms.push(term)
    if (id === this.hashes.length) {
      const grown = new Uint32Array(this.hashes.length * 2)
      grown.set(this.hashes)
      this.hashes = grown
    }
    this.hashes[id] = h
    if ((id + 1) * 2 > this.table.length) this.rehash(this.table.length * 2)
    else this.place(id, h)
    this.onNew(term, id)
    return id
  }

  private place(id: number, h: number): void {
    let slot = h & this.mask
    while (this.table[slot] !== 0) slot = (slot + 1) & this.mask
    this.table[slot] = id + 1
  }

  private rehash(size: number): void {
    this.table = new Uint32Array(size)
    this.mask = size - 1
    for (let id = 0; id < this.terms.length; id++) this.place(id, this.hashes[id]!)
  }
}
