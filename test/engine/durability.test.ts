import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test } from 'vitest'
import { replay } from '../../src/core/projection'
import { turnOutline } from '../../src/core/turn-outline'
import type { Engine } from '../../src/engine/types'
import type { SessionEvent } from '../../src/schema/events'
import { openDb } from '../../src/store/db'
import { engineKinds, freshDbName } from '../support/engines'
import { createInterruptibleFactory } from '../support/forced-close'

async function observe(engine: Engine, sessionId: string) {
  const [events, rows, pending, outline, totals, session] = await Promise.all([
    engine.events(sessionId),
    engine.loadThrough(sessionId, { seq: 0, includeInactive: true }),
    engine.pending(sessionId),
    engine.projection(sessionId, 'turnOutline'),
    engine.projection(sessionId, 'usage'),
    engine.getSession(sessionId),
  ])
  return { events, rows: rows.messages, pending, outline, totals, session }
}

const streamed: SessionEvent[] = [
  { type: 'step/start', data: { turn: 1, step: 1 } },
  { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
  { type: 'assistant/delta', data: { messageId: 'm1', text: 'Working on it' } },
  { type: 'tool/call', data: { messageId: 'm1', callId: 'c1', name: 'read', input: {} } },
  { type: 'assistant/end', data: { messageId: 'm1', finish: 'tool-calls', usage: { input: 4, output: 2 } } },
  { type: 'tool/result', data: { callId: 'c1', output: 'done', isError: false } },
  { type: 'step/end', data: { turn: 1, step: 1, usage: { input: 4, output: 2 } } },
]

describe.each(engineKinds)('engine %s under a forced database close', (_, makeEngine) => {
  /** Runs `write` with the database cut after its 1st, 2nd, … write request until one run completes. */
  async function interruptEveryWrite(
    prepare: (engine: Engine, sessionId: string) => Promise<void>,
    write: (engine: Engine, sessionId: string) => Promise<unknown>,
  ) {
    let completed = false
    let cuts = 0
    for (let cut = 1; !completed; cut++) {
      const dbName = freshDbName('cut')
      const interruptible = createInterruptibleFactory()
      const { engine, close } = await makeEngine({ dbName, indexedDB: interruptible.factory })
      try {
        const { id } = await engine.createSession({ id: 's' })
        await prepare(engine, id)
        const before = await observe(engine, id)
        interruptible.arm(cut)
        const outcome = await write(engine, id).then(
          () => 'ok',
          (error: { code?: string }) => error.code,
        )
        if (!interruptible.fired) {
          expect(outcome).toBe('ok')
          completed = true
          continue
        }
        cuts++
        expect(outcome, `cut after write ${cut}`).toBe('storage_unavailable')
        const reader = await makeEngine({ dbName })
        try {
          expect(await observe(reader.engine, id), `cut after write ${cut}`).toEqual(before)
        } finally {
          await reader.close()
        }
        // The engine reopens its connection and the same write then succeeds.
        await write(engine, id)
      } finally {
        await close()
      }
      expect(cut).toBeLessThan(40)
    }
    return cuts
  }

  test('an interrupted promote leaves no partial write', () =>
    interruptEveryWrite(
      async (engine, id) => {
        await engine.admit(id, { id: 'a', text: 'first' })
        await engine.admit(id, { id: 'b', text: 'second' })
      },
      (engine, id) => engine.promote(id, 'settled'),
    ).then((cuts) => expect(cuts).toBeGreaterThanOrEqual(5)))

  test('an interrupted append leaves no partial write', () =>
    interruptEveryWrite(
      async (engine, id) => {
        await engine.admit(id, { text: 'go' })
        await engine.promote(id, 'settled')
      },
      (engine, id) => engine.append(id, streamed),
    ).then((cuts) => expect(cuts).toBeGreaterThanOrEqual(8)))

  test('an interrupted admit leaves no partial write', () =>
    interruptEveryWrite(
      async () => {},
      (engine, id) => engine.admit(id, { id: 'x', text: 'hello' }),
    ).then((cuts) => expect(cuts).toBe(2)))
})

describe('cold open', () => {
  const make = engineKinds[0][1]

  async function seeded(dbName: string) {
    const { engine, close } = await make({ dbName })
    const { id } = await engine.createSession({ id: 's' })
    for (let turn = 1; turn <= 3; turn++) {
      await engine.admit(id, { text: `question ${turn}` })
      await engine.promote(id, 'settled')
      await engine.append(id, [
        ...streamed
          .map(
            (e) =>
              JSON.parse(
                JSON.stringify(e).replaceAll('"m1"', `"m${turn}"`).replaceAll('"c1"', `"c${turn}"`),
              ) as SessionEvent,
          )
          .map((e) => ('turn' in e.data ? ({ ...e, data: { ...e.data, turn } } as SessionEvent) : e)),
        { type: 'turn/end', data: { turn, reason: 'completed' } },
      ])
    }
    const seen = await observe(engine, id)
    await close()
    return { id, seen }
  }

  test('serves rows and views from stored state without reading the log', async () => {
    const dbName = freshDbName('cold')
    const { id, seen } = await seeded(dbName)
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    await db.events.clear() // a replay would now find nothing
    db.close()
    const { engine, close } = await make({ dbName })
    try {
      expect((await engine.page(id)).messages).toEqual(seen.rows)
      expect(await engine.projection(id, 'turnOutline')).toEqual(seen.outline)
      expect(await engine.projection(id, 'usage')).toEqual(seen.totals)
    } finally {
      await close()
    }
  })

  test('a long outline is stored in chunks and a new turn rewrites only the last one', async () => {
    const dbName = freshDbName('long')
    const { engine, close } = await make({ dbName })
    const turnOf = (turn: number): SessionEvent[] => [
      { type: 'turn/start', data: { turn } },
      {
        type: 'user/message',
        data: { inputId: `u${turn}`, text: `ask ${turn}`, delivery: 'steer', source: 'user' },
      },
      { type: 'step/start', data: { turn, step: 1 } },
      { type: 'assistant/start', data: { messageId: `a${turn}`, turn, step: 1 } },
      { type: 'assistant/delta', data: { messageId: `a${turn}`, text: `answer ${turn}` } },
      { type: 'assistant/end', data: { messageId: `a${turn}`, finish: 'stop' } },
      { type: 'step/end', data: { turn, step: 1, usage: { input: 1, output: 1 } } },
      { type: 'turn/end', data: { turn, reason: 'completed' } },
    ]
    const { id } = await engine.createSession({ id: 's' })
    try {
      for (let first = 1; first <= 600; first += 100) {
        await engine.append(id, Array.from({ length: 100 }, (_, i) => turnOf(first + i)).flat())
      }
      const outline = await engine.projection(id, 'turnOutline')
      expect(outline).toHaveLength(600)
      await engine.append(id, turnOf(601))
      const events = await engine.events(id, { limit: 10_000 })
      expect(await engine.projection(id, 'turnOutline')).toEqual(
        turnOutline.view(replay(turnOutline, events)),
      )
    } finally {
      await close()
    }
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    const rows = await db.projections.where('[sessionId+name]').between(['s', ''], ['s', '\uffff']).toArray()
    db.close()
    const chunks = rows.filter((row) => row.name.startsWith('turnOutline#entries#'))
    expect(chunks.length).toBe(3)
    // Only the chunk holding turn 601 was written by the last append.
    const head = Math.max(...rows.map((row) => row.throughSeq))
    expect(chunks.filter((row) => row.throughSeq === head).map((row) => row.name)).toEqual([
      'turnOutline#entries#00000002',
    ])
    const reopened = await make({ dbName })
    try {
      const outline = await reopened.engine.projection('s', 'turnOutline')
      expect(outline).toHaveLength(601)
      expect(outline.at(-1)).toMatchObject({ turn: 601, prompt: 'ask 601', response: 'answer 601' })
    } finally {
      await reopened.close()
    }
  })

  test('rebuilds a projection whose version changed, once, from the log', async () => {
    const dbName = freshDbName('rebuild')
    const { id, seen } = await seeded(dbName)
    const db = openDb(dbName, { indexedDB, IDBKeyRange })
    await db.projections.update([id, 'turnOutline'], { version: 0, state: { entries: [], open: undefined } })
    await db.projections.update([id, 'transcript'], { version: 0 })
    await db.messages.clear()
    db.close()
    const { engine, close } = await make({ dbName })
    try {
      expect(await engine.projection(id, 'turnOutline')).toEqual(seen.outline)
      expect((await engine.loadThrough(id, { seq: 0 })).messages).toEqual(seen.rows)
    } finally {
      await close()
    }
    const check = openDb(dbName, { indexedDB, IDBKeyRange })
    const stored = await check.projections.get([id, 'turnOutline'])
    const session = await check.sessions.get(id)
    check.close()
    expect(stored).toMatchObject({ version: turnOutline.version, throughSeq: session?.headSeq })
  })
})
