/**
 * The search postings as they were before term ids and grouped typed arrays (commit ca0b40e,
 * src/engine/search/postings.ts, kept verbatim apart from imports and this comment): a map of
 * growable arrays per term and segment. The reference the current postings are checked against
 * (test/engine/search/postings.differential.test.ts): the same rows must give the same hits
 * with the same scores.
 */
import SearchableMap from 'minisearch/SearchableMap'
import { FIELD_BOOST, fieldsOf, SEARCH_FIELDS } from '../../src/engine/search/documents'
import { indexTerms } from '../../src/engine/search/terms'
import type { SessionMessage } from '../../src/schema/messages'

/** Documents per segment. */
export const SEGMENT_DOCS = 4000

const FIELDS = SEARCH_FIELDS.length
const BOOSTS = SEARCH_FIELDS.map((f) => FIELD_BOOST[f])
/** A field's frequency is one byte of the packed number: 256^field. */
const FIELD_UNIT = [1, 0x100, 0x10000, 0x1000000]
const MAX_TF = 255
// BM25+ (the constants MiniSearch uses).
const K1 = 1.2
const B = 0.7
const DELTA = 0.5
/** Weights of a term found by prefix or by edit distance instead of exactly (MiniSearch's). */
const PREFIX_WEIGHT = 0.375
const FUZZY_WEIGHT = 0.45

type Ints = number[] | Uint32Array

interface Posting {
  /** Document numbers, ascending. */
  docs: Ints
  /** Per document: the term's frequency in each field, one byte per field. */
  tfs: Ints
}

interface Segment {
  ids: string[]
  seq: number[]
  turn: number[]
  role: SessionMessage['role'][]
  visibility: SessionMessage['visibility'][]
  /** Field lengths in terms, FIELDS per document. */
  lengths: number[] | Uint16Array
  alive: boolean[]
  live: number
  postings: Map<string, Posting>
}

/** A segment as stored: typed arrays and string lists, structured-cloned by IndexedDB as they are. */
export interface StoredSegment {
  ids: string[]
  seq: number[]
  turn: number[]
  role: SessionMessage['role'][]
  visibility: SessionMessage['visibility'][]
  lengths: Uint16Array
  terms: string[]
  /** Posting of terms[i]: entries offsets[i] … offsets[i+1] of docs and tfs. */
  offsets: Uint32Array
  docs: Uint32Array
  tfs: Uint32Array
}

/** One word of a query as the vocabulary expands it: terms and their weights. */
export interface Expansion {
  terms: string[]
  weights: number[]
}

export interface QueryWord {
  term: string
  prefix: boolean
  /** Edit distance allowed (0: none). */
  fuzzy: number
}

/** A candidate for the result list; `terms` are filled in for the winners only. */
export interface Candidate {
  score: number
  sessionId: string
  seq: number
  id: string
  segment: Segment
  doc: number
}

const newSegment = (): Segment => ({
  ids: [],
  seq: [],
  turn: [],
  role: [],
  visibility: [],
  lengths: [],
  alive: [],
  live: 0,
  postings: new Map(),
})

/** A posting that can grow: one loaded from storage is copied out of the stored arrays first. */
function growable(posting: Posting): { docs: number[]; tfs: number[] } {
  if (posting.docs instanceof Uint32Array) {
    posting.docs = Array.from(posting.docs)
    posting.tfs = Array.from(posting.tfs)
  }
  return posting as { docs: number[]; tfs: number[] }
}

/** Binary search of an ascending list. */
function contains(list: Ints, value: number): boolean {
  let lo = 0
  let hi = list.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1
    const at = list[mid]!
    if (at === value) return true
    if (at < value) lo = mid + 1
    else hi = mid - 1
  }
  return false
}

/** Keeps the `limit` best candidates: score descending, then session id, then seq. */
export class TopK {
  private readonly heap: Candidate[] = []
  constructor(readonly limit: number) {}

  /** a ranks below b. */
  private static worse(a: Candidate, b: Candidate): boolean {
    if (a.score !== b.score) return a.score < b.score
    if (a.sessionId !== b.sessionId) return a.sessionId > b.sessionId
    return a.seq > b.seq
  }

  /** Whether a candidate with these keys would enter the list (cheap test before building it). */
  admits(score: number, sessionId: string, seq: number): boolean {
    if (this.heap.length < this.limit) return true
    // TopK.worse(floor, candidate), without building the candidate.
    const floor = this.heap[0]!
    if (floor.score !== score) return floor.score < score
    if (floor.sessionId !== sessionId) return floor.sessionId > sessionId
    return floor.seq > seq
  }

