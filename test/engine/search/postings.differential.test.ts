/**
 * The postings (term ids, entries grouped lazily into typed arrays, a dictionary that cuts ASCII
 * text without a string per word) against the postings they replaced, kept as the reference in
 * test/support/postings-reference.ts: fed the same rows in the same order, with rows replaced
 * and discarded, queries run at any point (each of which groups what was added since), and the
 * index written and read back at any point, both answer every query with the same hits, scores
 * (to the last bit) and matched terms.
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { seedTurn } from '../../../demo/seed'
import { TermDictionary, TermIds } from '../../../src/engine/search/dictionary'
import * as current from '../../../src/engine/search/postings'
import { compileQuery } from '../../../src/engine/search/query'
import { indexTerms } from '../../../src/engine/search/terms'
import type { SessionMessage } from '../../../src/schema/messages'
import { Stamper } from '../../bench/src/fixtures'
import { QUERIES } from '../../bench/src/search'
import * as reference from '../../support/postings-reference'
import { trickyTextPieces } from '../../support/text-pieces'

type Impl = typeof current | typeof reference

/** One implementation's indexes of every session, over one shared vocabulary. */
class Side {
  vocabulary: current.Vocabulary | reference.Vocabulary
  indexes = new Map<string, current.SessionPostings | reference.SessionPostings>()
  constructor(private readonly impl: Impl) {
    this.vocabulary = new impl.Vocabulary()
  }

  private index(sessionId: string) {
    let index = this.indexes.get(sessionId)
    if (!index) {
      index = new this.impl.SessionPostings(sessionId, this.vocabulary as never)
      this.indexes.set(sessionId, index)
    }
    return index
  }

  add(row: SessionMessage) {
    this.index(row.sessionId).add(row)
  }

  discard(sessionId: string, id: string) {
    this.index(sessionId).discard(id)
  }

  /** Writes every changed segment and reads all of them back into fresh indexes (a reload). */
  reload() {
    const stored = [...this.indexes].map(([id, index]) => {
      index.takeDirty()
      return [id, Array.from({ length: index.segmentCount }, (_, at) => index.store(at))] as const
    })
    this.vocabulary = new this.impl.Vocabulary()
    this.indexes.clear()
    for (const [id, segments] of stored) {
      // Through structured clone, as IndexedDB hands them back.
      for (const segment of structuredClone(segments)) this.index(id).load(segment as never)
    }
  }

  search(query: string, limit: number, includeInactive: boolean) {
    const expansions = compileQuery(query).map((w) => this.vocabulary.expand(w))
    const top = new this.impl.TopK(limit)
    for (const index of this.indexes.values())
      index.search(expansions as never, top as never, includeInactive)
    return top.sorted().map((c) => ({
      id: c.id,
      sessionId: c.sessionId,
      seq: c.seq,
      score: c.score,
      terms: this.impl.SessionPostings.matchedTerms(expansions as never, c as never).sort(),
    }))
  }
}

const WORDS = [
  'alpha',
  'alphabet',
  'Alpha',
  'beta',
  'retry',
  'retries',
  'retrying',
  'read_file',
  'x1',
  '42',
  'Café',
  'crème',
  'Größe',
  '東京都',
  '京都',
  '서울',
  'δέλτα',
  'ｆｕｌｌ',
]
const textArb = fc
  .array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(' ', ', ', '\n', '-', '(')), {
    maxLength: 8,
  })
  .map((pairs) => pairs.map(([w, s]) => w + s).join(''))

const rowArb = fc.record({
  session: fc.nat({ max: 1 }),
  /** Which row of the session this is: a small range, so rows are often replaced. */
  slot: fc.nat({ max: 30 }),
  text: textArb,
  reasoning: fc.option(textArb, { nil: undefined }),
  tool: fc.option(fc.tuple(textArb, textArb), { nil: undefined }),
  inactive: fc.boolean(),
})

type RowOp = typeof rowArb extends fc.Arbitrary<infer T> ? T : never

