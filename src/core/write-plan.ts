/**
 * The planning half of a group commit (docs/decisions/0014), as pure functions: the writes of
 * one batch decided in arrival order, each on the state its predecessors left, and what each
 * decision stores now (`materialize`) and how it moves the session's row. Nothing here reads a
 * clock or a database: the engine's write path gives the base state, the commands with their
 * facts and the batch's `at`, then commits what the plan says in one transaction.
 *
 * @example
 *   const plan = planBatch(snapshot, [{ keys: ['in-1'], command: () => admitCommand }], Date.now(), policy)
 *   if (plan.plans.length > 0) await store(plan.state, plan.plans)
 *   plan.outcomes // one per decided write, in order: `planned` or `refused`
 */
import { isSessionlineError, type SessionlineError } from '../schema/errors'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionSource } from '../schema/session'
import {
  type Answers,
  type Command,
  type CommandOf,
  type Decision,
  decide,
  type SessionState,
} from './decide'
import type { Folds } from './folds'
import { type LaggingRow, type MaterializePolicy, materialize } from './materialize'

/** The part of a stored session row a write reads and moves (the store's row has more). */
export interface PlanRow {
  readonly id: string
  readonly source: SessionSource
  headSeq: number
  nextInputSeq: number
  updatedAt: number
  /** Bumped by every write: a reader holding the same `rev` is current. */
  rev: number
  lagging?: LaggingRow[]
}

/** A session's state as the write path holds it: its row, its folds and its pending receipts. */
export interface PlanSnapshot<R extends PlanRow = PlanRow> {
  row: R
  folds: Folds
  /** Pending receipts in admission order. */
  pending: readonly InputReceipt[]
}

/** A decision made and the snapshot it moves to (none: nothing to write). */
export interface Planned<T, R extends PlanRow = PlanRow> {
  decision: Decision<T>
  next?: PlanSnapshot<R>
  /** The rows of `decision.rows` to store now; the others lag the log (`next.row.lagging`). */
  write?: SessionMessage[]
}

/** What one write of a batch came to: a plan (which may write nothing) or its refusal. */
export type PlanOutcome<R extends PlanRow = PlanRow> =
  | { planned: Planned<unknown, R> }
  | { refused: SessionlineError }

/**
 * How the planner judges the writes of a batch (the caller's write type `W`): the ids each one's
 * facts are about, and its command on the state its predecessors left.
 */
export interface BatchJudge<W, R extends PlanRow = PlanRow> {
  /** The input and row ids the write's facts are about: a write whose ids an earlier one touched waits. */
  keys(write: W): readonly string[] | undefined
  /**
   * The write's command on `state`; undefined when it cannot be judged there (a guess with
   * nothing to expect), which ends the plan as `undecided`.
   */
  command(write: W, state: PlanSnapshot<R>, index: number): Command | undefined
}

/** A batch's plan: the state after it, and one outcome per decided write, in order. */
export interface BatchPlan<R extends PlanRow = PlanRow> {
  state: PlanSnapshot<R>
  /** The first `outcomes.length` writes were decided; the rest wait for the next batch. */
  outcomes: PlanOutcome<R>[]
  /** The planned outcomes that write, in order (what the transaction stores). */
  plans: Planned<unknown, R>[]
  /** The writes of `plans`, by their index in the batch (their own extra storing follows them). */
  writers: number[]
  /** Some write was refused. */
  refused: boolean
  /** Planning stopped at a write whose command could not be given (`BatchJudge.command`). */
  undecided: boolean
}

/** The decider's view of a snapshot. */
export const stateOf = (snap: PlanSnapshot): SessionState => ({
  sessionId: snap.row.id,
  source: snap.row.source,
  headSeq: snap.row.headSeq,
  nextInputSeq: snap.row.nextInputSeq,
  folds: snap.folds,
  pending: snap.pending,
})

/** The row of a session after a write at `at`: its counters, a new `updatedAt` and `rev`, its lagging rows. */
export function bumpRow<R extends PlanRow>(
  row: R,
  at: number,
  state: SessionState,
  lagging: LaggingRow[],
): R {
  const next: R = {
    ...row,
    headSeq: state.headSeq,
    nextInputSeq: state.nextInputSeq,
    updatedAt: at,
    rev: row.rev + 1,
  }
  // No field at all when nothing lags: the row is then stored exactly as before streaming began.
  if (lagging.length > 0) next.lagging = lagging
  else delete next.lagging
  return next
}

