/**
 * `reorder` and `setDelivery` as pure deciders (docs/architecture.md §11, docs/decisions/0033): they change
 * pending receipts in place, as `edit` does (same id, a bumped `revision`), never by cancelling
 * and re-admitting, so a reordered input keeps its id and nothing queued is lost.
 *
 * Order is `rank ?? seq` (`placeOf`): a moved receipt gets a rank between its new neighbours'
 * places, so nothing else is rewritten; only when no number fits between them (after very many
 * moves into one gap) are the pending receipts ranked 1, 2, 3, … again, each with a new revision.
 *
 * @example
 *   const decision = decideReorder(state, { inputId, before: null, stored }, Date.now())
 *   if (decision instanceof SessionlineError) throw decision
 *   await db.inputs.bulkPut(decision.receipts)
 */
import type { Delivery } from '../schema/common'
import { SessionlineError } from '../schema/errors'
import type { InputReceipt } from '../schema/inputs'
import type { Decision, SessionState } from './decide'
import { pendingView, placeOf } from './pending'

const readOnly = (state: SessionState) =>
  new SessionlineError(
    'invalid_state',
    `session ${JSON.stringify(state.sessionId)} was imported from ${state.source}: imported sessions are read-only`,
    { sessionId: state.sessionId, source: state.source },
  )

/** This session's pending receipt `inputId`, from `state.pending`. */
function pendingOf(state: SessionState, inputId: string, stored: InputReceipt | undefined): InputReceipt {
  if (!stored || stored.sessionId !== state.sessionId) {
    throw new SessionlineError(
      'not_found',
      `no input ${JSON.stringify(inputId)} in session ${JSON.stringify(state.sessionId)}`,
      { sessionId: state.sessionId, inputId },
    )
  }
  const receipt = state.pending.find((r) => r.id === inputId)
  if (stored.status !== 'pending' || receipt === undefined) {
    throw new SessionlineError(
      'invalid_state',
      `input ${JSON.stringify(inputId)} is ${stored.status}, not pending`,
      {
        inputId,
        status: stored.status,
      },
    )
  }
  return receipt
}

function decision<T>(state: SessionState, answer: T, changed: InputReceipt[]): Decision<T> {
  const base = { answer, events: [], receipts: changed, newReceipts: false, rows: [], createdRowIds: [] }
  if (changed.length === 0) return base
  const byId = new Map(changed.map((r) => [r.id, r]))
  return { ...base, next: { ...state, pending: pendingView(state.pending.map((r) => byId.get(r.id) ?? r)) } }
}

const revised = (receipt: InputReceipt, at: number, change: Partial<InputReceipt>): InputReceipt => ({
  ...receipt,
  ...change,
  updatedAt: at,
  revision: receipt.revision + 1,
})

/**
 * Moves pending input `inputId` before pending input `before` (`null`: to the end). Moving it
 * where it already stands writes nothing. Answers the moved receipt.
 */
export function decideReorder(
  state: SessionState,
  command: {
    inputId: string
    before: string | null
    stored: InputReceipt | undefined
    storedBefore?: InputReceipt
  },
  at: number,
): Decision<InputReceipt> | SessionlineError {
  try {
    if (state.source !== 'native') throw readOnly(state)
    const moved = pendingOf(state, command.inputId, command.stored)
    if (command.before === command.inputId) {
      throw new SessionlineError('invalid_input', 'an input cannot be moved before itself', {
        inputId: command.inputId,
      })
    }
    const order = pendingView(state.pending)
    const rest = order.filter((r) => r.id !== moved.id)
    const at0 = command.before === null ? rest.length : rest.findIndex((r) => r.id === command.before)
    if (at0 < 0) {
      // `before` must be a pending input of this session too.
      pendingOf(state, command.before!, command.storedBefore)
    }
    const target = at0 < 0 ? rest.length : at0
    const prev = rest[target - 1]
    const next = rest[target]
    if (order.indexOf(moved) === target) return decision(state, moved, [])
    const low = prev === undefined ? undefined : placeOf(prev)
    const high = next === undefined ? undefined : placeOf(next)
    const rank =
      low === undefined && high === undefined
        ? placeOf(moved)
        : low === undefined
          ? high! - 1
          : high === undefined
            ? low + 1
            : (low + high) / 2
    const fits = (low === undefined || rank > low) && (high === undefined || rank < high)
    if (fits && Number.isFinite(rank)) {
      const placed = revised(moved, at, { rank })
      return decision(state, placed, [placed])
    }
    // No number between the neighbours: rank everything pending again, in the new order.
    const reordered = [...rest.slice(0, target), moved, ...rest.slice(target)]
    const changed = reordered.map((r, i) => revised(r, at, { rank: i + 1 }))
    return decision(state, changed[target]!, changed)
  } catch (error) {
    if (error instanceof SessionlineError) return error
    throw error
  }
}

/** Makes pending input `inputId` a steer or a queued input; the same delivery writes nothing. */
export function decideSetDelivery(
  state: SessionState,
  command: { inputId: string; delivery: Delivery; stored: InputReceipt | undefined },
  at: number,
): Decision<InputReceipt> | SessionlineError {
  try {
    if (state.source !== 'native') throw readOnly(state)
    const receipt = pendingOf(state, command.inputId, command.stored)
    if (receipt.delivery === command.delivery) return decision(state, receipt, [])
    const changed = revised(receipt, at, { delivery: command.delivery })
    return decision(state, changed, [changed])
  } catch (error) {
    if (error instanceof SessionlineError) return error
    throw error
  }
}
