/**
 * The history verbs through the engine's public API (in process and through Comlink, on
 * fake-indexeddb): rewind, resend, regenerate, switchBranch and context over a host-driven
 * session. What the engine stores must equal what a plain replay of its own log derives (rows
 * from the transcript fold, visibility from the tree), and a cold engine on the same database
 * must read the same rows and context.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { branchOf, contextIds, replayTree, visibleIds } from '../../src/core/history-tree'
import { replayTranscript } from '../../src/core/transcript'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { ROWS_PER_REQUEST } from '../../src/store/transactions'
import { ownFixtures, sharedTranscripts } from '../import/fixture-paths'
import { engineKinds, inProcessEngine } from '../support/engines'
import { changeFeed } from '../support/feed'

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isSessionlineError(error)) return error.code
    throw error
  }
  throw new Error('expected a SessionlineError')
}

const answer = (turn: number, step: number, messageId: string, text: string): SessionEvent[] => [
  { type: 'step/start', data: { turn, step } },
  { type: 'assistant/start', data: { messageId, turn, step } },
  { type: 'assistant/delta', data: { messageId, text } },
  { type: 'assistant/end', data: { messageId, finish: 'stop', usage: { input: 10, output: 3 } } },
  { type: 'step/end', data: { turn, step, usage: { input: 10, output: 3 } } },
]

/** A prompt admitted, promoted and answered by the host; the turn is the session's next. */
async function exchange(engine: Engine, sessionId: string, id: string, text: string, reply: string) {
  await engine.admit(sessionId, { id, text, delivery: 'queue' })
  const [row] = await engine.promote(sessionId, 'settled')
  await engine.append(sessionId, [
    ...answer(row!.turn, 1, `${id}-answer`, reply),
    { type: 'turn/end', data: { turn: row!.turn, reason: 'completed' } },
  ])
}

const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id)
const allRows = async (engine: Engine, sessionId: string) =>
  (await engine.page(sessionId, { limit: 1000, includeInactive: true })).messages
const shown = async (engine: Engine, sessionId: string) =>
  ids((await engine.page(sessionId, { limit: 1000 })).messages)

/** What a plain replay of the session's log says every row should be. */
async function replayed(engine: Engine, sessionId: string) {
  const log = await engine.events(sessionId)
  const tree = replayTree(log)
  const visible = new Set(visibleIds(tree))
  const rows = replayTranscript(log).map((row) => ({
    ...row,
    visibility: visible.has(row.id) ? 'visible' : 'inactive',
  }))
  return { rows, context: contextIds(tree) }
}

/** Stored rows without `branch`, which the replay's rows do not carry. */
const withoutBranch = (rows: readonly SessionMessage[]) => rows.map(({ branch: _, ...row }) => row)

