import { describe, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { MAX_INPUT_TEXT } from '../../src/schema/common'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import { engineKinds } from '../support/engines'
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

describe.each(engineKinds)('engine %s', (_, makeEngine) => {
  async function withEngine(run: (engine: Engine) => Promise<void>) {
    const { engine, close } = await makeEngine({ now: () => 1_000 })
    try {
      await run(engine)
    } finally {
      await close()
    }
  }

  test('creates, lists and deletes sessions', () =>
    withEngine(async (engine) => {
      const a = await engine.createSession({ id: 'a', title: 'First' })
      expect(a).toMatchObject({ id: 'a', title: 'First', headSeq: 1, nextInputSeq: 1, source: 'native' })
      expect(a).not.toHaveProperty('rev')
      await engine.createSession({ id: 'b' })
      expect((await engine.listSessions()).map((s) => s.id).sort()).toEqual(['a', 'b'])
      expect(await codeOf(engine.createSession({ id: 'a' }))).toBe('conflict')
      await engine.deleteSession('a')
      expect(await engine.getSession('a')).toBeUndefined()
      expect(await codeOf(engine.admit('a', { text: 'x' }))).toBe('not_found')
      expect(await codeOf(engine.deleteSession('a'))).toBe('not_found')
    }))

  test('admit is idempotent by id and conflicts on a changed payload', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const first = await engine.admit(id, { id: 'in-1', text: 'hello' })
      expect(first).toMatchObject({
        id: 'in-1',
        seq: 1,
        delivery: 'steer',
        status: 'pending',
        admittedAt: 1_000,
      })
      expect(await engine.admit(id, { id: 'in-1', text: 'hello' })).toEqual(first)
      expect(await codeOf(engine.admit(id, { id: 'in-1', text: 'other' }))).toBe('conflict')
      expect(await codeOf(engine.admit(id, { id: 'in-1', text: 'hello', delivery: 'queue' }))).toBe(
        'conflict',
      )
      // The same id and payload in another session is another input's id: a conflict there too.
      const other = await engine.createSession()
      expect(await codeOf(engine.admit(other.id, { id: 'in-1', text: 'hello' }))).toBe('conflict')
      expect((await engine.getSession(other.id))?.nextInputSeq).toBe(1)
      const second = await engine.admit(id, { text: 'again', delivery: 'queue' })
      expect(second.seq).toBe(2)
      expect((await engine.pending(id)).map((r) => r.id)).toEqual(['in-1', second.id])
      // A retry after the input left the inbox answers with the stored receipt, and admits nothing.
      await engine.promote(id, 'settled')
      const promoted = await engine.admit(id, { id: 'in-1', text: 'hello' })
      expect(promoted).toMatchObject({ id: 'in-1', seq: 1, status: 'promoted' })
      expect((await engine.getSession(id))?.nextInputSeq).toBe(3)
    }))

  test('admit rejects unknown sessions and bad text, writing nothing', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      expect(await codeOf(engine.admit('nope', { text: 'x' }))).toBe('not_found')
      expect(await codeOf(engine.admit(id, { text: '   ' }))).toBe('invalid_input')
      expect(await codeOf(engine.admit(id, { text: 'x'.repeat(MAX_INPUT_TEXT + 1) }))).toBe('invalid_input')
      expect(await codeOf(engine.admit(id, { text: 'x', delivery: 'later' as 'queue' }))).toBe(
        'invalid_input',
      )
      expect(await engine.pending(id)).toEqual([])
      expect((await engine.getSession(id))?.nextInputSeq).toBe(1)
    }))

  test('errors keep their code, message and details', () =>
    withEngine(async (engine) => {
      const error = await engine.admit('missing', { text: 'x' }).catch((e: unknown) => e)
      expect(isSessionlineError(error)).toBe(true)
      expect(error).toMatchObject({ code: 'not_found', details: { sessionId: 'missing' } })
      expect((error as Error).message).toContain('missing')
    }))

  test('cancel and edit touch pending inputs only', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const a = await engine.admit(id, { text: 'a' })
      const b = await engine.admit(id, { text: 'b' })
      expect(await engine.edit(id, a.id, { text: 'a2' })).toMatchObject({ text: 'a2', status: 'pending' })
      expect(await engine.cancel(id, b.id)).toMatchObject({ status: 'cancelled' })
      expect(await codeOf(engine.cancel(id, b.id))).toBe('invalid_state')
      expect(await codeOf(engine.edit(id, b.id, { text: 'zz' }))).toBe('invalid_state')
      expect(await codeOf(engine.cancel(id, 'ghost'))).toBe('not_found')
      expect(await codeOf(engine.edit(id, 'ghost', { text: 'zz' }))).toBe('not_found')
      // Another session's pending input is not this session's to touch.
      const other = await engine.createSession()
      const theirs = await engine.admit(other.id, { text: 'theirs' })
      expect(await codeOf(engine.cancel(id, theirs.id))).toBe('not_found')
      expect(await codeOf(engine.edit(id, theirs.id, { text: 'mine now' }))).toBe('not_found')
      expect(await engine.pending(other.id)).toEqual([theirs])
      await engine.promote(id, 'settled')
      expect(await codeOf(engine.edit(id, a.id, { text: 'late' }))).toBe('invalid_state')
      expect(await codeOf(engine.cancel(id, a.id))).toBe('invalid_state')
      expect((await engine.page(id)).messages.map((m) => m.parts)).toEqual([[{ type: 'text', text: 'a2' }]])
      expect(await engine.pending(id)).toEqual([])
    }))

  test('every receipt carries a revision that each edit, cancel and promotion bumps, also within one millisecond', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const a = await engine.admit(id, { id: 'a', text: 'one' })
      const b = await engine.admit(id, { id: 'b', text: 'other' })
      expect([a.revision, b.revision]).toEqual([0, 0])
      // The clock stands still (1 000 ms): only the revision tells these versions apart.
      const edits = [
        await engine.edit(id, 'a', { text: 'two' }),
        await engine.edit(id, 'a', { text: 'two' }), // same text: no change, no new revision
        await engine.edit(id, 'a', { text: 'three' }),
      ]
      expect(edits.map((r) => [r.text, r.revision, r.updatedAt])).toEqual([
        ['two', 1, 1_000],
        ['two', 1, 1_000],
        ['three', 2, 1_000],
      ])
      expect((await engine.cancel(id, 'b')).revision).toBe(1)
      await engine.promote(id, 'settled')
      expect(await engine.pending(id)).toEqual([])
      const feed = changeFeed()
      await engine.watch(id, feed.listener)
      const c = await engine.admit(id, { id: 'c', text: 'queued', delivery: 'queue' })
      await engine.edit(id, 'c', { text: 'queued, edited' })
      await feed.until((changes) => changes.flatMap((x) => x.inputs).some((r) => r.revision === 1))
      expect(feed.changes.flatMap((x) => x.inputs).map((r) => [r.id, r.revision])).toEqual([
        [c.id, 0],
        [c.id, 1],
      ])
    }))

  test('promote settled opens a turn and takes the pending steers', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const q = await engine.admit(id, { text: 'queued', delivery: 'queue' })
      const s1 = await engine.admit(id, { text: 'one' })
      const s2 = await engine.admit(id, { text: 'two' })
      const rows = await engine.promote(id, 'settled')
      expect(rows.map((r) => [r.id, r.seq, r.turn, r.role, r.source])).toEqual([
        [s1.id, 3, 1, 'user', 'user'],
        [s2.id, 4, 1, 'user', 'user'],
      ])
      const events = await engine.events(id)
      expect(events.map((e) => [e.seq, e.type])).toEqual([
        [1, 'session/created'],
        [2, 'turn/start'],
        [3, 'user/message'],
        [4, 'user/message'],
      ])
      expect((await engine.pending(id)).map((r) => r.id)).toEqual([q.id])
      expect(await codeOf(engine.promote(id, 'settled'))).toBe('invalid_state')
      await engine.append(id, [
        ...answer(1, 1, 'm1', 'hi'),
        { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
      ])
      const next = await engine.promote(id, 'settled')
      expect(next.map((r) => [r.id, r.turn])).toEqual([[q.id, 2]])
      expect(await engine.pending(id)).toEqual([])
    }))

  test('promote settled takes the oldest queued input only', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const q1 = await engine.admit(id, { text: 'q1', delivery: 'queue' })
      await engine.admit(id, { text: 'q2', delivery: 'queue' })
      expect((await engine.promote(id, 'settled')).map((r) => r.id)).toEqual([q1.id])
    }))

  test('promote checkpoint needs an open turn and takes every pending steer', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      await engine.admit(id, { text: 'start' })
      expect(await codeOf(engine.promote(id, 'checkpoint'))).toBe('invalid_state')
      await engine.promote(id, 'settled')
      expect(await engine.promote(id, 'checkpoint')).toEqual([])
      const head = (await engine.getSession(id))?.headSeq
      const a = await engine.admit(id, { text: 'a' })
      await engine.admit(id, { text: 'queued', delivery: 'queue' })
      const b = await engine.admit(id, { text: 'b' })
      const rows = await engine.promote(id, 'checkpoint')
      expect(rows.map((r) => r.id)).toEqual([a.id, b.id])
      expect(rows.map((r) => r.seq)).toEqual([(head ?? 0) + 1, (head ?? 0) + 2])
      const receipts = await engine.events(id, { afterSeq: head })
      expect(receipts.every((e) => e.type === 'user/message')).toBe(true)
    }))

  test('promoted receipts record the seq of their event', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const a = await engine.admit(id, { text: 'a' })
      const feed = changeFeed()
      const stop = await engine.watch(id, feed.listener)
      const [row] = await engine.promote(id, 'settled')
      await feed.until((changes) => changes.some((c) => c.inputs.some((r) => r.status === 'promoted')))
      stop()
      const promoted = feed.changes.flatMap((c) => c.inputs).find((r) => r.id === a.id)
      expect(promoted).toMatchObject({ status: 'promoted', promotedSeq: row?.seq })
    }))

  test('append validates every event first and writes all or nothing', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      await engine.admit(id, { text: 'go' })
      await engine.promote(id, 'settled')
      const before = await engine.events(id)
      const bad = [
        ...answer(1, 1, 'm1', 'x'),
        { type: 'turn/end', data: { turn: 9, reason: 'completed' } },
      ] as SessionEvent[]
      const error = await engine.append(id, bad).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'invalid_state', details: { index: 5 } })
      expect(await codeOf(engine.append(id, [{ type: 'nope', data: {} } as unknown as SessionEvent]))).toBe(
        'invalid_input',
      )
      expect(await engine.events(id)).toEqual(before)
      expect((await engine.page(id)).messages).toHaveLength(1)
      const { headSeq } = await engine.append(id, answer(1, 1, 'm1', 'x'))
      expect(headSeq).toBe(before.length + 5)
      expect(await engine.append(id, [])).toEqual({ headSeq })
    }))

  test('rows carry the seq of the event that created them and stream in place', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      await engine.admit(id, { id: 'go', text: 'go' })
      await engine.promote(id, 'settled')
      await engine.append(id, [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'm1', text: 'Hel' } },
      ])
      await engine.append(id, [
        { type: 'assistant/delta', data: { messageId: 'm1', text: 'lo' } },
        { type: 'tool/call', data: { messageId: 'm1', callId: 'c1', name: 'read', input: { path: 'a' } } },
        { type: 'assistant/end', data: { messageId: 'm1', finish: 'tool-calls' } },
        { type: 'tool/result', data: { callId: 'c1', output: 'ok', isError: false } },
      ])
      const { messages } = await engine.page(id)
      expect(messages.map((m) => [m.id, m.seq])).toEqual([
        ['go', 3],
        ['m1', 5],
      ])
      expect(messages[1]?.parts).toEqual([
        { type: 'text', text: 'Hello' },
        {
          type: 'tool',
          callId: 'c1',
          name: 'read',
          input: { path: 'a' },
          output: 'ok',
          isError: false,
          state: 'done',
        },
      ])
      expect(
        await codeOf(
          engine.append(id, [{ type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } }]),
        ),
      ).toBe('conflict')
    }))

  test('page serves the newest rows below beforeSeq, ascending, within limits', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      for (let i = 1; i <= 7; i++) {
        await engine.admit(id, { id: `u${i}`, text: `msg ${i}` })
        await engine.promote(id, 'settled')
        await engine.append(id, [{ type: 'turn/end', data: { turn: i, reason: 'completed' } }])
      }
      const tail = await engine.page(id, { limit: 3 })
      expect(tail.messages.map((m) => m.id)).toEqual(['u5', 'u6', 'u7'])
      expect(tail).toMatchObject({ hasOlder: true, baseSeq: tail.messages[0]?.seq, headSeq: 22 })
      const older = await engine.page(id, { beforeSeq: tail.baseSeq, limit: 3 })
      expect(older.messages.map((m) => m.id)).toEqual(['u2', 'u3', 'u4'])
      const oldest = await engine.page(id, { beforeSeq: older.baseSeq, limit: 3 })
      expect(oldest).toMatchObject({ hasOlder: false })
      expect(oldest.messages.map((m) => m.id)).toEqual(['u1'])
      expect(await codeOf(engine.page(id, { limit: 1001 }))).toBe('invalid_input')
      expect((await engine.page(id, { limit: 1000 })).messages).toHaveLength(7)
      const through = await engine.loadThrough(id, { seq: older.messages[1]?.seq ?? 0, pageSize: 2 })
      expect(through.messages.map((m) => m.id)).toEqual(['u2', 'u3', 'u4', 'u5', 'u6', 'u7'])
      expect(through.hasOlder).toBe(true)
      const all = await engine.loadThrough(id, { seq: 0 })
      expect(all).toMatchObject({ hasOlder: false, baseSeq: all.messages[0]?.seq })
      expect(all.messages).toHaveLength(7)
    }))

  test('projections serve the outline, usage and pending views', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      await engine.admit(id, { text: 'What is   the answer?' })
      await engine.promote(id, 'settled')
      await engine.append(id, [
        ...answer(1, 1, 'm1', 'Forty-two.'),
        { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
      ])
      expect(await engine.projection(id, 'turnOutline')).toEqual([
        { turn: 1, seq: 2, prompt: 'What is the answer?', response: 'Forty-two.' },
      ])
      expect(await engine.projection(id, 'usage')).toEqual({ input: 10, output: 3, calls: 1 })
      const q = await engine.admit(id, { text: 'later', delivery: 'queue' })
      expect(await engine.projection(id, 'pending')).toEqual([q])
      expect(await codeOf(engine.projection(id, 'nope' as 'usage'))).toBe('invalid_input')
    }))

  test('watch pushes committed changes in order and stops after unsubscribe', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const rec = changeFeed()
      const stop = await engine.watch(id, rec.listener)
      const witness = changeFeed()
      await engine.watch(id, witness.listener)
      const a = await engine.admit(id, { text: 'hi' })
      await engine.promote(id, 'settled')
      await engine.append(id, answer(1, 1, 'm1', 'yo'))
      await rec.until((c) => c.length >= 3)
      const [admitted, promoted, appended] = rec.changes
      expect(admitted).toMatchObject({
        durable: true,
        inputs: [{ id: a.id, status: 'pending' }],
        rows: [],
      })
      expect(admitted?.views.pending).toEqual([a])
      expect(promoted?.rows.map((m) => m.id)).toEqual([a.id])
      expect(promoted?.views.pending).toEqual([])
      expect(promoted?.views.outline).toMatchObject({ total: 1, start: 0, entries: [{ turn: 1 }] })
      expect(appended?.rows.map((m) => m.id)).toEqual(['m1'])
      expect(appended?.views.usage).toEqual({ input: 10, output: 3, calls: 1 })
      expect(appended?.views).not.toHaveProperty('pending')
      expect(rec.changes.map((c) => c.headSeq)).toEqual([1, 3, 8])
      stop()
      stop()
      // Final at once, on either side of Comlink: no wait for the unsubscribe to land.
      await engine.admit(id, { text: 'unseen' })
      await witness.until((c) => c.length === 4)
      expect(rec.changes).toHaveLength(3)
    }))

  test('deleteSession tells watchers the session is gone', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      await engine.admit(id, { text: 'x' })
      const rec = changeFeed()
      await engine.watch(id, rec.listener)
      await engine.deleteSession(id)
      await rec.until((c) => c.some((change) => change.deleted))
      expect(await engine.events(id).catch((e: { code: string }) => e.code)).toBe('not_found')
      expect(await engine.listSessions()).toEqual([])
    }))

  test('in its own session, an assistant row never takes the id of a row or a pending input, nor an input or a user row the id of a row', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      await engine.admit(id, { id: 'first', text: 'go' })
      await engine.promote(id, 'settled')
      await engine.admit(id, { id: 'waiting', text: 'later' })
      const head = (await engine.getSession(id))?.headSeq
      const start = (messageId: string): SessionEvent[] => [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId, turn: 1, step: 1 } },
      ]
      expect(await codeOf(engine.append(id, start('first')))).toBe('conflict')
      expect(await codeOf(engine.append(id, start('waiting')))).toBe('conflict')
      const synthetic: SessionEvent = {
        type: 'user/message',
        data: { inputId: 'first', text: 'dup', delivery: 'steer', source: 'synthetic' },
      }
      expect(await codeOf(engine.append(id, [synthetic]))).toBe('conflict')
      expect((await engine.getSession(id))?.headSeq).toBe(head)
      expect(await codeOf(engine.admit(id, { id: 'first', text: 'other' }))).toBe('conflict')
      await engine.append(id, start('m1'))
      expect(await codeOf(engine.admit(id, { id: 'm1', text: 'clash' }))).toBe('conflict')
      expect((await engine.promote(id, 'checkpoint')).map((r) => r.id)).toEqual(['waiting'])
    }))

  test('a row never takes the id of a pending input of any session, nor of another session’s row, nor of a row of the same append: conflict, nothing written', () =>
    withEngine(async (engine) => {
      await engine.createSession({ id: 'a' })
      await engine.createSession({ id: 'b' })
      await engine.admit('a', { id: 'done', text: 'first' })
      await engine.promote('a', 'settled')
      await engine.admit('a', { id: 'waiting', text: 'later' })
      await engine.admit('b', { id: 'b-waiting', text: 'mine' })
      await engine.append('b', [
        { type: 'turn/start', data: { turn: 1 } },
        { type: 'step/start', data: { turn: 1, step: 1 } },
      ])
      const before = { a: await engine.events('a'), b: await engine.events('b') }
      const synthetic = (inputId: string): SessionEvent => ({
        type: 'user/message',
        data: { inputId, text: 'note', delivery: 'steer', source: 'synthetic' },
      })
      const start = (messageId: string): SessionEvent => ({
        type: 'assistant/start',
        data: { messageId, turn: 1, step: 1 },
      })
      const refused: [string, SessionEvent[]][] = [
        ['a user row under a pending input of its own session', [synthetic('b-waiting')]],
        ["a row under another session's pending input (user/message)", [synthetic('waiting')]],
        ["a row under another session's pending input (assistant/start)", [start('waiting')]],
        ["a row under another session's row (user/message)", [synthetic('done')]],
        ["a row under another session's row (assistant/start)", [start('done')]],
        ['two user rows under one id in one append', [synthetic('twin'), synthetic('twin')]],
        ['a user row and an assistant row under one id in one append', [synthetic('pair'), start('pair')]],
      ]
      for (const [what, events] of refused)
        expect(await codeOf(engine.append('b', events)), what).toBe('conflict')
      expect(await engine.events('a')).toEqual(before.a)
      expect(await engine.events('b')).toEqual(before.b)
      expect((await engine.promote('a', 'checkpoint')).map((r) => r.id)).toEqual(['waiting'])
      expect((await engine.promote('b', 'checkpoint')).map((r) => r.id)).toEqual(['b-waiting'])
    }))

  test('session/created is written by createSession only', () =>
    withEngine(async (engine) => {
      const { id } = await engine.createSession()
      const append = engine.append(id, [{ type: 'session/created', data: { title: 'again' } }])
      expect(await codeOf(append)).toBe('invalid_state')
      expect(await engine.events(id)).toHaveLength(1)
    }))

  test('with more sessions than the cache keeps, an evicted session still admits, promotes and counts its inputs', () =>
    withEngine(async (engine) => {
      const ids: string[] = []
      for (let i = 0; i < 70; i++) ids.push((await engine.createSession({ id: `s${i}` })).id)
      for (const id of ids) await engine.admit(id, { id: `in-${id}`, text: id })
      for (const id of ids.slice(0, 3)) {
        expect((await engine.promote(id, 'settled')).map((r) => r.id)).toEqual([`in-${id}`])
        expect(await engine.pending(id)).toEqual([])
      }
      expect((await engine.getSession('s69'))?.nextInputSeq).toBe(2)
    }))

  test('watch of an unknown session is not_found', () =>
    withEngine(async (engine) => {
      expect(await codeOf(engine.watch('ghost', () => {}))).toBe('not_found')
    }))
})