  push(candidate: Candidate): void {
    const heap = this.heap
    if (heap.length < this.limit) {
      heap.push(candidate)
      let i = heap.length - 1
      while (i > 0) {
        const parent = (i - 1) >> 1
        if (!TopK.worse(heap[i]!, heap[parent]!)) break
        ;[heap[i], heap[parent]] = [heap[parent]!, heap[i]!]
        i = parent
      }
      return
    }
    if (!TopK.worse(heap[0]!, candidate)) return
    heap[0] = candidate
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let least = i
      if (l < heap.length && TopK.worse(heap[l]!, heap[least]!)) least = l
      if (r < heap.length && TopK.worse(heap[r]!, heap[least]!)) least = r
      if (least === i) break
      ;[heap[i], heap[least]] = [heap[least]!, heap[i]!]
      i = least
    }
  }

  /** Best first. */
  sorted(): Candidate[] {
    return [...this.heap].sort((a, b) => (TopK.worse(a, b) ? 1 : TopK.worse(b, a) ? -1 : 0))
  }
}

/**
 * Every term any session's index holds, shared by all of them so a query expands its words
 * once, not once per session. Terms are never removed: one no index holds any more expands to
 * postings no segment has, which costs a map lookup per segment.
 */
export class Vocabulary {
  private readonly terms = new SearchableMap<true>()

  add(term: string): void {
    if (!this.terms.has(term)) this.terms.set(term, true)
  }

  /** The terms a query word stands for, with their weights (exact 1, prefix and typo less). */
  expand(word: QueryWord): Expansion {
    const weights = new Map<string, number>()
    if (this.terms.has(word.term)) weights.set(word.term, 1)
    if (word.prefix) {
      for (const term of this.terms.atPrefix(word.term).keys()) {
        if (term === word.term) continue
        const distance = term.length - word.term.length
        weights.set(term, (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance))
      }
    }
    if (word.fuzzy > 0) {
      for (const [term, [, distance]] of this.terms.fuzzyGet(word.term, word.fuzzy)) {
        if (distance === 0) continue
        const weight = (FUZZY_WEIGHT * term.length) / (term.length + distance)
        if ((weights.get(term) ?? 0) < weight) weights.set(term, weight)
      }
    }
    return { terms: [...weights.keys()], weights: [...weights.values()] }
  }
}

export class SessionPostings {
  readonly segments: Segment[] = []
  /** Segment of each indexed document. */
  private readonly where = new Map<string, number>()
  /** Sum of each field's length over the live documents. */
  private readonly totals = new Array<number>(FIELDS).fill(0)
  private live = 0
  /** Segments changed since `takeDirty`. */
  private readonly dirty = new Set<number>()

  constructor(
    readonly sessionId: string,
    private readonly vocabulary: Vocabulary,
  ) {}

  get size(): number {
    return this.live
  }

  get segmentCount(): number {
    return this.segments.length
  }

  has(id: string): boolean {
    return this.where.has(id)
  }

  /** Indexes a row (replacing the version indexed before). */
  add(row: SessionMessage): void {
    if (this.where.has(row.id)) this.discard(row.id)
    let at = this.segments.length - 1
    if (at < 0 || this.segments[at]!.ids.length >= SEGMENT_DOCS) {
      this.segments.push(newSegment())
      at++
    }
    const segment = this.segments[at]!
    if (!Array.isArray(segment.lengths)) segment.lengths = Array.from(segment.lengths)
    const doc = segment.ids.length
    segment.ids.push(row.id)
    segment.seq.push(row.seq)
    segment.turn.push(row.turn)
    segment.role.push(row.role)
    segment.visibility.push(row.visibility)
    segment.alive.push(true)
    segment.live++
    const fields = fieldsOf(row)
    for (let f = 0; f < FIELDS; f++) {
      const terms = indexTerms(fields[SEARCH_FIELDS[f]!])
      segment.lengths.push(terms.length)
      this.totals[f]! += terms.length
      const unit = FIELD_UNIT[f]!
      for (const term of terms) {
        let posting = segment.postings.get(term)
        if (posting === undefined) {
          posting = { docs: [], tfs: [] }
          segment.postings.set(term, posting)
          this.vocabulary.add(term)
        }
        const { docs, tfs } = growable(posting)
        const last = docs.length - 1
        if (docs[last] === doc) {
          if (((tfs[last]! >>> (8 * f)) & 0xff) < MAX_TF) tfs[last]! += unit
        } else {
          docs.push(doc)
          tfs.push(unit)
        }
      }
    }
    this.where.set(row.id, at)
    this.live++
    this.dirty.add(at)
  }

