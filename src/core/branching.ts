/**
 * Where the next row lands among siblings (docs/decisions/0033): after a head move to a row that
 * already has rows under it, the next row created is their sibling, and it is born with its
 * `branch` place. The history verbs say how many rows hang under the new head (`history/head`'s
 * `children`); this fold keeps that count until a row is created, and `foldEvents` stamps it on
 * that row. So a prompt typed after a rewind, or an answer after a regenerate, shows "2 / 2"
 * from its first commit, in every engine and on a replay alike.
 *
 * The rows it becomes a sibling of are off the active path at that moment (the head sat above
 * them); the verb that brings one of them back rewrites its place.
 */
import type { StoredEvent } from '../schema/events'
import type { Projection } from './projection'

export interface BranchingState {
  /** Rows under the head when it moved there; 0 once a row was created below it. */
  readonly under: number
}

const NONE: BranchingState = { under: 0 }

/** Whether `event` creates a transcript row (and so lands under the head). */
export const createsRow = (event: StoredEvent): boolean =>
  event.type === 'user/message' || event.type === 'assistant/start' || event.type === 'history/compact'

export const branching: Projection<BranchingState, BranchingState> = {
  name: 'branching',
  version: 1,
  init: () => NONE,
  apply(state, event) {
    if (event.type === 'history/head') {
      const under = event.data.children ?? 0
      return under === state.under ? state : under === 0 ? NONE : { under }
    }
    return state.under !== 0 && createsRow(event) ? NONE : state
  },
  view: (state) => state,
}
