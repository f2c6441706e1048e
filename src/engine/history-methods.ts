/**
 * The engine's history verbs (docs/decisions/0033): rewind, resend, regenerate, switchBranch and
 * compact, one transaction each through engine/history, and the reads of the path (`context`),
 * of a row's siblings (`branches`) and the path's copy (`fork`). Each parses its arguments and gives engine/history the command with the
 * facts it is judged on; a verb that leaves a turn waiting wakes the runner.
 *
 * @example
 *   const verbs = createHistoryMethods({ db, history, runner, turnState, notifyInput })
 *   const engine = { rewind: guard('rewind', verbs.rewind), … }
 */
import { nanoid } from 'nanoid'
import { compactableIds, headOf, nodeOf } from '../core/history-tree'
import type { TurnState } from '../core/transcript'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { CompactRequest, ForkRequest, ResendRequest } from '../schema/history'
import type { SessionlineDb } from '../store/db'
import { getReceipt, idOwners, rowOwner } from '../store/transactions'
import type { createHistory } from './history'
import type { Engine, Runner } from './types'

export interface HistoryMethodsDeps {
  db: SessionlineDb
  history: ReturnType<typeof createHistory>
  /** The built-in runner: stops the open turn before a compaction and writes its summary. */
  runner: { get(): Runner }
  /** The turn state of the session's fold (cached, no replay). */
  turnState(sessionId: string): Promise<TurnState>
  /** Tells the runner a session has a turn waiting for an answer. */
  notifyInput(sessionId: string): void
}

type HistoryMethod =
  | 'rewind'
  | 'resend'
  | 'regenerate'
  | 'switchBranch'
  | 'branches'
  | 'compact'
  | 'context'
  | 'fork'

const sessionIdOf = (value: unknown) => parseOrThrow(Id, value, 'session id')

export function createHistoryMethods({
  db,
  history,
  runner,
  turnState,
  notifyInput,
}: HistoryMethodsDeps): Pick<Engine, HistoryMethod> {
  return {
    async rewind(sessionId, messageId) {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      return history.verb<'rewind'>(id, async () => ({
        type: 'rewind',
        messageId: message,
        row: await db.messages.get(message),
      }))
    },

    async resend(sessionId, messageId, request) {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      const parsed = parseOrThrow(ResendRequest, request, 'resend request')
      const input = { id: parsed.id ?? nanoid(), text: parsed.text }
      const receipt = await history.verb<'resend'>(id, async () => {
        const [stored, owner] = await Promise.all([getReceipt(db, input.id), rowOwner(db, input.id)])
        return { type: 'resend', messageId: message, input, stored, rowOwner: owner }
      })
      // The turn it opened waits for an answer: a built-in runner takes it (a replay opened none).
      notifyInput(id)
      return receipt
    },

    async regenerate(sessionId, messageId) {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      await history.verb<'regenerate'>(id, () => ({ type: 'regenerate', messageId: message }))
      notifyInput(id)
    },

    async switchBranch(sessionId, messageId) {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      await history.switchBranch(id, message)
    },

    async branches(sessionId, messageId) {
      const id = sessionIdOf(sessionId)
      const message = parseOrThrow(Id, messageId, 'message id')
      return history.branches(id, message)
    },

    async compact(sessionId, request = {}) {
      const id = sessionIdOf(sessionId)
      const { throughSeq, summary, id: givenId } = parseOrThrow(CompactRequest, request, 'compact request')
      const summaryId = givenId ?? nanoid()
      if (summary === undefined) {
        // The provider writes it, outside any transaction, for the head read here; the commit
        // below is refused (`conflict`) when the head moved meanwhile, so a compaction that is
        // aborted, fails or is overtaken never changes the context (docs/decisions/0033).
        if ((await turnState(id)).openTurn !== null) await runner.get().stopTurn(id)
        const source = await history.compactionSource(id, throughSeq)
        const written = await runner.get().summarize(id, source.rows)
        return history.verb<'compact'>(id, async () => {
          const [owner] = await idOwners(db, [summaryId])
          return {
            type: 'compact',
            summary: written.usage
              ? { id: summaryId, ...written, usage: written.usage }
              : { id: summaryId, text: written.text },
            throughId: source.throughId,
            expectedHead: source.expectedHead,
            owner,
          }
        })
      }
      return history.verb<'compact'>(id, async ({ tree }) => {
        // The last row of the compactable path at or below throughSeq (all of it by default).
        const candidates = compactableIds(tree).filter(
          (rowId) => throughSeq === undefined || nodeOf(tree, rowId)!.seq <= throughSeq,
        )
        const throughId = candidates[candidates.length - 1]
        if (throughId === undefined && headOf(tree) !== null) {
          throw new SessionlineError(
            'invalid_input',
            `no row at or below seq ${throughSeq} can be compacted: it lies before the path's last summary`,
            { throughSeq },
          )
        }
        const [owner] = await idOwners(db, [summaryId])
        return {
          type: 'compact',
          summary: { id: summaryId, text: summary },
          throughId,
          expectedHead: headOf(tree),
          owner,
        }
      })
    },

    async context(sessionId) {
      return history.context(sessionIdOf(sessionId))
    },

    async fork(sessionId, request = {}) {
      const id = sessionIdOf(sessionId)
      const { throughSeq, title, id: forkId } = parseOrThrow(ForkRequest, request, 'fork request')
      return history.fork(id, { throughSeq, title, id: forkId ?? nanoid() })
    },
  }
}
