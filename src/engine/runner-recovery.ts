/**
 * Recovery of turns nobody runs: a turn found open while this runner holds the session's lock
 * (or can take it) was left by a runner that is gone, and is closed — its open message and step
 * first, then the turn, as `interrupted` (or `aborted` when the user stopped it). A turn left
 * waiting for tool approvals is not closed as `interrupted`: the next runner takes it up
 * (docs/decisions/0029), nor is one a resend or regenerate opened that no step of has run yet
 * (docs/decisions/0033): it waits for an answer, not for a runner that is gone. A Stop denies the
 * calls that wait, then closes it.
 */
import type { SessionEvent, TurnEndReason } from '../schema/events'
import { acquireLock, type LockRequester, runnerLockName } from './locks'
import { awaitingCalls, STOPPED_REASON } from './runner-approvals'
import type { RunnerHost, TurnState } from './types'

export function createRecovery(
  host: RunnerHost,
  lockScope: string,
  locks: LockRequester | undefined,
  waitingStepOf: (sessionId: string, state: TurnState) => Promise<unknown>,
  awaitsAnswer: (sessionId: string) => Promise<boolean>,
) {
  const { engine } = host

  /** Ends a turn nobody runs: closes its open message and step, then the turn itself. */
  async function closeOrphanTurn(sessionId: string, state: TurnState, reason: TurnEndReason): Promise<void> {
    const turn = state.openTurn
    if (turn === null) return
    const events: SessionEvent[] = []
    if (reason === 'aborted') {
      // Stop denies what waits for a person.
      for (const row of await host.openRows(sessionId))
        for (const part of awaitingCalls(row))
          events.push({
            type: 'tool/approval',
            data: { callId: part.callId, approved: false, reason: STOPPED_REASON },
          })
    }
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
   * `'busy'` when it did not get the lock, `'waiting'` when the turn waits for approvals or for
   * its first answer (a history verb opened it) and was left open for a runner to take up, and
   * `'closed'` when nothing is left open.
   */
  async function recoverOrphan(
    sessionId: string,
    reason: TurnEndReason,
    signal?: AbortSignal,
  ): Promise<'busy' | 'waiting' | 'closed'> {
    const lock = await acquireLock(
      runnerLockName(lockScope, sessionId),
      signal ? { wait: true, signal } : { wait: false },
      locks,
    )
    if (!lock) return 'busy'
    try {
      const state = await host.turnState(sessionId)
      if (state.openTurn === null) return 'closed'
      if (reason === 'interrupted' && (await waitingStepOf(sessionId, state)) !== undefined) return 'waiting'
      // A resend in another tab while the runner that is gone streamed opened this turn there.
      if (reason === 'interrupted' && (await awaitsAnswer(sessionId))) return 'waiting'
      await closeOrphanTurn(sessionId, state, reason)
      return 'closed'
    } finally {
      await lock.release()
    }
  }

  return { closeOrphanTurn, recoverOrphan }
}
