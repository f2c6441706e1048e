/**
 * The history tree and its verbs (core/history-tree, core/history-decide), without Dexie:
 * generated sequences of turns (answered, left open, with tool calls that never return), steers
 * and every history verb run through the deciders, and a plain reference model (rows with a
 * parent pointer and a head, the rules of docs/decisions/0033 spelled out by hand) says what each
 * must do. After every step: the visible rows are the model's path to the head less what its
 * last summary replaced; the context is a subset of them and every tool call in it carries a
 * result; a compaction written for another head changes nothing; row ids are unique; the
 * incremental tree, folds and rows equal a replay of the log; and every earlier version of the
 * tree still answers as it did (versions share storage).
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { decide, type SessionState } from '../../src/core/decide'
import { foldEvents, initFolds } from '../../src/core/folds'
import { decideHistory, type HistoryCommand, type HistoryState } from '../../src/core/history-decide'
import {
  branchOf,
  contextFor,
  contextIds,
  contextOfVisible,
  emptyTree,
  evolveTree,
  type HistoryTree,
  headOf,
  nodesOf,
  replayTree,
  UNANSWERED_CALL,
  visibilityChanges,
  visibilityIn,
  visibleIds,
} from '../../src/core/history-tree'
import { rowIdsCreated } from '../../src/core/ids'
import { isSessionlineError, type SessionlineError } from '../../src/schema/errors'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'

const SESSION = 's'

type Act =
  | { type: 'turn'; steps: number; tool: 'none' | 'answered' | 'unanswered'; end: boolean; steer: boolean }
  | { type: 'rewind' | 'regenerate' | 'switchBranch'; pick: number }
  | { type: 'resend'; pick: number; reuse: boolean }
  | { type: 'compact'; through: 'head' | 'none' | number; stale: boolean }
  | { type: 'old'; pick: number }

const pick = fc.nat(40)
const act: fc.Arbitrary<Act> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      type: fc.constant('turn' as const),
      steps: fc.integer({ min: 1, max: 2 }),
      tool: fc.constantFrom('none' as const, 'answered' as const, 'unanswered' as const),
      end: fc.boolean(),
      steer: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      type: fc.constantFrom('rewind' as const, 'regenerate' as const, 'switchBranch' as const),
      pick,
    }),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('resend' as const), pick, reuse: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('compact' as const),
      through: fc.oneof(fc.constant('head' as const), fc.constant('none' as const), pick),
      stale: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('old' as const), pick }) },
)

/** The reference: rows with a parent pointer, and the head. */
interface ModelRow {
  id: string
  parent: string | null
  role: 'user' | 'assistant' | 'summary'
  /** Summary rows: the row they replace the path through. */
  through?: string | null
}
function createModel() {
  const rows: ModelRow[] = []
  let head: string | null = null
  let lastTurn = 0
  let openTurn: number | null = null
  const byId = (id: string) => rows.find((r) => r.id === id)
  const path = (to: string | null = head): ModelRow[] => {
    const out: ModelRow[] = []
    for (let r = to === null ? undefined : byId(to); r; r = r.parent === null ? undefined : byId(r.parent))
      out.unshift(r)
    return out
  }
  const lastSummary = (p: ModelRow[]) => {
    for (let k = p.length - 1; k >= 0; k--) if (p[k]!.role === 'summary') return k
    return -1
  }
  const replacedThrough = (p: ModelRow[]) => {
    const k = lastSummary(p)
    if (k < 0) return -1
    const through = p[k]!.through
    return through === null ? -1 : p.findIndex((r) => r.id === through)
  }
  return {
    rows,
    head: () => head,
    openTurn: () => openTurn,
    lastTurn: () => lastTurn,
    add(row: ModelRow) {
      rows.push(row)
      head = row.id
    },
    startTurn() {
      openTurn = ++lastTurn
    },
    endTurn() {
      openTurn = null
    },
    moveHead(to: string | null) {
      head = to
    },
    byId,
    visible: () =>
      path()
        .slice(replacedThrough(path()) + 1)
        .map((r) => r.id),
    context: () => {
      const p = path()
      const k = lastSummary(p)
      if (k < 0) return p.map((r) => r.id)
      return [
        p[k]!.id,
        ...p
          .slice(replacedThrough(p) + 1)
          .filter((_, i, all) => all[i] !== p[k])
          .map((r) => r.id),
      ]
    },
    compactable: () => {
      const p = path()
      return p.slice(Math.max(lastSummary(p), 0)).map((r) => r.id)
    },
    newestUnder(id: string): string {
      let newest = id
      for (const r of rows) if (path(r.id).some((a) => a.id === id)) newest = r.id
      return newest
    },
    promptOf(id: string): string | undefined {
      for (let r = byId(id); r; r = r.parent === null ? undefined : byId(r.parent))
        if (r.role === 'user') return r.id
      return undefined
    },
    siblings: (row: ModelRow) => rows.filter((r) => r.parent === row.parent),
  }
}

