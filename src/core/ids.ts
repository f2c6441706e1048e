/**
 * Id ownership (docs/architecture.md §10, docs/decisions/0008): transcript rows and input receipts share
 * one id space across every session. An id belongs to the first thing that took it (an input
 * receipt, or a row an event created), and a write that would give it to a second thing is a
 * `conflict` that writes nothing. Pure: the writer reads who owns the ids, these rules judge.
 *
 * @example
 *   const ids = rowIdsCreated(events)
 *   const error = idClash(ids, { inputs: await inputsById(ids), rows: await rowsById(ids) })
 *   if (error) throw error
 */
import { SessionlineError } from '../schema/errors'
import type { SessionEvent } from '../schema/events'

/** What kind of thing owns an id. */
export type IdOwnerKind = 'input' | 'row'

/** Who owns an id: its kind and session. */
export interface IdOwner {
  kind: IdOwnerKind
  sessionId: string
}

/** Ids of the rows `events` create (a `user/message` creates its input's row, an `assistant/start` its message's). */
export function rowIdsCreated(events: readonly SessionEvent[]): string[] {
  const ids: string[] = []
  for (const e of events) {
    if (e.type === 'user/message') ids.push(e.data.inputId)
    else if (e.type === 'assistant/start' || e.type === 'history/compact') ids.push(e.data.messageId)
  }
  return ids
}

export function idTaken(id: string, owner: IdOwner): SessionlineError {
  const what = owner.kind === 'input' ? 'an input' : 'a transcript row'
  return new SessionlineError(
    'conflict',
    `id ${JSON.stringify(id)} already belongs to ${what} of session ${JSON.stringify(owner.sessionId)}`,
    { id, owner: owner.kind, ownerSessionId: owner.sessionId },
  )
}

/** The first id that occurs twice in `ids`, as a conflict (one write may not create two rows under one id). */
export function duplicateIdError(ids: readonly string[]): SessionlineError | undefined {
  const seen = new Set<string>()
  for (const id of ids) {
    if (seen.has(id)) {
      return new SessionlineError('conflict', `id ${JSON.stringify(id)} is created twice in one write`, {
        id,
        owner: 'row',
      })
    }
    seen.add(id)
  }
  return undefined
}

/**
 * Why rows under `ids` cannot be created, given who already owns each of them (`owners[i]` for
 * `ids[i]`, undefined when free); `mayOwn` names ids this write's own inputs already hold (a
 * promotion creates the row of the input it promotes).
 */
export function rowIdsClash(
  ids: readonly string[],
  owners: readonly (IdOwner | undefined)[],
  mayOwn: (id: string, owner: IdOwner) => boolean = () => false,
): SessionlineError | undefined {
  const duplicate = duplicateIdError(ids)
  if (duplicate) return duplicate
  for (const [i, id] of ids.entries()) {
    const owner = owners[i]
    if (owner && !mayOwn(id, owner)) return idTaken(id, owner)
  }
  return undefined
}
