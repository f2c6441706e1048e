/**
 * Recovery of turns nobody runs: a turn found open while this runner holds the session's lock
 * (or can take it) was left by a runner that is gone, and is closed — its open message and step
 * first, then the turn, as `interrupted` (or `aborted` when the user stopped it).
 */
import type { SessionEvent, TurnEndReason } from '../schema/events'
import { acquireLock, type LockRequester, runnerLockName } from './locks'
import type { RunnerHost, TurnState } from './types'

export function createRecovery(host: RunnerHost, lockScope: string, locks?: LockRequester) {
  const { engine } = host

  /** Ends a turn nobody runs: closes its open message and step, then the turn itself. */
  async function closeOrphanTurn(sessionId: string, state: TurnState, reason: TurnEndReason): Promise<void> {
    const turn = state.openTurn
    if (turn === null) return
    const events: SessionEvent[] = []
    if (state.openStep !== null) {
      const messageId = await findOpenMessage(sessionId, turn)
      if (messageId !== undefined)
        events.push({ type: 'assistant/end', data: { messageId, finish: 'aborted' } })
      events.push({ type: 'step/end', data: { turn, step: state.openStep } })
    }
    events.push({ type: 'turn/end', data: { turn, reason } })
    await engine.append(sessionId, events)
  }

  /** The assistant message the open turn started and never ended, read from the turn's events. */
  async function findOpenMessage(sessionId: string, turn: number): Promise<string | undefined> {
    const outline = await engine.projection(sessionId, 'turnOutline')
    const start = outline.find((entry) => entry.turn === turn)?.seq ?? 1
    let afterSeq = start - 1
    let open: string | undefined
    while (true) {
      const events = await engine.events(sessionId, { afterSeq, limit: 1000 })
      for (const event of events) {
        if (event.type === 'assistant/start') open = event.data.messageId
        else if (event.type === 'assistant/end' && event.data.messageId === open) open = undefined
      }
      if (events.length < 1000) return open
      afterSeq = events.at(-1)!.seq
    }
  }

  /**
   * Closes an orphaned open turn once this runner holds the session's lock (no live runner owns
   * it then). Without `signal`, only if the lock is free now; with it, waiting for the lock (an
   * heir: the holder's turn is orphaned the moment its tab dies) until `signal` aborts. Answers
   * whether it got the lock.
   */
  async function recoverOrphan(
    sessionId: string,
    reason: TurnEndReason,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const lock = await acquireLock(
      runnerLockName(lockScope, sessionId),
      signal ? { wait: true, signal } : { wait: false },
      locks,
    )
    if (!lock) return false
    try {
      const state = await host.turnState(sessionId)
      if (state.openTurn !== null) await closeOrphanTurn(sessionId, state, reason)
    } finally {
      await lock.release()
    }
    return true
  }

  return { closeOrphanTurn, recoverOrphan }
}
