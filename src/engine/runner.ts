import { compactionThroughSeq, estimateContextTokens } from '../core/compaction'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import type { TurnEndReason } from '../schema/events'
import type { CompactionBudget } from '../schema/history'
import { ConfigureRequest, type ProviderConfig } from '../schema/provider'
import { acquireLock, type LockRequester, runnerLockName } from './locks'
import type { ModelProvider, Tools } from './provider'
import { providerFromConfig } from './providers/index'
import { findWaitingStep, type WaitingStep } from './runner-approvals'
import type { VisibleContext } from './runner-context'
import { createRecovery } from './runner-recovery'
import { asSessionlineError, createStepRunner, type TurnSetup } from './runner-step'
import { toolSpecs } from './runner-tools'
import { summarizeContext } from './summarize'
import { createDemoTools } from './tools'
import type { Runner, RunnerHost, TurnState } from './types'

export interface RunnerOptions {
  /** A built-in provider's config, or a provider function (custom worker entries). Default: none (host-driven). */
  provider?: ProviderConfig | ModelProvider
  /** Tools the model may call. Default: the demo tools with the scripted provider, none otherwise. */
  tools?: Tools
  /** Keeps the session locks of different databases apart (the engine passes its database name). */
  lockScope?: string
  /** Provider requests allowed in one turn before it ends with `error` (a model calling tools forever). */
  maxSteps?: number
  /** Longest time streamed text waits before it is persisted, in ms. */
  flushMs?: number
  /** Told of every provider, tool-runner or log failure that ended a turn (default: `console.warn`). */
  onError?: (error: SessionlineError, sessionId: string) => void
  /** Lock manager; defaults to `navigator.locks`, or an in-process one where that is missing. */
  locks?: LockRequester
  /** Compaction by token budget before a turn's first step (docs/decisions/0033, amendment). */
  compaction?: CompactionBudget
}

const DEFAULT_MAX_STEPS = 24
const DEFAULT_FLUSH_MS = 50
/**
 * How often a Stop for another engine's turn is said again while it waits for that turn's lock:
 * a runner that took the lock just before it listened has missed the first request.
 */
const STOP_REPEAT_MS = 250

/** What stopped a turn from outside: the user (`interrupt`) or the engine closing. */
type StopReason = 'interrupt' | 'close' | 'history'

interface SessionDriver {
  readonly sessionId: string
  /** The drive loop while it runs (it holds the session lock). */
  loop: Promise<void> | null
  /** Input arrived while the loop ran: look again before going idle. */
  dirty: boolean
  /** Set by an interrupt or a failed turn: start no turn until new input arrives. */
  paused: boolean
  /**
   * Woken by recovery, not by input: before its first turn the loop reads how the log's last turn
   * ended, since a stop or failure made elsewhere (another tab, a page since reloaded) pauses too.
   */
  resuming: boolean
  /** Inputs admitted so far (counts `onInput` calls), to tell input that came after a failure. */
  inputs: number
  /** `inputs` when the running turn failed. */
  failedAt: number | null
  /** The running turn (or the one being opened), while there is one. */
  turn: RunningTurn | null
  /** The model-visible transcript, followed in memory while this runner holds the session's lock. */
  context: VisibleContext | null
}

interface RunningTurn {
  /** Aborts every step and tool of the turn. */
  readonly control: AbortController
  /** The turn's number once it is open (a stop from another engine names the turn it saw). */
  number: number | null
  /** Resolves once the turn is over (its `turn/end` written or given up), or was never opened. */
  readonly ended: Promise<void>
}

