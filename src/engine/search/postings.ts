/**
 * One session's full-text index held in memory as compact postings (docs/decisions/0015): an
 * inverted list per term and segment, with the term frequency of every field packed into one
 * number, and a vocabulary (MiniSearch's radix tree) for prefix and typo expansion. Pure.
 *
 * Why not MiniSearch's own index: its query builds a result object for every matching document
 * and scores through maps of maps, so a common word over 100,000 rows cost hundreds of
 * milliseconds. Here a query touches flat arrays only, ANDs its words with one mark per
 * document, and builds objects for the `limit` best hits alone.
 *
 * A segment holds at most SEGMENT_DOCS documents (discarded ones count until it is compacted),
 * so a commit changes the newest segment and a write rewrites one segment, not the session.
 * Documents are numbered in the order they were added, so every posting list is ascending.
 */
import SearchableMap from 'minisearch/SearchableMap'
import type { SessionMessage } from '../../schema/messages'
import { TermDictionary, TermIds } from './dictionary'
import { FIELD_BOOST, fieldsOf, SEARCH_FIELDS } from './documents'

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

/**
 * A segment's postings: for the term in slot `s` (see `slots`), entries `starts[s]` …
 * `starts[s + 1]` of `docs` (ascending) and `tfs` (the term's frequency in each field, one byte
 * per field). Documents added since the last grouping wait in `pending`, in document order, and
 * are merged in (`group`) before a query, a write or a match reads the segment.
 */
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
  /** Term id → slot. */
  slots: Map<number, number>
  /** Slot → term id. */
  termIds: number[]
  starts: Uint32Array
  docs: Uint32Array
  tfs: Uint32Array
  pending: Entries
}

/** (term id, document, packed frequencies) triples, appended in document order. */
class Entries {
  terms = new Uint32Array(0)
  docs = new Uint32Array(0)
  tfs = new Uint32Array(0)
  length = 0

  push(term: number, doc: number, tf: number): void {
    if (this.length === this.terms.length) this.grow()
    const at = this.length++
    this.terms[at] = term
    this.docs[at] = doc
    this.tfs[at] = tf
  }

  private grow(): void {
    // Geometric, so a build of a 4,000-row segment copies each entry about twice.
    const size = Math.max(1024, this.terms.length * 2)
    this.terms = grown(this.terms, size, 0)
    this.docs = grown(this.docs, size, 0)
    this.tfs = grown(this.tfs, size, 0)
  }