/** The system under test: the deciders' state, the log, the rows they stored. */
function createWorld() {
  const created: StoredEvent = {
    type: 'session/created',
    data: { title: 't' },
    sessionId: SESSION,
    seq: 1,
    at: 1,
  }
  let state: HistoryState = {
    sessionId: SESSION,
    source: 'native',
    headSeq: 1,
    nextInputSeq: 1,
    folds: foldEvents(initFolds(), [created]).folds,
    pending: [],
    tree: emptyTree(),
  }
  const log: StoredEvent[] = [created]
  const rows = new Map<string, SessionMessage>()
  let clock = 1
  function take(
    events: StoredEvent[],
    changed: SessionMessage[],
    next: SessionState | undefined,
    tree?: HistoryTree,
  ) {
    log.push(...events)
    for (const row of changed) rows.set(row.id, row)
    if (next) state = { ...next, tree: tree ?? state.tree }
  }
  return {
    state: () => state,
    log,
    rows,
    /** Appends as the runner does (through `decide`), folding the tree along. */
    append(events: SessionEvent[]) {
      const decision = decide(state, { type: 'append', events, owners: events.map(() => undefined) }, ++clock)
      if (isSessionlineError(decision)) throw decision
      let tree = state.tree
      for (const e of decision.events) tree = evolveTree(tree, e)
      take(decision.events, decision.rows, decision.next, tree)
    },
    history(command: HistoryCommand): unknown {
      const decision = decideHistory(state, command, ++clock)
      if (isSessionlineError(decision)) return decision
      take(decision.events, decision.rows, decision.next, decision.next?.tree)
      return decision
    },
  }
}