export function createRunner(host: RunnerHost, options: RunnerOptions = {}): Runner {
  const { engine } = host
  const lockScope = options.lockScope ?? 'sessionline'
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS
  const flushMs = options.flushMs ?? DEFAULT_FLUSH_MS
  const tell =
    options.onError ??
    ((error: SessionlineError, sessionId: string) => {
      console.warn(`sessionline runner (session ${sessionId}): ${error.message}`)
    })
  /**
   * Tells of a failure, unless it is a write refused (`invalid_state`) because another engine
   * ended the turn this runner runs: a history verb in another tab ends the turn a runner here
   * streams (docs/decisions/0033), and this runner learns so only when its next write is refused.
   * That is the verb's doing, not a failure of the turn.
   */
  const report = (error: SessionlineError, sessionId: string): void => {
    const turn = drivers.get(sessionId)?.turn?.number
    if (error.code !== 'invalid_state' || turn === null || turn === undefined) {
      tell(error, sessionId)
      return
    }
    host.turnState(sessionId).then(
      (state) => {
        if (state.openTurn === turn) tell(error, sessionId)
      },
      () => tell(error, sessionId),
    )
  }

  const { runStep, resumeStep } = createStepRunner({ host, flushMs, report })
  const waitingStepOf = (sessionId: string, state: TurnState) => findWaitingStep(host, sessionId, state)
  const { closeOrphanTurn, recoverOrphan } = createRecovery(
    host,
    lockScope,
    options.locks,
    waitingStepOf,
    (sessionId) => awaitsAnswer(sessionId),
  )
  let provider: ModelProvider | undefined
  let tools: Tools = {}
  const drivers = new Map<string, SessionDriver>()
  /** Sessions that wait for a provider to be configured before they are recovered. */
  const deferredRecovery = new Set<string>()
  /** Sessions whose lock this runner waits on as heir of the runner that holds it. */
  const heirs = new Set<string>()
  const closing = new AbortController()
  let closed = false
  /** Listening to other engines' Stop requests, from the first time this runner took a lock. */
  let stopRequests: (() => void) | undefined
  /** Summaries being written, per session: an interrupt or closing aborts them. */
  const summarizing = new Map<string, Set<AbortController>>()
  /**
   * Sessions whose turns another device runs (`setGate`): no turn is opened here for their
   * input. A turn already open (a history verb's, one left to recover) still runs.
   */
  const gated = new Set<string>()

  function use(choice: ProviderConfig | ModelProvider | undefined): void {
    if (typeof choice === 'function') {
      provider = choice
      tools = options.tools ?? {}
      return
    }
    const config = choice ?? { kind: 'none' }
    provider = providerFromConfig(config)
    tools = options.tools ?? (config.kind === 'scripted' ? createDemoTools({ now: () => host.now() }) : {})
  }
  use(options.provider)

  const driverOf = (sessionId: string): SessionDriver => {
    let driver = drivers.get(sessionId)
    if (!driver) {
      driver = {
        sessionId,
        loop: null,
        dirty: false,
        paused: false,
        resuming: false,
        inputs: 0,
        failedAt: null,
        turn: null,
        context: null,
      }
      drivers.set(sessionId, driver)
    }
    return driver
  }

  const unsubscribe = host.onInput((sessionId) => {
    const driver = driverOf(sessionId)
    driver.inputs += 1
    driver.paused = false
    driver.resuming = false
    wake(driver)
  })

  /** Starts the drive loop of a session, or tells the running one to look again. */
  function wake(driver: SessionDriver): void {
    if (closed || !provider || driver.paused) return
    if (driver.loop) {
      driver.dirty = true
      return
    }
    driver.loop = drive(driver)
      .catch((error: unknown) => report(asSessionlineError(error, 'internal'), driver.sessionId))
      .finally(() => {
        driver.loop = null
        // Input that arrived after the loop last looked but before it let go (a regenerate in
        // the ticks after a turn ended) only set `dirty`: look again, or that turn never runs.
        if (driver.dirty) wake(driver)
      })
  }

  /** Holds the session lock while there is work; gives it back whenever the session goes idle. */
  async function drive(driver: SessionDriver): Promise<void> {
    do {
      driver.dirty = false
      const lock = await acquireLock(
        runnerLockName(lockScope, driver.sessionId),
        { wait: true, signal: closing.signal },
        options.locks,
      )
      if (!lock) return
      // Whoever holds a session's lock hears the Stop pressed in other engines.
      stopRequests ??= host.onStopRequest(stopRequested)
      try {
        await runWhileWork(driver)
      } finally {
        // Without the lock another runner may drive the session: following it is not our job.
        driver.context?.close()
        driver.context = null
        await lock.release()
      }
    } while (driver.dirty && !closed && !driver.paused && provider)
  }

  async function runWhileWork(driver: SessionDriver): Promise<void> {
    const { sessionId } = driver
    let firstUnderLock = true
    while (!closed && !driver.paused) {
      // A turn keeps the provider and tools it started with; `configure` applies to the next one.
      if (!provider) return
      const setup: TurnSetup = { provider, tools, specs: toolSpecs(tools) }
      // Armed before anything is awaited: an interrupt while the state is read or the turn is
      // promoted open aborts this control, and each phase below looks at it after its await.
      const control = new AbortController()
      let markEnded!: () => void
      driver.turn = { control, number: null, ended: new Promise((resolve) => (markEnded = resolve)) }
      try {
        const state = await host.turnState(sessionId)
        if (control.signal.aborted) return
        if (state.openTurn !== null) {
          // A turn resend or regenerate opened for an answer, and nobody started: ours to run.
          if (await awaitsAnswer(sessionId)) {
            driver.turn.number = state.openTurn
            await runTurn(driver, state.openTurn, setup, control)
            continue
          }
          // We hold the lock and run no turn here, so whoever opened this one is gone. A turn
          // it left waiting for approval goes on where it stood; any other is closed.
          const waiting = await waitingStepOf(sessionId, state)
          if (control.signal.aborted) return
          if (waiting) await runTurn(driver, state.openTurn, setup, control, waiting)
          else await closeOrphanTurn(sessionId, state, 'interrupted')
          continue
        }
        // Another device runs this session's turns: its input is left for that device.
        if (gated.has(sessionId)) return
        // Before the first turn under this lock: the runner may have waited for it while a
        // runner in another tab ran a turn that a Stop (pressed in either tab) or a failure
        // ended; that pauses the session for every tab until new input, as it does here.
        if (driver.resuming || firstUnderLock) {
          driver.resuming = false
          firstUnderLock = false
          if (!(await leftToRun(sessionId))) return
        }
        // Before the turn opens (a compaction ends an open turn): within the budget again.
        // Nothing pending: nothing to promote (input admitted from now on wakes the loop again,
        // and is looked at before its turn opens).
        if (options.compaction) {
          if (!(await compactOverBudget(sessionId, options.compaction))) return
          if (control.signal.aborted || driver.paused) return
        }
        // The promoted rows belong to the turn this promote opened (an interrupt during it
        // ends that turn at once: runTurn looks at the signal before its first step).
        const [first] = await engine.promote(sessionId, 'settled')
        if (!first) return
        driver.turn.number = first.turn
        await runTurn(driver, first.turn, setup, control)
      } finally {
        driver.turn = null
        markEnded()
      }
    }
  }

  async function runTurn(
    driver: SessionDriver,
    turn: number,
    setup: TurnSetup,
    control: AbortController,
    resume?: WaitingStep,
  ): Promise<void> {
    const { sessionId } = driver
    let reason: TurnEndReason = 'completed'
    driver.failedAt = null
    const fail = () => {
      reason = 'error'
      driver.failedAt ??= driver.inputs
    }
    try {
      let step = resume?.step ?? 0
      let atBoundary = true
      if (resume) {
        const finish = await resumeStep(driver, turn, resume, setup, control.signal)
        // The engine closed while the calls still wait: the turn stays open for the next runner.
        if (finish === 'suspended') return
        if (finish === 'aborted') reason = stopReasonOf(control)
        else if (finish === 'error') fail()
      }
      while (reason === 'completed') {
        if (atBoundary && !control.signal.aborted) await engine.promote(sessionId, 'checkpoint')
        if (control.signal.aborted) {
          reason = stopReasonOf(control)
          break
        }
        if (step >= maxSteps) {
          fail()
          report(
            new SessionlineError('provider_error', `Turn ${turn} reached ${maxSteps} steps and was ended`),
            sessionId,
          )
          break
        }
        step += 1
        const finish = await runStep(driver, turn, step, setup, control.signal)
        if (finish === 'suspended') return
        if (finish === 'aborted') {
          reason = stopReasonOf(control)
          break
        }
        if (finish === 'error') {
          fail()
          break
        }
        if (finish === 'tool-calls') {
          atBoundary = true
          continue
        }
        // The model is done; a steer that arrived meanwhile keeps the turn going.
        const steers = await engine.promote(sessionId, 'checkpoint')
        if (steers.length === 0) break
        atBoundary = false
      }
    } catch (error) {
      if (control.signal.aborted) reason = stopReasonOf(control)
      else {
        fail()
        report(asSessionlineError(error, 'internal'), sessionId)
      }
    }
    // A failed turn pauses the session (no storm of failing turns) unless input came after the
    // failure; an interrupt paused it when asked, so input admitted since then still runs.
    if (reason === 'error' && driver.inputs === driver.failedAt) driver.paused = true
    try {
      await engine.append(sessionId, [{ type: 'turn/end', data: { turn, reason } }])
    } catch (error) {
      // The turn stays open in the log; the next runner to take the lock closes it as interrupted.
      report(asSessionlineError(error, 'internal'), sessionId)
      driver.paused = true
    }
  }
  /**
   * Compacts when the context and the prompts waiting to be promoted are estimated above the
   * budget; `false` when no input is pending (no turn to open). A compaction that fails (the provider failed, the head moved, an interrupt) is
   * reported when it is not an abort, and the turn runs on the context as it stands: it was
   * never changed.
   */
  async function compactOverBudget(sessionId: string, budget: CompactionBudget): Promise<boolean> {
    const [{ rows }, pending] = await Promise.all([engine.context(sessionId), engine.pending(sessionId)])
    if (pending.length === 0) return false
    const extra = pending.reduce((n, input) => n + input.text.length, 0)
    if (estimateContextTokens(rows, extra).tokens <= budget.contextTokens) return true
    const throughSeq = compactionThroughSeq(rows, budget.keepTokens)
    if (throughSeq === undefined) return true
    try {
      await engine.compact(sessionId, { throughSeq })
    } catch (error) {
      const failure = asSessionlineError(error, 'internal')
      if (failure.code !== 'aborted') report(failure, sessionId)
    }
    return true
  }

  /**
   * Whether the open turn was opened by a history verb (docs/decisions/0033) and no step of it
   * ran: the log ends `history/head`, `turn/start` and, for a resend, its prompt.
   */
  async function awaitsAnswer(sessionId: string): Promise<boolean> {
    const session = await engine.getSession(sessionId)
    if (!session) return false
    const tail = await engine.events(sessionId, { afterSeq: Math.max(0, session.headSeq - 3), limit: 3 })
    const at = tail.findLastIndex((e) => e.type === 'history/head')
    if (at < 0) return false
    const after = tail.slice(at + 1)
    return after[0]?.type === 'turn/start' && after.slice(1).every((e) => e.type === 'user/message')
  }

  /**
   * Whether a runner woken by recovery has input to run, read once it holds the lock: some is
   * pending (another runner may have run it all meanwhile), and the session is not paused as the
   * runner that wrote its log left it. It is when the last event ends a turn that was stopped or
   * failed and no pending input was admitted after that (such input lifts the pause, as `onInput`
   * does for a runner that saw it).
   */
  async function leftToRun(sessionId: string): Promise<boolean> {
    const pending = await engine.pending(sessionId)
    if (pending.length === 0) return false
    const session = await engine.getSession(sessionId)
    if (!session) return false
    const [last] = await engine.events(sessionId, { afterSeq: Math.max(0, session.headSeq - 1), limit: 1 })
    if (last?.type !== 'turn/end' || (last.data.reason !== 'aborted' && last.data.reason !== 'error'))
      return true
    return pending.some((input) => input.admittedAt > last.at)
  }

  /**
   * Another engine asks to stop turn `turn`: when it or a later one runs here (or one is being
   * opened), stop it as `interrupt` does. A later one ran on input admitted before the Stop:
   * here that input would have waited, paused, too.
   */
  function stopRequested(sessionId: string, turn: number): void {
    const driver = drivers.get(sessionId)
    const running = driver?.turn?.number
    if (closed || !driver?.turn || (running !== null && running !== undefined && running < turn)) return
    driver.paused = true
    driver.turn.control.abort('interrupt' satisfies StopReason)
  }

  /**
   * Stops the session's open turn when another engine's runner runs it, or nobody does: asks the
   * lock holder (repeating until the lock is free), then takes the lock and ends the turn
   * `aborted` if it is still open (its runner is gone). Resolves once that turn is over. Without
   * a provider, the host may be writing the turn itself: the request is sent, nothing closed.
   */
  async function stopElsewhere(sessionId: string): Promise<void> {
    const { openTurn } = await host.turnState(sessionId)
    if (openTurn === null || closed) return
    host.requestStop(sessionId, openTurn)
    if (!provider) return
    // Said again only while that turn is open: once it ended, a later turn may run on new input.
    const repeat = setInterval(() => {
      host.turnState(sessionId).then(
        (state) => state.openTurn === openTurn && host.requestStop(sessionId, openTurn),
        () => undefined,
      )
    }, STOP_REPEAT_MS)
    ;(repeat as { unref?: () => void }).unref?.()
    try {
      const lock = await acquireLock(
        runnerLockName(lockScope, sessionId),
        { wait: true, signal: closing.signal },
        options.locks,
      )
      if (!lock) return
      clearInterval(repeat)
      try {
        const state = await host.turnState(sessionId)
        if (state.openTurn === openTurn) await closeOrphanTurn(sessionId, state, 'aborted')
      } finally {
        await lock.release()
      }
    } finally {
      clearInterval(repeat)
    }
  }

  /**
   * Closes what a runner that is gone left open, then runs its pending input (see
   * `Runner.recover`); a turn it left waiting for approval is taken up instead. When another
   * runner holds the session's lock, answers at once and waits for the lock as its heir (`inherit`).
   */
  async function takeOver(sessionId: string): Promise<void> {
    const left = await recoverOrphan(sessionId, 'interrupted')
    if (left !== 'busy') await runLeftInput(sessionId, left === 'waiting')
    else
      void inherit(sessionId).catch((error: unknown) => {
        // A session deleted while its heir waited has nothing left to inherit.
        const failure = asSessionlineError(error, 'internal')
        if (failure.code !== 'not_found') report(failure, sessionId)
      })
  }

  /**
   * Waits for the lock of a session another runner drives (once per session at a time): that
   * runner gives it back when it goes idle, or its tab dies with the turn still open, which is
   * then closed here as `interrupted` and its pending input run.
   */
  async function inherit(sessionId: string): Promise<void> {
    if (heirs.has(sessionId)) return
    heirs.add(sessionId)
    let left: 'busy' | 'waiting' | 'closed'
    try {
      left = await recoverOrphan(sessionId, 'interrupted', closing.signal)
      if (left === 'busy') return
    } finally {
      heirs.delete(sessionId)
    }
    await runLeftInput(sessionId, left === 'waiting')
  }

  /**
   * After a takeover: runs the pending input the runner that is gone had accepted, or the turn it
   * left waiting for approval (`waiting`), which goes on with no new input.
   */
  async function runLeftInput(sessionId: string, waiting = false): Promise<void> {
    if (closed) return
    if (!waiting && (await engine.pending(sessionId)).length === 0) return
    const driver = driverOf(sessionId)
    if (driver.loop || driver.paused) return
    driver.resuming = true
    wake(driver)
  }

  return {
    async configure(request) {
      const { provider: config } = parseOrThrow(ConfigureRequest, request, 'configure request')
      if (closed) throw new SessionlineError('invalid_state', 'The runner is closed')
      use(config)
      if (!provider) return
      const waiting = [...deferredRecovery]
      deferredRecovery.clear()
      await Promise.all(waiting.map(takeOver))
      for (const driver of drivers.values()) wake(driver)
    },

    async interrupt(sessionId) {
      if (closed) return
      // A summary being written is stopped too: its compaction commits nothing.
      for (const control of summarizing.get(sessionId) ?? []) control.abort()
      const driver = driverOf(sessionId)
      driver.paused = true
      if (driver.turn) {
        driver.turn.control.abort('interrupt' satisfies StopReason)
        // The interrupted turn only: new input may already be lining up the next one.
        await driver.turn.ended
        return
      }
      // No turn runs here: the open turn, if any, is another engine's, or nobody's.
      await stopElsewhere(sessionId)
    },

    async summarize(sessionId, context) {
      if (closed) throw new SessionlineError('invalid_state', 'The runner is closed')
      const chosen = provider
      if (!chosen) {
        throw new SessionlineError(
          'invalid_state',
          'compact without a summary needs a provider to write it: configure one, or pass `summary`',
          { field: 'summary' },
        )
      }
      const control = new AbortController()
      const running = summarizing.get(sessionId) ?? new Set<AbortController>()
      summarizing.set(sessionId, running)
      running.add(control)
      try {
        return await summarizeContext(chosen, {
          sessionId,
          context,
          signal: control.signal,
          attachment: (attachmentId) => engine.attachment(attachmentId),
        })
      } finally {
        running.delete(control)
        if (running.size === 0) summarizing.delete(sessionId)
      }
    },

    async stopTurn(sessionId) {
      if (closed) return
      const driver = drivers.get(sessionId)
      if (!driver?.turn) return
      // Paused as a stop pauses: the verb commits before anything else runs; input wakes it.
      driver.paused = true
      driver.turn.control.abort('history' satisfies StopReason)
      await driver.turn.ended
    },

    setGate(sessionId, allow) {
      if (allow === !gated.has(sessionId)) return
      if (!allow) {
        gated.add(sessionId)
        return
      }
      gated.delete(sessionId)
      // Input admitted while the gate was shut waits: look at it now.
      const driver = drivers.get(sessionId)
      if (driver) {
        driver.resuming = true
        wake(driver)
      } else if (provider && !closed) wake(driverOf(sessionId))
    },

    runsTurns: () => provider !== undefined && !closed,

    async recover(sessionId) {
      if (closed) return
      if (!provider) {
        // Host-driven: the host may be writing this turn right now; look again once a provider is set.
        deferredRecovery.add(sessionId)
        return
      }
      if (drivers.get(sessionId)?.loop) return
      await takeOver(sessionId)
    },

    async close() {
      if (closed) return
      closed = true
      unsubscribe()
      stopRequests?.()
      closing.abort()
      for (const running of summarizing.values()) for (const control of running) control.abort()
      const loops: Promise<void>[] = []
      for (const driver of drivers.values()) {
        driver.turn?.control.abort('close' satisfies StopReason)
        if (driver.loop) loops.push(driver.loop)
      }
      await Promise.all(loops)
    },
  }
}

function stopReasonOf(control: AbortController): TurnEndReason {
  // A closing engine and a history verb end the turn `interrupted`; a user's stop `aborted`.
  const reason = control.signal.reason
  return reason === 'close' || reason === 'history' ? 'interrupted' : 'aborted'
}