  /** Drops a row from the index; its postings stay until the segment is compacted. */
  discard(id: string): void {
    const at = this.where.get(id)
    if (at === undefined) return
    const segment = this.segments[at]!
    const doc = segment.ids.lastIndexOf(id)
    this.where.delete(id)
    this.dirty.add(at)
    if (doc < 0 || !segment.alive[doc]) return
    segment.alive[doc] = false
    segment.live--
    this.live--
    for (let f = 0; f < FIELDS; f++) this.totals[f]! -= segment.lengths[doc * FIELDS + f]!
  }

  /** Segments changed since the last call, each compacted (discarded documents dropped). */
  takeDirty(): number[] {
    const out = [...this.dirty].sort((a, b) => a - b)
    this.dirty.clear()
    for (const at of out) this.compact(at)
    return out
  }

  /** Marks every segment changed (a fresh build: all must be written). */
  markAllDirty(): void {
    for (let i = 0; i < this.segments.length; i++) this.dirty.add(i)
  }

  get isDirty(): boolean {
    return this.dirty.size > 0
  }

  private compact(at: number): void {
    const segment = this.segments[at]!
    if (segment.live === segment.ids.length) return
    const renumber = new Int32Array(segment.ids.length).fill(-1)
    const next = newSegment()
    const lengths: number[] = []
    for (let doc = 0; doc < segment.ids.length; doc++) {
      if (!segment.alive[doc]) continue
      renumber[doc] = next.ids.length
      next.ids.push(segment.ids[doc]!)
      next.seq.push(segment.seq[doc]!)
      next.turn.push(segment.turn[doc]!)
      next.role.push(segment.role[doc]!)
      next.visibility.push(segment.visibility[doc]!)
      next.alive.push(true)
      for (let f = 0; f < FIELDS; f++) lengths.push(segment.lengths[doc * FIELDS + f]!)
    }
    next.lengths = lengths
    next.live = next.ids.length
    for (const [term, posting] of segment.postings) {
      const docs: number[] = []
      const tfs: number[] = []
      for (let k = 0; k < posting.docs.length; k++) {
        const doc = renumber[posting.docs[k]!]!
        if (doc < 0) continue
        docs.push(doc)
        tfs.push(posting.tfs[k]!)
      }
      if (docs.length > 0) next.postings.set(term, { docs, tfs })
    }
    this.segments[at] = next
  }

  // --- storage -------------------------------------------------------------------------------

  /** Segment `at` as stored (compacted first by `takeDirty`). */
  store(at: number): StoredSegment {
    const segment = this.segments[at]!
    const terms = [...segment.postings.keys()]
    let entries = 0
    for (const posting of segment.postings.values()) entries += posting.docs.length
    const offsets = new Uint32Array(terms.length + 1)
    const docs = new Uint32Array(entries)
    const tfs = new Uint32Array(entries)
    let k = 0
    for (const [i, term] of terms.entries()) {
      const posting = segment.postings.get(term)!
      offsets[i] = k
      docs.set(posting.docs, k)
      tfs.set(posting.tfs, k)
      k += posting.docs.length
    }
    offsets[terms.length] = k
    return {
      ids: [...segment.ids],
      seq: [...segment.seq],
      turn: [...segment.turn],
      role: [...segment.role],
      visibility: [...segment.visibility],
      lengths: Uint16Array.from(segment.lengths, (n) => Math.min(n, 0xffff)),
      terms,
      offsets,
      docs,
      tfs,
    }
  }

  /** Appends a stored segment (in part order); postings stay views of the stored arrays until changed. */
  load(stored: StoredSegment): void {
    const at = this.segments.length
    const segment: Segment = {
      ids: stored.ids,
      seq: stored.seq,
      turn: stored.turn,
      role: stored.role,
      visibility: stored.visibility,
      lengths: stored.lengths,
      alive: new Array<boolean>(stored.ids.length).fill(true),
      live: stored.ids.length,
      postings: new Map(),
    }
    for (const [i, term] of stored.terms.entries()) {
      const from = stored.offsets[i]!
      const to = stored.offsets[i + 1]!
      segment.postings.set(term, { docs: stored.docs.subarray(from, to), tfs: stored.tfs.subarray(from, to) })
      this.vocabulary.add(term)
    }
    for (const id of stored.ids) this.where.set(id, at)
    for (let doc = 0; doc < stored.ids.length; doc++) {
      for (let f = 0; f < FIELDS; f++) this.totals[f]! += stored.lengths[doc * FIELDS + f]!
    }
    this.live += stored.ids.length
    this.segments.push(segment)
  }