describe.each(engineKinds)('history verbs, engine %s', (_, makeEngine) => {
  test('rewind, resend, switchBranch and regenerate move the head; rows and context follow it', async () => {
    const { engine, close, dbName } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      await exchange(engine, 's', 'u2', 'second', 'two')
      expect(await shown(engine, 's')).toEqual(['u1', 'u1-answer', 'u2', 'u2-answer'])

      // Rewind: the prompt and what followed it go inactive; its text comes back.
      expect(await engine.rewind('s', 'u2')).toEqual({ text: 'second' })
      expect(await shown(engine, 's')).toEqual(['u1', 'u1-answer'])
      expect((await allRows(engine, 's')).map((r) => [r.id, r.visibility])).toEqual([
        ['u1', 'visible'],
        ['u1-answer', 'visible'],
        ['u2', 'inactive'],
        ['u2-answer', 'inactive'],
      ])
      expect(ids((await engine.context('s')).rows)).toEqual(['u1', 'u1-answer'])
      // The rail follows the head: turn 2 is off the active path.
      const marks = async () =>
        (await engine.outline('s')).entries.map((e) => [e.turn, e.visibility ?? 'visible'])
      expect(await marks()).toEqual([
        [1, 'visible'],
        [2, 'inactive'],
      ])

      // Resend the first prompt: a sibling of it, in a turn of its own that the host answers.
      const receipt = await engine.resend('s', 'u1', { text: 'first, edited', id: 'u1b' })
      expect(receipt).toMatchObject({ id: 'u1b', status: 'promoted', text: 'first, edited' })
      // The same id and text again: the same receipt, nothing written.
      const head = (await engine.getSession('s'))!.headSeq
      expect(await engine.resend('s', 'u1', { text: 'first, edited', id: 'u1b' })).toEqual(receipt)
      expect((await engine.getSession('s'))!.headSeq).toBe(head)
      await engine.append('s', [
        ...answer(3, 1, 'a3', 'edited answer'),
        { type: 'turn/end', data: { turn: 3, reason: 'completed' } },
      ])
      expect(await shown(engine, 's')).toEqual(['u1b', 'a3'])
      expect(await marks()).toEqual([
        [1, 'inactive'],
        [2, 'inactive'],
        [3, 'visible'],
      ])
      expect((await engine.projection('s', 'turnOutline')).map((e) => e.visibility ?? 'visible')).toEqual([
        'inactive',
        'inactive',
        'visible',
      ])
      const rows = await allRows(engine, 's')
      expect(rows.find((r) => r.id === 'u1')!.branch).toEqual({ index: 0, count: 2 })
      expect(rows.find((r) => r.id === 'u1b')!.branch).toEqual({ index: 1, count: 2 })

      // Switch back: the newest path through u1 is the one that ends at u2's answer.
      await engine.switchBranch('s', 'u1')
      expect(await shown(engine, 's')).toEqual(['u1', 'u1-answer', 'u2', 'u2-answer'])
      expect(await marks()).toEqual([
        [1, 'visible'],
        [2, 'visible'],
        [3, 'inactive'],
      ])

      // Regenerate u2's answer: a turn opens under u2 for the host to answer.
      await engine.regenerate('s', 'u2-answer')
      await engine.append('s', [
        ...answer(4, 1, 'a4', 'two again'),
        { type: 'turn/end', data: { turn: 4, reason: 'completed' } },
      ])
      expect(await shown(engine, 's')).toEqual(['u1', 'u1-answer', 'u2', 'a4'])
      // The new answer is born second of two; the old one learns it when shown again.
      expect((await allRows(engine, 's')).find((r) => r.id === 'a4')!.branch).toEqual({ index: 1, count: 2 })
      expect(ids((await engine.context('s')).rows)).toEqual(['u1', 'u1-answer', 'u2', 'a4'])

      // Incremental = replay, and a cold engine on the same database agrees.
      const expected = await replayed(engine, 's')
      expect(withoutBranch(await allRows(engine, 's'))).toEqual(expected.rows)
      expect(ids((await engine.context('s')).rows)).toEqual(expected.context)
      const cold = await inProcessEngine({ dbName, now: () => 1_000 })
      try {
        expect(await allRows(cold.engine, 's')).toEqual(await allRows(engine, 's'))
        expect(await cold.engine.context('s')).toEqual(await engine.context('s'))
      } finally {
        await cold.close()
      }
    } finally {
      await close()
    }
  })

  test('compact replaces the path with a summary; a rewind before it brings the rows back', async () => {
    const { engine, close, dbName } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      await exchange(engine, 's', 'u2', 'second', 'two')
      const u1Answer = (await allRows(engine, 's')).find((r) => r.id === 'u1-answer')!
      // Through the first exchange: its rows give way to the summary; the second stays.
      const summary = await engine.compact('s', { throughSeq: u1Answer.seq, summary: 'They said hello.' })
      expect(summary).toMatchObject({
        role: 'summary',
        visibility: 'visible',
        parts: [{ type: 'text', text: 'They said hello.' }],
      })
      expect(await shown(engine, 's')).toEqual(['u2', 'u2-answer', summary.id])
      expect(ids((await engine.context('s')).rows)).toEqual([summary.id, 'u2', 'u2-answer'])
      await exchange(engine, 's', 'u3', 'third', 'three')
      expect(ids((await engine.context('s')).rows)).toEqual([
        summary.id,
        'u2',
        'u2-answer',
        'u3',
        'u3-answer',
      ])
      // A second compaction covers the first with its kept rows.
      const second = await engine.compact('s', { summary: 'All of it.' })
      expect(await shown(engine, 's')).toEqual([second.id])
      expect(ids((await engine.context('s')).rows)).toEqual([second.id])
      // Rewinding to before both compactions: exactly the rows before u2, nothing lost, nothing resurrected.
      await engine.rewind('s', 'u2')
      expect(await shown(engine, 's')).toEqual(['u1', 'u1-answer'])
      expect(ids((await engine.context('s')).rows)).toEqual(['u1', 'u1-answer'])
      // And back onto the compacted branch.
      await engine.switchBranch('s', 'u2')
      expect(ids((await engine.context('s')).rows)).toEqual([second.id])
      expect(await codeOf(engine.compact('s', { throughSeq: u1Answer.seq, summary: 'x' }))).toBe(
        'invalid_input',
      )
      // Without a summary the provider writes it: a host-driven engine has none to ask.
      expect(await codeOf(engine.compact('s', {}))).toBe('invalid_state')

      const expected = await replayed(engine, 's')
      expect(withoutBranch(await allRows(engine, 's'))).toEqual(expected.rows)
      expect(ids((await engine.context('s')).rows)).toEqual(expected.context)
      const cold = await inProcessEngine({ dbName, now: () => 1_000 })
      try {
        expect(await allRows(cold.engine, 's')).toEqual(await allRows(engine, 's'))
        expect(await cold.engine.context('s')).toEqual(await engine.context('s'))
      } finally {
        await cold.close()
      }
    } finally {
      await close()
    }
  })

  test('fork copies the visible path into a native session that continues on its own', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's', title: 'Source' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      await exchange(engine, 's', 'u2', 'second', 'two')
      await engine.rewind('s', 'u2')
      await engine.admit('s', { id: 'u3', text: 'third', delivery: 'queue' })
      await engine.promote('s', 'settled')
      await engine.append('s', [
        { type: 'step/start', data: { turn: 3, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'a3', turn: 3, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'a3', reasoning: 'hmm', text: 'looking' } },
        { type: 'tool/call', data: { messageId: 'a3', callId: 'c', name: 'look', input: { at: 1 } } },
        { type: 'tool/result', data: { callId: 'c', output: 'seen', isError: false } },
        { type: 'assistant/end', data: { messageId: 'a3', finish: 'tool-calls' } },
        { type: 'step/end', data: { turn: 3, step: 1 } },
        { type: 'turn/end', data: { turn: 3, reason: 'completed' } },
      ])
      const a1 = (await allRows(engine, 's')).find((r) => r.id === 'u1-answer')!
      await engine.compact('s', { throughSeq: a1.seq, summary: 'They greeted.' })
      const sourceLog = await engine.events('s')
      const sourceContext = (await engine.context('s')).rows

      const forked = await engine.fork('s', { id: 'f' })
      expect(forked).toMatchObject({ id: 'f', title: 'Source', source: 'native' })
      const context = (await engine.context('f')).rows
      const shape = (rows: readonly SessionMessage[]) => rows.map((r) => [r.role, r.parts, r.status])
      expect(shape(context)).toEqual(shape(sourceContext))
      expect(context.every((r) => !sourceContext.some((o) => o.id === r.id))).toBe(true)
      expect((await allRows(engine, 'f')).every((r) => r.visibility === 'visible')).toBe(true)
      expect(await engine.events('s')).toEqual(sourceLog)
      // The fork is a session like any other: it takes new prompts and history verbs.
      await exchange(engine, 'f', 'fu', 'more', 'sure')
      expect(ids((await engine.context('f')).rows).slice(-2)).toEqual(['fu', 'fu-answer'])
      await engine.rewind('f', 'fu')

      // Through a seq: the visible rows at or below it.
      const u3 = (await allRows(engine, 's')).find((r) => r.id === 'u3')!
      await engine.fork('s', { id: 'g', throughSeq: u3.seq, title: 'Part' })
      expect((await allRows(engine, 'g')).map((r) => [r.role, r.parts])).toEqual([
        ['user', [{ type: 'text', text: 'third' }]],
      ])

      expect(await codeOf(engine.fork('s', { id: 'f' }))).toBe('conflict')
      expect(await codeOf(engine.fork('missing', { id: 'h' }))).toBe('not_found')
      expect(await engine.getSession('h')).toBeUndefined()
    } finally {
      await close()
    }
  })

  test('an imported Pi tree forks into a native session holding its visible rows', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      const text = readFileSync(path.join(ownFixtures, 'pi/tree-v3-branch-compaction.jsonl'), 'utf8')
      const imported = await engine.importTranscript({ text, name: 'tree.jsonl' })
      const visible = (await allRows(engine, imported.id)).filter(
        (r) => r.visibility === 'visible' && r.role !== 'system' && !r.excludedFromContext,
      )
      // By hand from the file: the leaf line names d2, so the path is a1 a2 a3 b1 b2 b3 b4 c1 d1 d2;
      // compaction c1 keeps from b2, so Pi sends c1's summary, b2 (its tool result b3 rides on
      // it), b4 (a custom message with display false: hidden, so left out here), d1 and d2.
      // a1-a4, the branch summary b1 and the sibling answer e1 are inactive.
      expect(visible.map((r) => [r.id, r.role])).toEqual([
        ['pi:fx-tree-v3/c1', 'summary'],
        ['pi:fx-tree-v3/b2', 'assistant'],
        ['pi:fx-tree-v3/d1', 'user'],
        ['pi:fx-tree-v3/d2', 'assistant'],
      ])
      // The import's context is what Pi sends at its leaf; its history verbs but switchBranch
      // (test/engine/imported-switch.test.ts) are refused.
      expect(ids((await engine.context(imported.id)).rows)).toEqual(ids(visible))
      expect(await codeOf(engine.rewind(imported.id, 'pi:fx-tree-v3/d1'))).toBe('invalid_state')
      const forked = await engine.fork(imported.id, { id: 'continued' })
      expect(forked.source).toBe('native')
      const rows = (await engine.page('continued', { limit: 1000 })).messages
      const texts = (list: readonly SessionMessage[]) =>
        list.map((r) => [
          r.role,
          r.parts.map((p) => (p.type === 'tool' ? p.callId : 'text' in p ? p.text : '')).join('|'),
        ])
      expect(texts(rows)).toEqual(texts(visible))
      // The fork's context leads with the summary, as Pi's did.
      expect((await engine.context('continued')).rows.map((r) => r.role)).toEqual([
        'summary',
        'assistant',
        'user',
        'assistant',
      ])
      await exchange(engine, 'continued', 'next', 'go on', 'going')
      expect(ids((await engine.context('continued')).rows).slice(-2)).toEqual(['next', 'next-answer'])
    } finally {
      await close()
    }
  })

  test('a long import forks whole while other sessions write beside it', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      // A real Pi file of 990 message lines (tool results ride on their calls' rows): its rows
      // span several requests of ROWS_PER_REQUEST, so the fork reads them in a chain of requests
      // and must still write in its own transaction while other sessions' writes interleave.
      const text = readFileSync(path.join(sharedTranscripts, 'pi/pi-mono__before-compaction.jsonl'), 'utf8')
      const imported = await engine.importTranscript({ text, name: 'pi-mono.jsonl' })
      const visible = (await engine.loadThrough(imported.id, { seq: 1, pageSize: 1 })).messages
      expect(visible.length).toBeGreaterThan(2 * ROWS_PER_REQUEST)
      const busy = ['busy-1', 'busy-2', 'busy-3']
      for (const id of busy) await engine.createSession({ id })
      const [forked] = await Promise.all([
        engine.fork(imported.id, { id: 'whole' }),
        ...busy.map((id) => exchange(engine, id, `${id}-u`, 'busy', 'done')),
      ])
      expect(forked.source).toBe('native')
      const copied = (await engine.loadThrough('whole', { seq: 1, pageSize: 1 })).messages
      const texts = (list: readonly SessionMessage[]) =>
        list.map((r) => [r.role, r.parts.map((p) => ('text' in p ? p.text : p.type)).join('|')])
      expect(texts(copied)).toEqual(texts(visible.filter((r) => r.visibility === 'visible')))
      for (const id of busy) expect(await shown(engine, id)).toEqual([`${id}-u`, `${id}-u-answer`])
    } finally {
      await close()
    }
  })

  test('a verb while a turn runs ends it interrupted; pending inputs stay pending', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      await engine.admit('s', { id: 'u2', text: 'second', delivery: 'queue' })
      await engine.promote('s', 'settled')
      await engine.append('s', [
        { type: 'step/start', data: { turn: 2, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'a2', turn: 2, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'a2', text: 'half an ans' } },
        { type: 'tool/call', data: { messageId: 'a2', callId: 'c', name: 'look', input: {} } },
      ])
      await engine.admit('s', { id: 'later', text: 'queued meanwhile', delivery: 'queue' })
      expect(await engine.rewind('s', 'u2')).toEqual({ text: 'second' })
      const log = await engine.events('s')
      const ends = log.filter((e) => e.type === 'turn/end')
      expect(ends[ends.length - 1]!.data).toEqual({ turn: 2, reason: 'interrupted' })
      expect(log[log.length - 1]!.type).toBe('history/head')
      expect(ids(await engine.pending('s'))).toEqual(['later'])
      const a2 = (await allRows(engine, 's')).find((r) => r.id === 'a2')!
      expect(a2).toMatchObject({ status: 'interrupted', visibility: 'inactive' })
      // The next prompt opens its turn on the rewound head.
      await engine.promote('s', 'settled')
      expect(await shown(engine, 's')).toEqual(['u1', 'u1-answer', 'later'])
      // A prompt typed after a rewind is the rewound prompt's sibling from its first commit.
      expect((await allRows(engine, 's')).find((r) => r.id === 'later')!.branch).toEqual({
        index: 1,
        count: 2,
      })
      await engine.switchBranch('s', 'u2')
      const rows = await allRows(engine, 's')
      expect(rows.find((r) => r.id === 'u2')!.branch).toEqual({ index: 0, count: 2 })
    } finally {
      await close()
    }
  })

  test('refusals are typed and write nothing', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await engine.createSession({ id: 'other' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      await exchange(engine, 'other', 'o1', 'elsewhere', 'there')
      const before = await engine.events('s')
      expect(await codeOf(engine.rewind('s', 'u1-answer'))).toBe('invalid_input')
      expect(await codeOf(engine.rewind('s', 'o1'))).toBe('not_found')
      expect(await codeOf(engine.rewind('missing', 'u1'))).toBe('not_found')
      expect(await codeOf(engine.switchBranch('s', 'nope'))).toBe('not_found')
      expect(await codeOf(engine.regenerate('s', 'o1-answer'))).toBe('not_found')
      expect(await codeOf(engine.resend('s', 'u1', { text: '  ' }))).toBe('invalid_input')
      expect(await codeOf(engine.resend('s', 'u1', { text: 'x', id: 'o1' }))).toBe('conflict')
      expect(await codeOf(engine.resend('s', 'u1', { text: 'x', id: 'u1-answer' }))).toBe('conflict')
      expect(
        await codeOf(engine.append('s', [{ type: 'history/head', data: { head: null, cause: 'rewind' } }])),
      ).toBe('invalid_input')
      expect(await engine.events('s')).toEqual(before)
      // Switching to the branch already shown writes nothing either.
      await engine.switchBranch('s', 'u1')
      expect(await engine.events('s')).toEqual(before)
    } finally {
      await close()
    }
  })

  test('watchers are told to read again when the head moves', async () => {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      const feed = changeFeed()
      const stop = await engine.watch('s', feed.listener)
      try {
        await engine.rewind('s', 'u1')
        await feed.until((changes) => changes.some((c) => c.reset === true), 'a reset')
        const change = feed.changes.find((c) => c.reset === true)!
        expect(change.rows.map((r) => [r.id, r.visibility])).toEqual([
          ['u1', 'inactive'],
          ['u1-answer', 'inactive'],
        ])
      } finally {
        stop()
      }
    } finally {
      await close()
    }
  })
})

