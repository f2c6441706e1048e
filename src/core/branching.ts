/**
 * Where the next row lands among siblings (docs/decisions/0033): after a head move to a row that
 * already has rows under it, the next row created is their sibling, and it is born with its
 * `branch` place. The history verbs say how many rows hang under the new head (`history/head`'s
 * `children`); this fold keeps that count until a row is created, and `foldEvents` stamps it on
 * that row. So a prompt typed after a rewind, or an answer after a regenerate, shows "2 / 2"
 * from its first commit, in every engine and on a replay alike.
 *
 * The rows it becomes a sibling of are off the active path at that moment (the head sat above
 * them); the write path rewrites their places in the same transaction (engine/history
 * `siblingsJoined`).
 */
import type { StoredEvent } from '../schema/events'
import type { Projection } from './projection'

export interface BranchingState {
  /** Rows under the head when it moved there; 0 once a row was created below it. */
  readonly under: number
  /** The history ever moved or was compacted: readers of the outline look at the tree. */
  readonly branched?: true
}

const NONE: BranchingState = { under: 0 }
const BRANCHED: BranchingState = { under: 0, branched: true }

/** Whether `event` creates a transcript row (and so lands under the head). */
export const createsRow = (event: StoredEvent): boolean =>
  event.type === 'user/message' || event.type === 'assistant/start' || event.type === 'history/compact'

export const branching: Projection<BranchingState, BranchingState> = {
  name: 'branching',
  version: 1,
  init: () => NONE,
  apply(state, event) {
    if (event.type === 'history/head' || event.type === 'history/compact') {
      const under = event.type === 'history/head' ? (event.data.children ?? 0) : 0
      if (state.branched && under === state.under) return state
      return under === 0 ? BRANCHED : { under, branched: true }
    }
    return state.under !== 0 && createsRow(event) ? (state.branched ? BRANCHED : NONE) : state
  },
  view: (state) => state,
}