  // --- queries -------------------------------------------------------------------------------

  /**
   * Scores the documents that match every word (AND) and offers them to `top`. A word matches
   * a document when any of its expansions occurs in any field; a document's score is the sum
   * over words and expansions of the weighted BM25+ of each field, times the field's boost.
   */
  search(expansions: readonly Expansion[], top: TopK, includeInactive: boolean): void {
    if (this.live === 0) return
    if (expansions.some((e) => e.terms.length === 0)) return
    // Document frequencies over the session, and the rarest word first: it bounds the candidates.
    const df = expansions.map((e) =>
      e.terms.map((term) => {
        let n = 0
        for (const segment of this.segments) n += segment.postings.get(term)?.docs.length ?? 0
        return n
      }),
    )
    const order = expansions.map((_, i) => i).sort((a, b) => Math.max(...df[a]!) - Math.max(...df[b]!))
    const inverseAvg = this.totals.map((t) => 1 / Math.max(t / this.live, 1))
    const textInverseAvg = inverseAvg[0]!
    const textBoost = BOOSTS[0]!
    const n = this.live
    const idf = df.map((list) => list.map((d) => Math.log(1 + (n - d + 0.5) / (d + 0.5))))
    for (const segment of this.segments) {
      if (segment.live === 0) continue
      const count = segment.ids.length
      const mark = new Uint8Array(count)
      const score = new Float64Array(count)
      const lengths = segment.lengths
      let alive = count
      for (const [step, w] of order.entries()) {
        const { terms, weights } = expansions[w]!
        let matched = 0
        for (let e = 0; e < terms.length; e++) {
          const posting = segment.postings.get(terms[e]!)
          if (posting === undefined) continue
          const factor = weights[e]! * idf[w]![e]!
          const { docs, tfs } = posting
          const next = step + 1
          for (let k = 0; k < docs.length; k++) {
            const doc = docs[k]!
            const m = mark[doc]!
            if (m !== step && m !== next) continue
            if (m === step) {
              mark[doc] = next
              matched++
            }
            const packed = tfs[k]!
            let s = 0
            if (packed <= 0xff) {
              // Most often the term is in the text field alone.
              const norm = 1 - B + B * lengths[doc * FIELDS]! * textInverseAvg
              s = textBoost * (DELTA + (packed * (K1 + 1)) / (packed + K1 * norm))
            } else {
              for (let f = 0; f < FIELDS; f++) {
                // `>>>` reads the packed number as unsigned 32 bits, whatever its top byte.
                const tf = (packed >>> (8 * f)) & 0xff
                if (tf === 0) continue
                const norm = 1 - B + B * lengths[doc * FIELDS + f]! * inverseAvg[f]!
                s += BOOSTS[f]! * (DELTA + (tf * (K1 + 1)) / (tf + K1 * norm))
              }
            }
            score[doc]! += s * factor
          }
        }
        alive = matched
        if (alive === 0) break
      }
      if (alive === 0) continue
      const all = expansions.length
      for (let doc = 0; doc < count; doc++) {
        if (mark[doc] !== all || !segment.alive[doc]) continue
        if (!includeInactive && segment.visibility[doc] !== 'visible') continue
        const s = score[doc]!
        const seq = segment.seq[doc]!
        if (!top.admits(s, this.sessionId, seq)) continue
        top.push({ score: s, sessionId: this.sessionId, seq, id: segment.ids[doc]!, segment, doc })
      }
    }
  }

  /** The index terms of `words`' expansions that occur in a candidate (what its snippet highlights). */
  static matchedTerms(expansions: readonly Expansion[], candidate: Candidate): string[] {
    const out: string[] = []
    for (const { terms } of expansions) {
      for (const term of terms) {
        const posting = candidate.segment.postings.get(term)
        if (posting && contains(posting.docs, candidate.doc)) out.push(term)
      }
    }
    return out
  }
}