describe('the history tree against a plain model', () => {
  test('every verb keeps the visible rows, the context and the replay in step with the model', () => {
    fc.assert(
      fc.property(fc.array(act, { maxLength: 40 }), (acts) => {
        const model = createModel()
        const world = createWorld()
        const versions: { tree: HistoryTree; visible: string[]; context: string[] }[] = []
        let nextId = 0
        const known = new Set<string>()
        const fresh = (prefix: string) => `${prefix}${nextId++}`
        const rowAt = (n: number): string =>
          model.rows.length === 0 || n >= 38 ? 'missing' : model.rows[n % model.rows.length]!.id
        const expectError = (result: unknown, code: string) => {
          expect(isSessionlineError(result), `expected ${code}`).toBe(true)
          expect((result as SessionlineError).code).toBe(code)
        }
        const interrupt = () => {
          if (model.openTurn() !== null) model.endTurn()
        }

        for (const a of acts) {
          const contextBefore = contextIds(world.state().tree)
          switch (a.type) {
            case 'turn': {
              const events: SessionEvent[] = []
              let turn = model.openTurn()
              let lastStep = world.state().folds.transcript.lastStep
              if (turn === null) {
                model.startTurn()
                turn = model.openTurn()!
                lastStep = 0
                const id = fresh('u')
                events.push({ type: 'turn/start', data: { turn } })
                events.push({
                  type: 'user/message',
                  data: { inputId: id, text: `prompt ${id}`, delivery: 'queue', source: 'user' },
                })
                model.add({ id, parent: model.head(), role: 'user' })
              } else if (a.steer) {
                const id = fresh('u')
                events.push({
                  type: 'user/message',
                  data: { inputId: id, text: `steer ${id}`, delivery: 'steer', source: 'user' },
                })
                model.add({ id, parent: model.head(), role: 'user' })
              }
              for (let k = 1; k <= a.steps; k++) {
                const step = lastStep + k
                const id = fresh('a')
                events.push({ type: 'step/start', data: { turn, step } })
                events.push({ type: 'assistant/start', data: { messageId: id, turn, step } })
                events.push({ type: 'assistant/delta', data: { messageId: id, text: `answer ${id}` } })
                model.add({ id, parent: model.head(), role: 'assistant' })
                if (a.tool !== 'none') {
                  const callId = fresh('c')
                  events.push({
                    type: 'tool/call',
                    data: { messageId: id, callId, name: 'look', input: { k } },
                  })
                  if (a.tool === 'answered')
                    events.push({ type: 'tool/result', data: { callId, output: 'seen', isError: false } })
                }
                events.push({
                  type: 'assistant/end',
                  data: { messageId: id, finish: a.tool === 'none' ? 'stop' : 'tool-calls' },
                })
                events.push({ type: 'step/end', data: { turn, step, usage: { input: 1, output: 1 } } })
              }
              if (a.end) {
                events.push({ type: 'turn/end', data: { turn, reason: 'completed' } })
                model.endTurn()
              }
              world.append(events)
              break
            }
            case 'rewind': {
              const id = rowAt(a.pick)
              const target = model.byId(id)
              const result = world.history({ type: 'rewind', messageId: id, row: world.rows.get(id) })
              if (!target) expectError(result, 'not_found')
              else if (target.role !== 'user') expectError(result, 'invalid_input')
              else {
                expect(isSessionlineError(result)).toBe(false)
                expect((result as { answer: { text: string } }).answer.text).toMatch(
                  /^(prompt|steer|edited) /,
                )
                if (target.parent !== model.head()) interrupt()
                model.moveHead(target.parent)
              }
              break
            }
            case 'switchBranch': {
              const id = rowAt(a.pick)
              const result = world.history({ type: 'switchBranch', messageId: id })
              if (!model.byId(id)) expectError(result, 'not_found')
              else {
                const to = model.newestUnder(id)
                if (to !== model.head()) interrupt()
                model.moveHead(to)
                expect(isSessionlineError(result)).toBe(false)
              }
              break
            }
            case 'regenerate': {
              const id = rowAt(a.pick)
              const target = model.byId(id)
              const result = world.history({ type: 'regenerate', messageId: id })
              if (!target) expectError(result, 'not_found')
              else if (target.role === 'summary') expectError(result, 'invalid_input')
              else {
                const prompt = model.promptOf(id)
                if (prompt === undefined) expectError(result, 'invalid_state')
                else {
                  interrupt()
                  model.moveHead(prompt)
                  model.startTurn()
                  expect((result as { answer: { turn: number } }).answer.turn).toBe(model.openTurn())
                }
              }
              break
            }
            case 'resend': {
              const id = rowAt(a.pick)
              const target = model.byId(id)
              // Reusing the id of a row is a conflict, whatever row it names.
              const inputId = a.reuse && model.rows.length > 0 ? model.rows[0]!.id : fresh('r')
              const owner = world.rows.get(inputId) ? { kind: 'row' as const, sessionId: SESSION } : undefined
              const result = world.history({
                type: 'resend',
                messageId: id,
                input: { id: inputId, text: `edited ${inputId}` },
                stored: undefined,
                rowOwner: owner,
              })
              if (owner) expectError(result, 'conflict')
              else if (!target) expectError(result, 'not_found')
              else if (target.role !== 'user') expectError(result, 'invalid_input')
              else {
                interrupt()
                model.moveHead(target.parent)
                model.startTurn()
                model.add({ id: inputId, parent: target.parent, role: 'user' })
                const receipt = (result as { answer: { status: string; id: string } }).answer
                expect(receipt).toMatchObject({ id: inputId, status: 'promoted' })
              }
              break
            }
            case 'compact': {
              const head = model.head()
              const through =
                a.through === 'head' ? undefined : a.through === 'none' ? null : rowAt(a.through)
              const id = fresh('s')
              const expectedHead = a.stale ? 'elsewhere' : head
              const result = world.history({
                type: 'compact',
                summary: { id, text: `summary ${id}` },
                throughId: through,
                expectedHead,
                owner: undefined,
              })
              if (a.stale) {
                expectError(result, 'conflict')
                // A summary written for another path never changes the context.
                expect(contextIds(world.state().tree)).toEqual(contextBefore)
              } else if (through === undefined && head === null) expectError(result, 'invalid_state')
              else if (typeof through === 'string' && !model.compactable().includes(through))
                expectError(result, 'invalid_input')
              else {
                expect(isSessionlineError(result)).toBe(false)
                interrupt()
                model.add({
                  id,
                  parent: head,
                  role: 'summary',
                  through: through === undefined ? head : through,
                })
              }
              break
            }
            case 'old': {
              // An old version evolved again must neither change it nor the current tree.
              const version = versions[a.pick % Math.max(versions.length, 1)]
              if (!version) break
              const extra: StoredEvent = {
                type: 'user/message',
                data: { inputId: fresh('x'), text: 'x', delivery: 'queue', source: 'user' },
                sessionId: SESSION,
                seq: 9999,
                at: 1,
              }
              const grown = evolveTree(version.tree, extra)
              expect(visibleIds(grown)).toEqual([...version.visible, extra.data.inputId])
              expect(headOf(grown)).toBe(extra.data.inputId)
              break
            }
          }

          // After every step.
          const tree = world.state().tree
          const visible = visibleIds(tree)
          expect(headOf(tree)).toBe(model.head())
          expect(visible).toEqual(model.visible())
          const shown = new Set(visible)
          for (const row of model.rows) {
            expect(visibilityIn(tree, row.id)).toBe(shown.has(row.id) ? 'visible' : 'inactive')
            const siblings = model.siblings(row)
            expect(branchOf(tree, row.id)).toEqual(
              siblings.length > 1 ? { index: siblings.indexOf(row), count: siblings.length } : undefined,
            )
          }
          const context = contextIds(tree)
          expect(context).toEqual(model.context())
          for (const id of context) expect(shown.has(id)).toBe(true)
          const sent = contextFor(tree, (id) => world.rows.get(id))
          expect(sent.map((r) => r.id)).toEqual(context)
          // The runner's way there, from the visible rows in seq order, is the same context.
          const inSeq = [...world.rows.values()].filter((r) => shown.has(r.id)).sort((x, y) => x.seq - y.seq)
          expect(contextOfVisible(inSeq)).toEqual(sent)
          for (const row of sent)
            for (const part of row.parts)
              if (part.type === 'tool') expect(part.state === 'done' || part.state === 'error').toBe(true)

          // Ids unique; incremental = replay (tree, folds, rows).
          const ids = rowIdsCreated(world.log)
          expect(new Set(ids).size).toBe(ids.length)
          expect(world.rows.size).toBe(ids.length)
          const replayed = replayTree(world.log)
          expect(nodesOf(replayed)).toEqual(nodesOf(tree))
          expect(headOf(replayed)).toBe(headOf(tree))
          expect(foldEvents(initFolds(), world.log).folds).toEqual(world.state().folds)
          expect(foldEvents(initFolds(), world.log).rows).toEqual(
            [...world.rows.values()].sort((x, y) => x.seq - y.seq),
          )
          // A row is born with its place among the siblings it has at birth (the newest of them).
          for (const [id, row] of world.rows)
            if (!known.has(id)) expect(row.branch).toEqual(branchOf(tree, id))
          for (const id of world.rows.keys()) known.add(id)

          // What the engine rewrites between two versions is exactly the difference.
          const previous = versions[versions.length - 1]
          if (previous) {
            const changes = visibilityChanges(previous.tree, tree)
            const was = new Set(previous.visible)
            for (const row of model.rows) {
              const change = changes.find((c) => c.id === row.id)
              const before = was.has(row.id)
                ? 'visible'
                : nodesOf(previous.tree).some((n) => n.id === row.id)
                  ? 'inactive'
                  : 'visible'
              const after = shown.has(row.id) ? 'visible' : 'inactive'
              expect(change?.visibility ?? before).toBe(after)
            }
          }
          versions.push({ tree, visible, context })
        }
        // Every earlier version still answers as it did.
        for (const v of versions) {
          expect(visibleIds(v.tree)).toEqual(v.visible)
          expect(contextIds(v.tree)).toEqual(v.context)
        }
      }),
      { seed: 33, numRuns: 300 },
    )
  })
})

