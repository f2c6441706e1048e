/**
 * The runner across tabs: two engines on one database, as two tabs are, each with its own runner.
 * Only one runner drives a session at a time (it holds the session's lock); these scenarios are
 * about what the other tab's Stop and the lock's heir do (issue "Two tabs, one session").
 */
import fc from 'fast-check'
import { describe, expect, test, vi } from 'vitest'
import { acquireLock, runnerLockName } from '../../src/engine/locks'
import { createScriptedProvider } from '../../src/engine/providers/scripted'
import type { Engine } from '../../src/engine/types'
import { comlinkEngine, engineKinds } from '../support/engines'
import { changeFeed } from '../support/feed'
import {
  allEvents,
  allRows,
  countOf,
  expectWellFormed,
  holdingProvider,
  scripted,
  untilEvent,
} from './harness'

describe.each(engineKinds)('two tabs %s', (_, makeEngine) => {
  test("Stop in one tab ends the turn the other tab's runner runs", async () => {
    const owner = await makeEngine({ provider: holdingProvider(scripted(21), ['still ', 'going']) })
    const other = await makeEngine({ dbName: owner.dbName, provider: scripted(21) })
    try {
      const { id } = await owner.engine.createSession({ id: 's' })
      const queued = await owner.engine.admit(id, { text: 'long job' })
      await untilEvent(owner.engine, id, 'assistant/delta')
      // The other tab shows the turn running and its user presses Stop: it resolves once the
      // turn is over. Before the fix it resolved at once and the turn ran on (no turn/end).
      await other.engine.interrupt(id)
      const events = await allEvents(other.engine, id)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } })
      expect(countOf(events, 'turn/end')).toBe(1)
      const answer = (await allRows(other.engine, id)).find((r) => r.role === 'assistant')
      expect(answer).toMatchObject({ status: 'interrupted', parts: [{ type: 'text', text: 'still going' }] })
      // The owner is paused as its own Stop would have left it: new input runs again.
      expect(queued.status).toBe('pending')
      await owner.engine.admit(id, { text: 'again' })
      await untilEvent(owner.engine, id, 'turn/end', (e) => e.type === 'turn/end' && e.data.turn === 2)
    } finally {
      await other.close()
      await owner.close()
    }
  })

  test("Stop in the tab whose own runner waits for the lock still ends the other tab's turn", async () => {
    const owner = await makeEngine({ provider: holdingProvider(scripted(22), ['busy']) })
    const other = await makeEngine({ dbName: owner.dbName, provider: scripted(22) })
    try {
      const { id } = await owner.engine.createSession({ id: 's' })
      await owner.engine.admit(id, { text: 'long job' })
      await untilEvent(owner.engine, id, 'assistant/delta')
      // Input admitted in the other tab wakes its runner, which queues for the session's lock.
      const next = await other.engine.admit(id, { text: 'after that', delivery: 'queue' })
      await other.engine.interrupt(id)
      const events = await allEvents(other.engine, id)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } })
      // Stop leaves pending input pending, in both tabs' runners.
      await owner.engine.append(id, [])
      expect((await other.engine.pending(id)).map((r) => r.id)).toEqual([next.id])
      expect(countOf(await allEvents(owner.engine, id), 'turn/start')).toBe(1)
    } finally {
      await other.close()
      await owner.close()
    }
  })

  /**
   * A tab that runs a turn and is then closed for good: its runner's lock is held here by hand (as
   * a closed tab's Web Lock is let go by the browser, not by its code), its events written by a
   * host-driven engine, and nothing ends the turn.
   */
  async function tabThatDies(dbName: string, id: string, writer: Engine) {
    const lock = await acquireLock(runnerLockName(dbName, id), { wait: false })
    if (!lock) throw new Error('the lock is free at the start')
    await writer.admit(id, { text: 'long job' })
    return {
      async startTurn() {
        await writer.promote(id, 'settled')
        await writer.append(id, [
          { type: 'step/start', data: { turn: 1, step: 1 } },
          { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
        ])
        await writer.append(id, [{ type: 'assistant/delta', data: { messageId: 'm1', text: 'half' } }])
      },
      die: () => lock.release(),
    }
  }

  const interrupted = (feed: ReturnType<typeof changeFeed>) =>
    feed.until(
      (changes) => changes.some((c) => c.rows.some((r) => r.id === 'm1' && r.status === 'interrupted')),
      'the orphaned turn to be closed',
    )

  test('a tab with the session open closes a turn left running by a tab that closed later', async () => {
    const dead = await makeEngine()
    const heir = await makeEngine({ dbName: dead.dbName, provider: scripted(23) })
    try {
      const { id } = await dead.engine.createSession({ id: 's' })
      const tab = await tabThatDies(dead.dbName, id, dead.engine)
      await tab.startTurn()
      // The heir opens the session while the turn runs: its takeover finds the lock held.
      const feed = changeFeed()
      await heir.engine.watch(id, feed.listener)
      await heir.engine.append(id, [])
      await tab.die()
      // Before the fix: nothing waited on the lock, and the turn showed as running for good.
      await interrupted(feed)
      const events = await allEvents(heir.engine, id)
      expect(expectWellFormed(events)).toEqual([])
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'interrupted' } })
      expect(await heir.engine.pending(id)).toEqual([])
    } finally {
      await heir.close()
      await dead.close()
    }
  })

  test("a resend in one tab while another tab's runner streams, then that tab dies: the resent turn is answered, not closed as an orphan", async () => {
    const dead = await makeEngine()
    const heir = await makeEngine({ dbName: dead.dbName, provider: scripted(25) })
    try {
      const { id } = await dead.engine.createSession({ id: 's' })
      const tab = await tabThatDies(dead.dbName, id, dead.engine)
      await tab.startTurn()
      // The heir's tab has the session open (its takeover waits for the lock) and resends the
      // prompt the running turn answers: the verb ends that turn and opens the resent one.
      const feed = changeFeed()
      await heir.engine.watch(id, feed.listener)
      await heir.engine.append(id, [])
      const [prompt] = (await allRows(heir.engine, id)).filter((r) => r.role === 'user')
      await heir.engine.resend(id, prompt!.id, { id: 'edited', text: 'something else' })
      await tab.die()
      await untilEvent(heir.engine, id, 'turn/end', (e) => e.type === 'turn/end' && e.data.turn === 2)
      const events = await allEvents(heir.engine, id)
      expect(expectWellFormed(events)).toEqual([])
      // Before the fix the heir took the lock first and closed the resent turn, unanswered, as
      // the dead tab's orphan: turn/end interrupted right after its prompt.
      const ends = events.flatMap((e) => (e.type === 'turn/end' ? [[e.data.turn, e.data.reason]] : []))
      expect(ends).toEqual([
        [1, 'interrupted'],
        [2, 'completed'],
      ])
      const visible = (await allRows(heir.engine, id)).filter((r) => r.visibility === 'visible')
      expect(visible.map((r) => r.role)).toEqual(['user', 'assistant'])
      expect(visible[0]).toMatchObject({ id: 'edited', branch: { index: 1, count: 2 } })
    } finally {
      await heir.close()
      await dead.close()
    }
  })

  test("a resend in one tab while the other tab's runner streams: that runner lets go of the turn the resend ended without reporting a failure, and the resent turn is answered", async () => {
    // The runner reports what ended a turn through console.warn (the engine's default).
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
    const failures = () =>
      warn.mock.calls.map((call) => String(call[0])).filter((text) => text.startsWith('sessionline runner'))
    const slow = (seed: number) =>
      createScriptedProvider({ kind: 'scripted', seed, wordDelayMs: 10, toolRate: 0 })
    const owner = await makeEngine({ provider: slow(27) })
    const other = await makeEngine({ dbName: owner.dbName, provider: slow(28) })
    try {
      const { id } = await owner.engine.createSession({ id: 's' })
      await owner.engine.admit(id, { id: 'p1', text: 'a long answer, please' })
      await untilEvent(owner.engine, id, 'assistant/delta')
      await other.engine.resend(id, 'p1', { id: 'p2', text: 'something else' })
      await untilEvent(other.engine, id, 'turn/end', (e) => e.type === 'turn/end' && e.data.turn === 2)
      const events = await allEvents(other.engine, id)
      expect(expectWellFormed(events)).toEqual([])
      const ends = events.flatMap((e) => (e.type === 'turn/end' ? [[e.data.turn, e.data.reason]] : []))
      expect(ends).toEqual([
        [1, 'interrupted'],
        [2, 'completed'],
      ])
      // Before the fix the owner's runner reported each write the ended turn refused (its next
      // delta, the message's end, the turn's end) as a failure of its own.
      await owner.engine.append(id, [])
      expect(failures()).toEqual([])
    } finally {
      warn.mockRestore()
      await other.close()
      await owner.close()
    }
  })

  test('a tab that opened the session before the turn began closes it when its runner dies', async () => {
    const dead = await makeEngine()
    const heir = await makeEngine({ dbName: dead.dbName, provider: scripted(24) })
    try {
      const { id } = await dead.engine.createSession({ id: 's' })
      const feed = changeFeed()
      await heir.engine.watch(id, feed.listener)
      const tab = await tabThatDies(dead.dbName, id, dead.engine)
      await tab.startTurn()
      await feed.until((changes) => changes.some((c) => c.rows.some((r) => r.id === 'm1')), 'the answer')
      await tab.die()
      // Before the fix: recovery ran on the first load only, when nothing was unfinished.
      await interrupted(feed)
      const events = await allEvents(heir.engine, id)
      expect(expectWellFormed(events)).toEqual([])
      expect(countOf(events, 'turn/end')).toBe(1)
    } finally {
      await heir.close()
      await dead.close()
    }
  })
})