const opArb = fc.oneof(
  { weight: 8, arbitrary: rowArb.map((row) => ({ kind: 'add' as const, row })) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('discard' as const),
      session: fc.nat({ max: 1 }),
      slot: fc.nat({ max: 30 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('search' as const),
      query: fc.constantFrom(...WORDS, 'al', 're', 'alpha beta', 'retyr', '京', 'cafe'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reload' as const }) },
)

function messageOf(op: RowOp): SessionMessage {
  const parts: SessionMessage['parts'] = [{ type: 'text', text: op.text }]
  if (op.reasoning !== undefined) parts.push({ type: 'reasoning', text: op.reasoning })
  if (op.tool !== undefined)
    parts.push({
      type: 'tool',
      callId: `c${op.slot}`,
      name: 'grep',
      input: { q: op.tool[0] },
      output: op.tool[1],
      state: 'done',
    })
  return {
    id: `s${op.session}-r${op.slot}`,
    sessionId: `s${op.session}`,
    seq: op.slot + 1,
    role: op.slot % 2 === 0 ? 'user' : 'assistant',
    turn: Math.floor(op.slot / 2) + 1,
    parts,
    status: 'complete',
    visibility: op.inactive ? 'inactive' : 'visible',
    createdAt: 0,
    updatedAt: 0,
  }
}

const QUERY_SET = [
  'alpha',
  'al',
  'retry',
  'retyr',
  'read_file',
  'cafe',
  'grosse',
  '京都',
  '京',
  'δελτα',
  'full',
  'alpha beta',
  'x1 42',
]

test('rows added, replaced and discarded, with queries and reloads anywhere between: the same hits, scores and matched terms as the reference postings', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
      const sides = [new Side(current), new Side(reference)] as const
      const answers = () =>
        QUERY_SET.flatMap((q) => [false, true].map((inactive) => sides.map((s) => s.search(q, 7, inactive))))
      for (const op of ops) {
        for (const side of sides) {
          if (op.kind === 'add') side.add(messageOf(op.row))
          else if (op.kind === 'discard') side.discard(`s${op.session}`, `s${op.session}-r${op.slot}`)
          else if (op.kind === 'reload') side.reload()
        }
        if (op.kind === 'search') {
          const [a, b] = sides.map((s) => s.search(op.query, 5, false))
          expect(a).toEqual(b)
        }
      }
      for (const [a, b] of answers()) expect(a).toEqual(b)
    }),
    { seed: 24025, numRuns: 300 },
  )
})

test('the demo-seeded corpus (9,000 rows over three segments in two sessions) built in one go answers the bench queries as the reference does, before and after a reload', () => {
  const rows: SessionMessage[] = []
  for (const id of ['corpus-a', 'corpus-b']) {
    const stamper = new Stamper(id, 1)
    const byId = new Map<string, SessionMessage>()
    for (let turn = 1; byId.size < 4500; turn++)
      for (const row of stamper.stamp(seedTurn(id, turn), 0).rows) byId.set(row.id, row)
    rows.push(...[...byId.values()].slice(0, 4500))
  }
  const sides = [new Side(current), new Side(reference)] as const
  for (const side of sides) for (const row of rows) side.add(row)
  expect(sides[0].indexes.get('corpus-a')!.segmentCount).toBe(2)
  const check = () => {
    for (const query of [...QUERIES, 'retry', 'r', 'turn 3']) {
      const [a, b] = sides.map((s) => s.search(query, 20, false))
      expect(a.length).toBeGreaterThan(0)
      expect(a).toEqual(b)
    }
  }
  check()
  for (const side of sides) side.reload()
  check()
})

test('the dictionary cuts exactly the terms indexTerms does, ASCII or not, and gives one id per term', () => {
  const pieces = trickyTextPieces
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.oneof(pieces, fc.string(), fc.string({ unit: 'binary' })), { maxLength: 10 }), {
        maxLength: 6,
      }),
      (texts) => {
        const dictionary = new TermDictionary()
        const out = new TermIds()
        for (const parts of texts) {
          const text = parts.join('')
          out.length = 0
          dictionary.cut(text, out)
          const ids = [...out.ids.subarray(0, out.length)]
          expect(ids.map((id) => dictionary.term(id))).toEqual(indexTerms(text))
          for (const [i, id] of ids.entries()) expect(dictionary.find(indexTerms(text)[i]!)).toBe(id)
        }
      },
    ),
    { seed: 24026, numRuns: 500 },
  )
})
