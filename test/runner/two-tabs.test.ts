/**
 * The runner across tabs: two engines on one database, as two tabs are, each with its own runner.
 * Only one runner drives a session at a time (it holds the session's lock); these scenarios are
 * about what the other tab's Stop and the lock's heir do (issue "Two tabs, one session").
 */
import { describe, expect, test } from 'vitest'
import { acquireLock, runnerLockName } from '../../src/engine/locks'
import type { Engine } from '../../src/engine/types'
import { engineKinds } from '../support/engines'
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