type TabOp = { tab: 0 | 1; kind: 'steer' | 'queue' | 'cancel' | 'interrupt'; pick: number }

test('two tabs admitting, cancelling and pressing Stop in any interleaving leave a well-formed log, every input accounted for once, and no turn running after a Stop in either', async () => {
  const tabOp = fc.record({
    tab: fc.constantFrom<0 | 1>(0, 1),
    kind: fc.constantFrom<TabOp['kind']>('steer', 'queue', 'queue', 'cancel', 'interrupt'),
    pick: fc.nat(10),
  })
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(tabOp, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 5 }),
      fc.constantFrom<0 | 1>(0, 1),
      async (rounds, stopper) => {
        // Words 1 ms apart: turns run long enough for a Stop or an admit to land inside them.
        const slow = (seed: number) =>
          createScriptedProvider({ kind: 'scripted', seed, wordDelayMs: 1, toolRate: 0.3 })
        const first = await comlinkEngine({ provider: slow(31) })
        const second = await comlinkEngine({ dbName: first.dbName, provider: slow(32) })
        const tabs = [first.engine, second.engine]
        try {
          const { id } = await first.engine.createSession({ id: 's' })
          const admitted: string[] = []
          let n = 0
          for (const round of rounds) {
            const results = await Promise.allSettled(
              round.map(({ tab, kind, pick }: TabOp) => {
                const engine = tabs[tab] as Engine
                if (kind === 'interrupt') return engine.interrupt(id)
                if (kind === 'cancel')
                  return engine.cancel(id, admitted[pick % Math.max(1, admitted.length)] ?? 'none')
                const input = `in-${n++}`
                admitted.push(input)
                return engine.admit(id, { id: input, text: `input ${input}`, delivery: kind })
              }),
            )
            for (const r of results) {
              if (r.status === 'rejected')
                expect(['not_found', 'invalid_state'], String(r.reason)).toContain(
                  (r.reason as { code: string }).code,
                )
            }
          }
          // One tab presses Stop while it shows a turn running: the turn ends, whichever tab
          // runs it, and none starts after it (pending input waits for new input, in both tabs).
          const before = await allEvents(tabs[stopper] as Engine, id)
          const running = countOf(before, 'turn/start') > countOf(before, 'turn/end')
          await (tabs[stopper] as Engine).interrupt(id)
          const started = countOf(await allEvents(first.engine, id), 'turn/start')
          // Every runner that was waiting for the session's lock has had its turn once we get it.
          const lock = await acquireLock(runnerLockName(first.dbName, id), { wait: true })
          await lock?.release()
          const events = await allEvents(first.engine, id)
          expect(expectWellFormed(events)).toEqual([])
          expect(countOf(events, 'turn/start')).toBe(countOf(events, 'turn/end'))
          if (running) expect(countOf(events, 'turn/start')).toBe(started)
          const promoted = events.flatMap((e) => (e.type === 'user/message' ? [e.data.inputId] : []))
          expect(new Set(promoted).size).toBe(promoted.length)
          const pending = (await first.engine.pending(id)).map((r) => r.id)
          expect((await second.engine.pending(id)).map((r) => r.id)).toEqual(pending)
          for (const input of admitted) {
            // Promoted once, or still pending, or cancelled: never lost, never twice.
            const times = promoted.filter((p) => p === input).length + (pending.includes(input) ? 1 : 0)
            expect(times, input).toBeLessThanOrEqual(1)
          }
        } finally {
          await second.close()
          await first.close()
        }
      },
    ),
    { seed: 3131, numRuns: 24 },
  )
}, 120_000)