test('another engine on the same database follows the head', async () => {
  const a = await inProcessEngine({ now: () => 1_000 })
  const b = await inProcessEngine({ dbName: a.dbName, now: () => 1_000 })
  try {
    await a.engine.createSession({ id: 's' })
    await exchange(a.engine, 's', 'u1', 'first', 'one')
    await exchange(a.engine, 's', 'u2', 'second', 'two')
    expect(await shown(b.engine, 's')).toEqual(['u1', 'u1-answer', 'u2', 'u2-answer'])
    const feed = changeFeed()
    const stop = await b.engine.watch('s', feed.listener)
    try {
      await a.engine.rewind('s', 'u2')
      await feed.until((changes) => changes.some((c) => c.reset === true), 'a reset from the other engine')
      expect(await shown(b.engine, 's')).toEqual(['u1', 'u1-answer'])
      // b's own verb starts from the head a moved.
      await b.engine.switchBranch('s', 'u2')
      expect(await shown(a.engine, 's')).toEqual(['u1', 'u1-answer', 'u2', 'u2-answer'])
      expect(await a.engine.context('s')).toEqual(await b.engine.context('s'))
    } finally {
      stop()
    }
  } finally {
    await b.close()
    await a.close()
  }
})

/**
 * Random sequences of prompts (answered, or left running), steers and every verb on one engine:
 * after each sequence the stored rows equal a replay of the engine's own log (transcript rows,
 * visibility from the tree), the context is the replay's, row ids are unique, seqs dense, every
 * acknowledged input is in the log once, and a cold engine on the same database reads the same.
 */