  clear(): void {
    this.terms = new Uint32Array(0)
    this.docs = new Uint32Array(0)
    this.tfs = new Uint32Array(0)
    this.length = 0
  }
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

/** One word of a query as the vocabulary expands it: terms (and their ids) and their weights. */
export interface Expansion {
  terms: string[]
  ids: number[]
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

const EMPTY = new Uint32Array(0)

const newSegment = (): Segment => ({
  ids: [],
  seq: [],
  turn: [],
  role: [],
  visibility: [],
  lengths: [],
  alive: [],
  live: 0,
  slots: new Map(),
  termIds: [],
  starts: new Uint32Array(1),
  docs: EMPTY,
  tfs: EMPTY,
  pending: new Entries(),
})

/**
 * Merges the pending entries into the grouped postings (a stable counting sort by slot).
 * `scratch` maps term ids to slots while it runs: -1 everywhere before and after.
 */
function group(segment: Segment, scratch: Int32Array): void {
  const pending = segment.pending
  if (pending.length === 0) return
  const { slots, termIds, starts: oldStarts } = segment
  const grouped = termIds.length
  for (let s = 0; s < grouped; s++) scratch[termIds[s]!] = s
  const slotOf = new Uint32Array(pending.length)
  for (let k = 0; k < pending.length; k++) {
    const term = pending.terms[k]!
    let slot = scratch[term]!
    if (slot < 0) {
      slot = termIds.length
      scratch[term] = slot
      slots.set(term, slot)
      termIds.push(term)
    }
    slotOf[k] = slot
  }
  for (const term of termIds) scratch[term] = -1
  const count = termIds.length
  const starts = new Uint32Array(count + 1)
  for (let s = 0; s < grouped; s++) starts[s + 1] = oldStarts[s + 1]! - oldStarts[s]!
  for (let k = 0; k < pending.length; k++) starts[slotOf[k]! + 1]!++
  for (let s = 0; s < count; s++) starts[s + 1]! += starts[s]!
  const total = starts[count]!
  const docs = new Uint32Array(total)
  const tfs = new Uint32Array(total)
  // Entries grouped before come first in each slot: their documents are older (lower) than any pending one.
  const cursor = starts.slice(0, count)
  for (let s = 0; s < grouped; s++) {
    const from = oldStarts[s]!
    const to = oldStarts[s + 1]!
    docs.set(segment.docs.subarray(from, to), cursor[s]!)
    tfs.set(segment.tfs.subarray(from, to), cursor[s]!)
    cursor[s]! += to - from
  }
  for (let k = 0; k < pending.length; k++) {
    const at = cursor[slotOf[k]!]!++
    docs[at] = pending.docs[k]!
    tfs[at] = pending.tfs[k]!
  }
  segment.starts = starts
  segment.docs = docs
  segment.tfs = tfs
  pending.clear()
}

/** Binary search of an ascending range of a list. */
function contains(list: Uint32Array, from: number, to: number, value: number): boolean {
  let lo = from
  let hi = to - 1
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

/** `array` grown to at least `size` (doubling), new entries set to `fill`. */
function grown<T extends Uint32Array | Int32Array>(array: T, size: number, fill: number): T {
  let length = Math.max(array.length, 1)
  while (length < size) length *= 2
  const out = new (array.constructor as new (n: number) => T)(length)
  out.set(array)
  out.fill(fill, array.length)
  return out
}

/**
 * Every term any session's index holds, shared by all of them so a query expands its words
 * once, not once per session: numbered by the dictionary (postings hold ids), and in a radix
 * tree for prefix and typo expansion. Terms are never removed: one no index holds any more
 * expands to postings no segment has, which costs a map lookup per segment.
 */
export class Vocabulary {
  private readonly tree = new SearchableMap<number>()
  readonly dictionary = new TermDictionary((term, id) => this.tree.set(term, id))
  /** Per term id: its packed field frequencies in the document being added (0 between documents). */
  private tfs = new Uint32Array(1024)
  /** Per term id: its slot in the segment being grouped (-1 between groupings). */
  private slots = new Int32Array(1024).fill(-1)

  /** `tfs`, sized for every id the dictionary has handed out. */
  frequencies(): Uint32Array {
    if (this.tfs.length < this.dictionary.size) this.tfs = grown(this.tfs, this.dictionary.size, 0)
    return this.tfs
  }

  /** Groups a segment's pending entries (see `group`). */
  group(segment: Segment): void {
    if (segment.pending.length === 0) return
    if (this.slots.length < this.dictionary.size) this.slots = grown(this.slots, this.dictionary.size, -1)
    group(segment, this.slots)
  }

  /** The terms a query word stands for, with their weights (exact 1, prefix and typo less). */
  expand(word: QueryWord): Expansion {
    const weights = new Map<string, number>()
    if (this.tree.has(word.term)) weights.set(word.term, 1)
    if (word.prefix) {
      for (const term of this.tree.atPrefix(word.term).keys()) {
        if (term === word.term) continue
        const distance = term.length - word.term.length
        weights.set(term, (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance))
      }
    }
    if (word.fuzzy > 0) {
      for (const [term, [, distance]] of this.tree.fuzzyGet(word.term, word.fuzzy)) {
        if (distance === 0) continue
        const weight = (FUZZY_WEIGHT * term.length) / (term.length + distance)
        if ((weights.get(term) ?? 0) < weight) weights.set(term, weight)
      }
    }
    const terms = [...weights.keys()]
    return { terms, ids: terms.map((t) => this.tree.get(t)!), weights: [...weights.values()] }
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
  /** The terms of one field of the document being added. */
  private readonly cut = new TermIds()
  /** Term ids of the document being added, each once. */
  private readonly touched = new TermIds()

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
    const { dictionary } = this.vocabulary
    const { cut, touched } = this
    touched.length = 0
    for (let f = 0; f < FIELDS; f++) {
      cut.length = 0
      dictionary.cut(fields[SEARCH_FIELDS[f]!], cut)
      const n = cut.length
      segment.lengths.push(n)
      this.totals[f]! += n
      const unit = FIELD_UNIT[f]!
      const shift = 8 * f
      const tf = this.vocabulary.frequencies()
      const ids = cut.ids
      for (let k = 0; k < n; k++) {
        const id = ids[k]!
        const packed = tf[id]!
        if (packed === 0) touched.push(id)
        if (((packed >>> shift) & 0xff) < MAX_TF) tf[id] = packed + unit
      }
    }
    const tf = this.vocabulary.frequencies()
    for (let k = 0; k < touched.length; k++) {
      const id = touched.ids[k]!
      segment.pending.push(id, doc, tf[id]!)
      tf[id] = 0
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
    this.vocabulary.group(segment)
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
    let kept = 0
    for (let k = 0; k < segment.docs.length; k++) if (renumber[segment.docs[k]!]! >= 0) kept++
    const docs = new Uint32Array(kept)
    const tfs = new Uint32Array(kept)
    const starts = [0]
    let out = 0
    for (const [slot, term] of segment.termIds.entries()) {
      const from = out
      for (let k = segment.starts[slot]!; k < segment.starts[slot + 1]!; k++) {
        const doc = renumber[segment.docs[k]!]!
        if (doc < 0) continue
        docs[out] = doc
        tfs[out++] = segment.tfs[k]!
      }
      if (out === from) continue
      next.slots.set(term, next.termIds.length)
      next.termIds.push(term)
      starts.push(out)
    }
    next.starts = Uint32Array.from(starts)
    next.docs = docs
    next.tfs = tfs
    this.segments[at] = next
  }

  // --- storage -------------------------------------------------------------------------------

  /** Segment `at` as stored (compacted first by `takeDirty`). */
  store(at: number): StoredSegment {
    const segment = this.segments[at]!
    this.vocabulary.group(segment)
    const { dictionary } = this.vocabulary
    return {
      ids: [...segment.ids],
      seq: [...segment.seq],
      turn: [...segment.turn],
      role: [...segment.role],
      visibility: [...segment.visibility],
      lengths: Uint16Array.from(segment.lengths, (n) => Math.min(n, 0xffff)),
      terms: segment.termIds.map((id) => dictionary.term(id)),
      // Copies: the segment may be grouped again (and its arrays replaced) while the write runs.
      offsets: segment.starts.slice(),
      docs: segment.docs.slice(),
      tfs: segment.tfs.slice(),
    }
  }

  /** Appends a stored segment (in part order); its postings are the stored arrays themselves. */
  load(stored: StoredSegment): void {
    const at = this.segments.length
    const { dictionary } = this.vocabulary
    const segment: Segment = {
      ids: stored.ids,
      seq: stored.seq,
      turn: stored.turn,
      role: stored.role,
      visibility: stored.visibility,
      lengths: stored.lengths,
      alive: new Array<boolean>(stored.ids.length).fill(true),
      live: stored.ids.length,
      slots: new Map(),
      termIds: stored.terms.map((term) => dictionary.idOf(term)),
      starts: stored.offsets,
      docs: stored.docs,
      tfs: stored.tfs,
      pending: new Entries(),
    }
    for (const [slot, id] of segment.termIds.entries()) segment.slots.set(id, slot)
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
    for (const segment of this.segments) this.vocabulary.group(segment)
    // Document frequencies over the session, and the rarest word first: it bounds the candidates.
    const df = expansions.map((e) =>
      e.ids.map((id) => {
        let n = 0
        for (const segment of this.segments) {
          const slot = segment.slots.get(id)
          if (slot !== undefined) n += segment.starts[slot + 1]! - segment.starts[slot]!
        }
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
      const { lengths, docs, tfs, starts, slots } = segment
      let alive = count
      for (const [step, w] of order.entries()) {
        const { ids, weights } = expansions[w]!
        let matched = 0
        for (let e = 0; e < ids.length; e++) {
          const slot = slots.get(ids[e]!)
          if (slot === undefined) continue
          const factor = weights[e]! * idf[w]![e]!
          const next = step + 1
          const to = starts[slot + 1]!
          for (let k = starts[slot]!; k < to; k++) {
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
    const { segment, doc } = candidate
    for (const { terms, ids } of expansions) {
      for (const [e, id] of ids.entries()) {
        const slot = segment.slots.get(id)
        if (
          slot !== undefined &&
          contains(segment.docs, segment.starts[slot]!, segment.starts[slot + 1]!, doc)
        )
          out.push(terms[e]!)
      }
    }
    return out
  }
}
