/**
 * Token usage totals of a session: the sum of every model call's usage, whatever later becomes
 * of the call (an aborted turn, an abandoned answer still cost its tokens).
 *
 * Only `step/end` counts: one step is one model call and reports that call's usage once.
 * `assistant/end.usage` belongs to its row (what that message cost) and is not added again.
 * A step that reports no usage is not counted in `calls` either: `calls` is the number of
 * calls the totals cover.
 */
import type { StoredEvent } from '../schema/events'
import type { UsageTotals } from '../schema/session'
import type { Projection } from './projection'

/** The totals are the whole state, so the view is the state itself (same identity when unchanged). */
export type UsageState = UsageTotals

export const usage: Projection<UsageState, UsageTotals> = {
  name: 'usage',
  version: 1,
  init: () => ({ input: 0, output: 0, calls: 0 }),
  apply(state, event: StoredEvent) {
    // A summary the provider wrote was a model call too (docs/decisions/0033).
    if ((event.type !== 'step/end' && event.type !== 'history/compact') || event.data.usage === undefined)
      return state
    const { input, output } = event.data.usage
    return { input: state.input + input, output: state.output + output, calls: state.calls + 1 }
  },
  view: (state) => state,
}