test('random verb sequences: stored = replay, and a cold engine agrees', async () => {
  type Act =
    | { type: 'exchange'; open: boolean }
    | { type: 'rewind' | 'regenerate' | 'switchBranch' | 'resend' | 'compact'; pick: number }
  const act: fc.Arbitrary<Act> = fc.oneof(
    fc.record({ type: fc.constant('exchange' as const), open: fc.boolean() }),
    fc.record({
      type: fc.constantFrom(
        'rewind' as const,
        'regenerate' as const,
        'switchBranch' as const,
        'resend' as const,
        'compact' as const,
      ),
      pick: fc.nat(30),
    }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(act, { minLength: 1, maxLength: 14 }), async (acts) => {
      const { engine, dbName, close } = await inProcessEngine({ now: () => 1_000 })
      try {
        await engine.createSession({ id: 's' })
        let n = 0
        const acknowledged: string[] = []
        const openTurn = async () => {
          const log = await engine.events('s')
          let open: number | null = null
          for (const e of log) {
            if (e.type === 'turn/start') open = e.data.turn
            if (e.type === 'turn/end') open = null
          }
          return open
        }
        const finish = async (turn: number, open: boolean) => {
          const id = `a${n++}`
          const step =
            (await engine.events('s')).filter((e) => e.type === 'step/start' && e.data.turn === turn).length +
            1
          await engine.append('s', [
            ...answer(turn, step, id, `answer ${id}`),
            ...(open ? [] : [{ type: 'turn/end', data: { turn, reason: 'completed' } } as SessionEvent]),
          ])
        }
        for (const a of acts) {
          const rows = await allRows(engine, 's')
          const target =
            rows.length === 0 ? 'missing' : rows[a.type === 'exchange' ? 0 : a.pick % rows.length]!.id
          try {
            switch (a.type) {
              case 'exchange': {
                const id = `u${n++}`
                const open = await openTurn()
                // Into a running turn as a steer, else queued for a turn of its own.
                await engine.admit('s', {
                  id,
                  text: `prompt ${id}`,
                  delivery: open === null ? 'queue' : 'steer',
                })
                acknowledged.push(id)
                const [row] = await engine.promote('s', open === null ? 'settled' : 'checkpoint')
                if (row) await finish(row.turn, a.open)
                break
              }
              case 'rewind':
                await engine.rewind('s', target)
                break
              case 'switchBranch':
                await engine.switchBranch('s', target)
                break
              case 'regenerate': {
                await engine.regenerate('s', target)
                await finish((await openTurn())!, false)
                break
              }
              case 'resend': {
                const id = `r${n++}`
                const receipt = await engine.resend('s', target, { id, text: `edited ${id}` })
                acknowledged.push(receipt.id)
                await finish((await openTurn())!, false)
                break
              }
              case 'compact':
                await engine.compact('s', {
                  summary: `summary ${n++}`,
                  throughSeq: rows[a.pick % Math.max(rows.length, 1)]?.seq,
                })
                break
            }
          } catch (error) {
            // Refusals (a verb on the wrong kind of row, nothing to compact) are typed and write nothing.
            if (!isSessionlineError(error)) throw error
          }
        }
        const log = await engine.events('s')
        expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1))
        const stored = await allRows(engine, 's')
        expect(new Set(ids(stored)).size).toBe(stored.length)
        const pending = ids(await engine.pending('s'))
        for (const id of acknowledged) {
          const logged = log.filter((e) => e.type === 'user/message' && e.data.inputId === id).length
          expect(logged + pending.filter((p) => p === id).length, `input ${id}`).toBe(1)
        }
        const expected = await replayed(engine, 's')
        expect(withoutBranch(stored)).toEqual(expected.rows)
        // Every row carries its place among its siblings, on the active path or off it.
        const tree = replayTree(log)
        for (const row of stored) expect(row.branch, `branch of ${row.id}`).toEqual(branchOf(tree, row.id))
        expect(ids((await engine.context('s')).rows)).toEqual(expected.context)
        // The rail: a turn is shown when a row of it is on the active path, or it is running.
        const activeTurns = new Set(stored.filter((r) => r.visibility === 'visible').map((r) => r.turn))
        const running = await openTurn()
        const outline = (await engine.outline('s', { start: 0, end: 1000 })).entries
        for (const entry of outline)
          expect(entry.visibility ?? 'visible', `turn ${entry.turn}`).toBe(
            activeTurns.has(entry.turn) || entry.turn === running ? 'visible' : 'inactive',
          )
        const cold = await inProcessEngine({ dbName, now: () => 1_000 })
        try {
          expect(await allRows(cold.engine, 's')).toEqual(stored)
          expect(await cold.engine.context('s')).toEqual(await engine.context('s'))
          expect((await cold.engine.outline('s', { start: 0, end: 1000 })).entries).toEqual(outline)
        } finally {
          await cold.close()
        }
      } finally {
        await close()
      }
    }),
    { seed: 2033, numRuns: 25 },
  )
}, 120_000)

