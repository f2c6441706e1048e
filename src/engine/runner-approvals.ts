/**
 * Tool calls a person approves (DESIGN §11, docs/decisions/0029): whether a call must ask, and
 * waiting for the answer. The wait is on the log, not in memory: the request is an event, the
 * answer another (`respondToApproval`, from this tab or any other), so a runner that starts
 * after a reload or a dead worker waits for the same answer the last one did.
 */
import type { Json } from '../schema/common'
import { SessionlineError } from '../schema/errors'
import type { SessionMessage, ToolPart } from '../schema/messages'
import type { Tool } from './provider'
import { abortError } from './providers/abort'
import type { Engine, RunnerHost, TurnState } from './types'

/** What a person answered, as the runner acts on it. */
export type ApprovalOutcome = 'approved' | 'denied'

/** The reason a Stop gives the calls it denies. */
export const STOPPED_REASON = 'Stopped before it was approved'

/**
 * Whether the call must wait for a person: the tool says so (`needsApproval`: a rule that throws
 * asks, so a broken rule fails closed) and no remembered approval covers its name.
 */
export async function mustAsk(engine: Engine, sessionId: string, name: string, tool: Tool, input: Json) {
  const rule = tool.needsApproval
  if (rule === undefined || rule === false) return false
  let asks = true
  if (typeof rule === 'function') {
    try {
      asks = (await rule(input)) !== false
    } catch {
      asks = true
    }
  }
  if (!asks) return false
  const remembered = await engine.toolApprovals(sessionId)
  return !remembered.always.includes(name) && !remembered.session.includes(name)
}

const outcomeOf = (part: ToolPart | undefined): ApprovalOutcome | undefined => {
  if (part === undefined) return 'denied' // its row settled: the turn ended without an answer
  if (part.state === 'awaiting-approval') return undefined
  return part.state === 'denied' || part.state === 'interrupted' ? 'denied' : 'approved'
}

const partIn = (rows: readonly SessionMessage[], callId: string): ToolPart | undefined => {
  for (const row of rows)
    for (const part of row.parts) if (part.type === 'tool' && part.callId === callId) return part
  return undefined
}

/**
 * Resolves once call `callId` is answered (read from the session's change feed, whoever wrote
 * the answer); rejects `aborted` when `signal` aborts first.
 */
export function waitForAnswer(
  host: RunnerHost,
  sessionId: string,
  callId: string,
  signal: AbortSignal,
): Promise<ApprovalOutcome> {
  const { engine } = host
  return new Promise<ApprovalOutcome>((resolve, reject) => {
    let settled = false
    let unsubscribe: (() => void) | undefined
    const finish = (outcome: ApprovalOutcome | Error) => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      unsubscribe?.()
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    const onAbort = () => finish(abortError('approval wait'))
    if (signal.aborted) {
      onAbort()
      return
    }
    signal.addEventListener('abort', onAbort, { once: true })
    engine
      .watch(sessionId, (change) => {
        const part = partIn(change.rows, callId)
        if (part === undefined) return
        const outcome = outcomeOf(part)
        if (outcome !== undefined) finish(outcome)
      })
      .then(async (stop) => {
        unsubscribe = stop
        if (settled) {
          stop()
          return
        }
        // An answer committed before the watch began is in the open rows already, or has
        // settled the row (then it is not open any more).
        const outcome = outcomeOf(partIn(await host.openRows(sessionId), callId))
        if (outcome !== undefined) finish(outcome)
      })
      .catch((error: unknown) =>
        finish(error instanceof Error ? error : new SessionlineError('internal', String(error))),
      )
  })
}

/** The calls of `row` that still wait for an answer. */
export const awaitingCalls = (row: SessionMessage): ToolPart[] =>
  row.parts.filter((part): part is ToolPart => part.type === 'tool' && part.state === 'awaiting-approval')

/** A step a runner left waiting for approval: its number, its ended assistant row, and the calls a person approved. */
export interface WaitingStep {
  step: number
  row: SessionMessage
  /** Calls approved in the log (they run when the step is taken up, if their result is not in). */
  approved: ReadonlySet<string>
}

/**
 * The open step of an open turn that a runner left waiting for approval: the log holds an
 * approval request in it (its calls may since have been answered, while nobody ran the step).
 */
export async function findWaitingStep(
  host: RunnerHost,
  sessionId: string,
  state: TurnState,
): Promise<WaitingStep | undefined> {
  const { openTurn, openStep } = state
  if (openTurn === null || openStep === null) return undefined
  const row = (await host.openRows(sessionId)).find(
    (r) => r.role === 'assistant' && r.turn === openTurn && r.step === openStep && r.status !== 'streaming',
  )
  if (row === undefined) return undefined
  let asked = false
  const approved = new Set<string>()
  for (let afterSeq = row.seq; ; ) {
    const events = await host.engine.events(sessionId, { afterSeq, limit: 500 })
    for (const event of events) {
      if (event.type === 'tool/approval-request') asked = true
      else if (event.type === 'tool/approval' && event.data.approved) approved.add(event.data.callId)
    }
    if (events.length < 500) break
    afterSeq = events.at(-1)!.seq
  }
  return asked ? { step: openStep, row, approved } : undefined
}