/** Decides `command` on `base` at `at`: the plan, or the refusal (returned, not thrown). */
export function planCommand<K extends Command['type'], R extends PlanRow>(
  base: PlanSnapshot<R>,
  command: CommandOf<K>,
  at: number,
  policy: MaterializePolicy,
): Planned<Answers[K], R> | SessionlineError {
  const decision = decide(stateOf(base), command, at)
  if (isSessionlineError(decision)) return decision
  if (!decision.next) return { decision }
  const stored = materialize(
    base.row.lagging ?? [],
    { events: decision.events, rows: decision.rows, created: decision.createdRowIds },
    decision.next.folds.transcript.open,
    base.row.headSeq,
    policy,
  )
  const next: PlanSnapshot<R> = {
    row: bumpRow(base.row, at, decision.next, stored.lagging),
    folds: decision.next.folds,
    pending: decision.next.pending,
  }
  return { decision, next, write: stored.write }
}

/**
 * Decides the writes of a batch in order, each on the state the previous ones left, and stops
 * before the first whose `keys` an earlier write touched (its facts were read before that write)
 * or whose command cannot be given. A refusal is that write's outcome and changes nothing; a
 * `SessionlineError` thrown while giving the command is one too, any other error is thrown.
 */
export function planBatch<W, R extends PlanRow>(
  base: PlanSnapshot<R>,
  writes: readonly W[],
  judge: BatchJudge<W, R>,
  at: number,
  policy: MaterializePolicy,
): BatchPlan<R> {
  const plan: BatchPlan<R> = {
    state: base,
    outcomes: [],
    plans: [],
    writers: [],
    refused: false,
    undecided: false,
  }
  const touched = new Set<string>()
  for (const [i, write] of writes.entries()) {
    if (judge.keys(write)?.some((key) => touched.has(key))) break
    const planned = judged(judge, write, i, plan.state, at, policy)
    if (planned === undefined) {
      plan.undecided = true
      break
    }
    if (isSessionlineError(planned)) {
      plan.refused = true
      plan.outcomes.push({ refused: planned })
      continue
    }
    plan.outcomes.push({ planned })
    if (!planned.next) continue
    plan.plans.push(planned)
    plan.writers.push(i)
    plan.state = planned.next
    for (const receipt of planned.decision.receipts) touched.add(receipt.id)
    for (const id of planned.decision.createdRowIds) touched.add(id)
  }
  return plan
}

/** One write's plan on `state`; undefined when it has no command there. */
function judged<W, R extends PlanRow>(
  judge: BatchJudge<W, R>,
  write: W,
  index: number,
  state: PlanSnapshot<R>,
  at: number,
  policy: MaterializePolicy,
): Planned<unknown, R> | SessionlineError | undefined {
  let command: Command | undefined
  try {
    command = judge.command(write, state, index)
  } catch (error) {
    if (isSessionlineError(error)) return error
    throw error
  }
  return command && planCommand(state, command, at, policy)
}

/**
 * One batch's decisions as one, for publishing: rows and receipts by id, the last version;
 * `also`: rows the commit rewrote beside the decisions (sibling branch places), overridden by theirs.
 */
export function mergedDecision(
  plans: readonly Planned<unknown, PlanRow>[],
  also: readonly SessionMessage[] = [],
): Decision<undefined> {
  const rows = new Map<string, SessionMessage>(also.map((row) => [row.id, row]))
  const receipts = new Map<string, InputReceipt>()
  for (const { decision } of plans) {
    for (const row of decision.rows) rows.set(row.id, row)
    for (const receipt of decision.receipts) receipts.set(receipt.id, receipt)
  }
  return {
    answer: undefined,
    events: plans.flatMap((p) => p.decision.events),
    rows: [...rows.values()].sort((a, b) => a.seq - b.seq),
    receipts: [...receipts.values()],
    newReceipts: false,
    createdRowIds: plans.flatMap((p) => p.decision.createdRowIds),
  }
}