describe('contextFor', () => {
  test('a call that never returned reaches the model with an error result, never alone', () => {
    const world = createWorld()
    world.append([
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'user/message', data: { inputId: 'u', text: 'go', delivery: 'queue', source: 'user' } },
      { type: 'step/start', data: { turn: 1, step: 1 } },
      { type: 'assistant/start', data: { messageId: 'a', turn: 1, step: 1 } },
      { type: 'tool/call', data: { messageId: 'a', callId: 'c', name: 'look', input: {} } },
      { type: 'turn/end', data: { turn: 1, reason: 'aborted' } },
    ])
    expect(world.rows.get('a')!.parts[0]).toMatchObject({ state: 'interrupted' })
    const [, answer] = contextFor(world.state().tree, (id) => world.rows.get(id))
    expect(answer!.parts[0]).toMatchObject({ state: 'error', isError: true, output: UNANSWERED_CALL })
  })

  test('rows marked excludedFromContext or hidden are shown but not sent', () => {
    const world = createWorld()
    world.append([
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'user/message', data: { inputId: 'u', text: 'go', delivery: 'queue', source: 'user' } },
      { type: 'user/message', data: { inputId: 'v', text: 'more', delivery: 'steer', source: 'user' } },
      { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
    ])
    const rows = new Map(world.rows)
    rows.set('u', { ...rows.get('u')!, excludedFromContext: true })
    expect(contextFor(world.state().tree, (id) => rows.get(id)).map((r) => r.id)).toEqual(['v'])
    rows.set('v', { ...rows.get('v')!, visibility: 'hidden' })
    expect(contextFor(world.state().tree, (id) => rows.get(id))).toEqual([])
  })
})