/**
 * Verbs issued together with other writes, not awaited one by one: on one engine (the verb's
 * transaction beside the write path's batches) and on two engines sharing the database. Each
 * call either commits or is refused with a typed error; afterwards the stored rows equal a replay
 * of the log, and both engines and a cold one read the same rows and context.
 */
test('verbs racing appends and each other, on one engine and on two', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.tuple(
          fc.constantFrom('rewind', 'switch', 'regenerate', 'prompt', 'stream'),
          fc.nat(20),
          fc.boolean(),
        ),
        {
          minLength: 2,
          maxLength: 8,
        },
      ),
      async (calls) => {
        const a = await inProcessEngine({ now: () => 1_000 })
        const b = await inProcessEngine({ dbName: a.dbName, now: () => 1_000 })
        try {
          await a.engine.createSession({ id: 's' })
          await exchange(a.engine, 's', 'u0', 'first', 'one')
          await exchange(a.engine, 's', 'u1', 'second', 'two')
          let n = 0
          const rows = await allRows(a.engine, 's')
          const settle = async (run: () => Promise<unknown>) => {
            try {
              await run()
            } catch (error) {
              // A refusal is typed; an `internal` one is a defect, not a lost race.
              if (!isSessionlineError(error) || error.code === 'internal') throw error
            }
          }
          await Promise.all(
            calls.map(([kind, pick, onB]) => {
              const engine = onB ? b.engine : a.engine
              const target = rows[pick % rows.length]!.id
              const id = `x${n++}`
              switch (kind) {
                case 'rewind':
                  return settle(() => engine.rewind('s', target))
                case 'switch':
                  return settle(() => engine.switchBranch('s', target))
                case 'regenerate':
                  return settle(() => engine.regenerate('s', target))
                case 'prompt':
                  return settle(async () => {
                    await engine.admit('s', { id, text: `prompt ${id}`, delivery: 'queue' })
                    await engine.promote('s', 'settled')
                  })
                default:
                  // A host streaming into whatever turn is open when it looks.
                  return settle(async () => {
                    const log = await engine.events('s')
                    const open = log.filter((e) => e.type === 'turn/start').at(-1)
                    const ended = log.some(
                      (e) =>
                        e.type === 'turn/end' &&
                        e.data.turn === (open?.data as { turn: number } | undefined)?.turn,
                    )
                    if (!open || ended) return
                    const turn = (open.data as { turn: number }).turn
                    const step = log.filter((e) => e.type === 'step/start' && e.data.turn === turn).length + 1
                    await engine.append('s', answer(turn, step, id, `streamed ${id}`))
                  })
              }
            }),
          )
          const log = await a.engine.events('s')
          expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1))
          const expected = await replayed(a.engine, 's')
          const stored = await allRows(a.engine, 's')
          expect(withoutBranch(stored)).toEqual(expected.rows)
          expect(await allRows(b.engine, 's')).toEqual(stored)
          expect(ids((await b.engine.context('s')).rows)).toEqual(expected.context)
          const cold = await inProcessEngine({ dbName: a.dbName, now: () => 1_000 })
          try {
            expect(await allRows(cold.engine, 's')).toEqual(stored)
            expect(await cold.engine.context('s')).toEqual(await a.engine.context('s'))
          } finally {
            await cold.close()
          }
        } finally {
          await b.close()
          await a.close()
        }
      },
    ),
    { seed: 4033, numRuns: 20 },
  )
}, 120_000)
