/**
 * The runner: an agent loop beside the engine that drives sessions with a model provider,
 * following the inbox rules (DESIGN.md §5).
 *
 * - An idle session with pending input gets a turn: `promote(…, 'settled')`.
 * - Each provider request is one step: `step/start`, `assistant/start`, coalesced
 *   `assistant/delta`s and `tool/call`s, `assistant/end`, the tools' `tool/result`s, `step/end`.
 * - The safe boundary is just before each provider request, after tool results settle: there
 *   `promote(…, 'checkpoint')` brings in pending steers. After a final answer, pending steers keep
 *   the turn going; otherwise `turn/end completed`, and the next queued input opens the next turn.
 * - A runner drives a session only while it holds the session's lock (src/engine/locks.ts), so
 *   an open turn found under the lock was left by a runner that is gone: it is closed as
 *   `interrupted`.
 * - Every path ends the turn it opened: `aborted` on interrupt, `error` when the provider or
 *   the log fails, `interrupted` when the engine closes mid-turn. Pending input is never touched
 *   except by `promote`: after an interrupt, a failed turn or a recovery the session waits for
 *   the next input before it runs what is pending.
 * - With no provider (host-driven mode) it runs nothing, and recovery waits until one is set:
 *   the host may be writing that open turn itself.
 *
 * @example
 *   const runner = createRunner(host, { provider: { kind: 'scripted', wordDelayMs: 0 } })
 *   await host.engine.admit(sessionId, { text: 'hello' }) // host.onInput wakes the runner
 */

import { nanoid } from 'nanoid'
import { Json, type Usage } from '../schema/common'
import { isSessionlineError, parseOrThrow, SessionlineError } from '../schema/errors'
import type { Finish, SessionEvent, TurnEndReason } from '../schema/events'
import { ConfigureRequest, type ProviderConfig } from '../schema/provider'
import { acquireLock, type LockRequester, runnerLockName } from './locks'
import type { ModelProvider, ProviderChunk, ToolSpec, Tools } from './provider'
import { abortError } from './providers/abort'
import { providerFromConfig } from './providers/index'
import { type VisibleContext, watchVisibleContext } from './runner-context'
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
}

const DEFAULT_MAX_STEPS = 24
const DEFAULT_FLUSH_MS = 50

/** What stopped a turn from outside: the user (`interrupt`) or the engine closing. */
type StopReason = 'interrupt' | 'close'

interface SessionDriver {
  readonly sessionId: string
  /** The drive loop while it runs (it holds the session lock). */
  loop: Promise<void> | null
  /** Input arrived while the loop ran: look again before going idle. */
  dirty: boolean
  /** Set by an interrupt or a failed turn: start no turn until new input arrives. */
  paused: boolean
  /** Inputs admitted so far (counts `onInput` calls), to tell input that came after a failure. */
  inputs: number
  /** `inputs` when the running turn failed. */
  failedAt: number | null
  /** The running turn (or the one being opened), while there is one. */
  turn: RunningTurn | null
  /** The model-visible transcript, followed in memory while this runner holds the session's lock. */
  context: VisibleContext | null
}

interface TurnSetup {
  readonly provider: ModelProvider
  readonly tools: Tools
  /** What the provider is told of `tools`, derived once per turn. */
  readonly specs: readonly ToolSpec[]
}

interface RunningTurn {
  /** Aborts every step and tool of the turn. */
  readonly control: AbortController
  /** Resolves once the turn is over (its `turn/end` written or given up), or was never opened. */
  readonly ended: Promise<void>
}

export function createRunner(host: RunnerHost, options: RunnerOptions = {}): Runner {
  const { engine } = host
  const lockScope = options.lockScope ?? 'sessionline'
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS
  const flushMs = options.flushMs ?? DEFAULT_FLUSH_MS
  const report =
    options.onError ??
    ((error: SessionlineError, sessionId: string) => {
      console.warn(`sessionline runner (session ${sessionId}): ${error.message}`)
    })

  let provider: ModelProvider | undefined
  let tools: Tools = {}
  const drivers = new Map<string, SessionDriver>()
  /** Sessions whose open turn waits for a provider to be configured before it is recovered. */
  const deferredRecovery = new Set<string>()
  const closing = new AbortController()
  let closed = false

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
    while (!closed && !driver.paused) {
      // A turn keeps the provider and tools it started with; `configure` applies to the next one.
      if (!provider) return
      const setup: TurnSetup = { provider, tools, specs: toolSpecs(tools) }
      // Armed before anything is awaited: an interrupt while the state is read or the turn is
      // promoted open aborts this control, and each phase below looks at it after its await.
      const control = new AbortController()
      let markEnded!: () => void
      driver.turn = { control, ended: new Promise((resolve) => (markEnded = resolve)) }
      try {
        const state = await host.turnState(sessionId)
        if (control.signal.aborted) return
        if (state.openTurn !== null) {
          // We hold the lock and run no turn here, so whoever opened this one is gone.
          await closeOrphanTurn(sessionId, state, 'interrupted')
          continue
        }
        // The promoted rows belong to the turn this promote opened (an interrupt during it
        // ends that turn at once: runTurn looks at the signal before its first step).
        const [first] = await engine.promote(sessionId, 'settled')
        if (!first) return
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
  ): Promise<void> {
    const { sessionId } = driver
    let reason: TurnEndReason = 'completed'
    driver.failedAt = null
    const fail = () => {
      reason = 'error'
      driver.failedAt ??= driver.inputs
    }
    try {
      let step = 0
      let atBoundary = true
      while (true) {
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
   * One provider request and the tools it called. Returns how it finished; on `aborted` and
   * `error` the step is already closed in the log (best effort: a failing log is reported).
   */
  async function runStep(
    driver: SessionDriver,
    turn: number,
    step: number,
    setup: TurnSetup,
    signal: AbortSignal,
  ): Promise<Finish> {
    const { sessionId } = driver
    const messageId = `msg_${nanoid()}`
    const { headSeq } = await engine.append(sessionId, [
      { type: 'step/start', data: { turn, step } },
      { type: 'assistant/start', data: { messageId, turn, step } },
    ])
    const writer = createWriter(sessionId)
    const stream = createStreamBuffer(sessionId, messageId, writer)
    let messageOpen = true
    try {
      // The transcript through this step's start, but for the step's own (still empty) row.
      driver.context ??= watchVisibleContext(engine, sessionId)
      const context = await driver.context.read(headSeq, messageId)
      // Stopped while the step was written or its context read: no request goes out.
      if (signal.aborted) throw abortError('step')
      const calls: Extract<ProviderChunk, { type: 'tool-call' }>[] = []
      const reported: { finish: Finish; usage?: Usage } = { finish: 'stop' }
      const chunks = setup.provider({ sessionId, turn, step, context, tools: setup.specs, signal })
      await forEachChunk(chunks, signal, (chunk) => {
        switch (chunk.type) {
          case 'text':
          case 'reasoning':
            if (chunk.text !== '') stream.add(chunk.type, chunk.text)
            return
          case 'tool-call':
            calls.push(chunk)
            // With the text streamed before it, in one transaction. A failed write fails the
            // writer, and with it the step's next awaited write.
            writer
              .write([
                ...stream.take(),
                {
                  type: 'tool/call',
                  data: { messageId, callId: chunk.callId, name: chunk.name, input: chunk.input },
                },
              ])
              .catch(() => {})
            return
          case 'finish':
            reported.finish = chunk.finish
            reported.usage = chunk.usage
            return
        }
      })
      // Calls mean the model waits for their results, whatever finish it reported.
      const { usage } = reported
      const finish =
        calls.length > 0 ? 'tool-calls' : reported.finish === 'tool-calls' ? 'stop' : reported.finish
      await writer.write([
        ...stream.take(),
        { type: 'assistant/end', data: withUsage({ messageId, finish }, usage) },
      ])
      messageOpen = false
      if (calls.length > 0) await runTools(sessionId, setup.tools, calls, signal, writer)
      if (signal.aborted) throw abortError('step')
      await writer.write([{ type: 'step/end', data: withUsage({ turn, step }, usage) }])
      return finish
    } catch (error) {
      const aborted = signal.aborted
      if (!aborted) {
        driver.failedAt ??= driver.inputs
        report(asSessionlineError(error, 'provider_error'), sessionId)
      }
      // Through the writer: after a failed write, text must not land past the gap.
      stream.flush()
      const closeEvents: SessionEvent[] = []
      if (messageOpen) {
        closeEvents.push({
          type: 'assistant/end',
          data: { messageId, finish: aborted ? 'aborted' : 'error' },
        })
      }
      closeEvents.push({ type: 'step/end', data: { turn, step } })
      // Straight to the log once earlier writes settled: the writer may be failed for good.
      await writer
        .settled()
        .then(() => engine.append(sessionId, closeEvents))
        .catch((writeError: unknown) => {
          report(asSessionlineError(writeError, 'internal'), sessionId)
        })
      return aborted ? 'aborted' : 'error'
    } finally {
      stream.take() // stops its timer: whatever is left was written or is moot
    }
  }

  /** Runs the calls concurrently; each result is logged as soon as it settles. */
  async function runTools(
    sessionId: string,
    tools: Tools,
    calls: readonly Extract<ProviderChunk, { type: 'tool-call' }>[],
    signal: AbortSignal,
    writer: Writer,
  ): Promise<void> {
    await Promise.all(
      calls.map(async (call) => {
        const result = await runTool(sessionId, tools, call, signal)
        if (signal.aborted) return
        await writer.write([{ type: 'tool/result', data: { callId: call.callId, ...result } }])
      }),
    )
  }

  async function runTool(
    sessionId: string,
    tools: Tools,
    call: Extract<ProviderChunk, { type: 'tool-call' }>,
    signal: AbortSignal,
  ): Promise<{ output: Json; isError: boolean }> {
    const tool = Object.hasOwn(tools, call.name) ? tools[call.name] : undefined
    if (!tool) return { output: { error: `Unknown tool "${call.name}"` }, isError: true }
    try {
      const output = await raceAbort(
        Promise.resolve().then(() => tool.run(call.input, { signal, sessionId, callId: call.callId })),
        signal,
      )
      const json = Json.safeParse(output)
      return json.success
        ? { output: json.data, isError: false }
        : { output: { error: `Tool "${call.name}" returned a value that is not JSON` }, isError: true }
    } catch (error) {
      return { output: { error: error instanceof Error ? error.message : String(error) }, isError: true }
    }
  }

  function toolSpecs(tools: Tools): ToolSpec[] {
    return Object.entries(tools).map(([name, tool]) => {
      const spec: ToolSpec = { name }
      if (tool.description !== undefined) spec.description = tool.description
      if (tool.parameters !== undefined) spec.parameters = tool.parameters
      return spec
    })
  }

  type Writer = ReturnType<typeof createWriter>

  /** Appends in call order, one transaction per call; after a failed write every later one fails too, so nothing lands past a gap. */
  function createWriter(sessionId: string) {
    let tail: Promise<unknown> = Promise.resolve()
    let failure: unknown
    return {
      write(events: readonly SessionEvent[]): Promise<void> {
        const written = tail.then(async () => {
          if (failure !== undefined) throw failure
          await engine.append(sessionId, events)
        })
        tail = written.catch((error: unknown) => {
          failure ??= error
        })
        return written
      },
      /** Resolves once every write so far has finished, whatever its outcome. */
      settled: (): Promise<void> => tail.then(() => {}),
    }
  }

  /**
   * Streamed text: shown to watchers at once (`publishLive`), persisted as coalesced
   * `assistant/delta` batches at most every `flushMs`, or with whatever is logged next.
   */
  function createStreamBuffer(sessionId: string, messageId: string, writer: Writer) {
    let pending: { kind: 'text' | 'reasoning'; text: string }[] = []
    let timer: ReturnType<typeof setTimeout> | undefined
    /** The text not yet persisted, as events, and forgets it (the caller writes them). */
    const take = (): SessionEvent[] => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      const events: SessionEvent[] = pending.map(({ kind, text }) => ({
        type: 'assistant/delta',
        data: kind === 'text' ? { messageId, text } : { messageId, reasoning: text },
      }))
      pending = []
      return events
    }
    const flush = () => {
      const events = take()
      // A failed batch fails the writer, and with it the step's next awaited write.
      if (events.length > 0) writer.write(events).catch(() => {})
    }
    return {
      add(kind: 'text' | 'reasoning', text: string) {
        const last = pending.at(-1)
        if (last?.kind === kind) last.text += text
        else pending.push({ kind, text })
        const data = kind === 'text' ? { messageId, text } : { messageId, reasoning: text }
        host.publishLive(sessionId, [{ type: 'assistant/delta', data }])
        if (timer === undefined) timer = setTimeout(flush, flushMs)
      },
      take,
      flush,
    }
  }

  /** Ends a turn nobody runs: closes its open message and step, then the turn itself. */
  async function closeOrphanTurn(sessionId: string, state: TurnState, reason: TurnEndReason): Promise<void> {
    const turn = state.openTurn
    if (turn === null) return
    const events: SessionEvent[] = []
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

  /** Closes an orphaned open turn if this runner can take the session's lock (no live runner owns it). */
  async function recoverOrphan(sessionId: string, reason: TurnEndReason): Promise<void> {
    const lock = await acquireLock(runnerLockName(lockScope, sessionId), { wait: false }, options.locks)
    if (!lock) return
    try {
      const state = await host.turnState(sessionId)
      if (state.openTurn !== null) await closeOrphanTurn(sessionId, state, reason)
    } finally {
      await lock.release()
    }
  }

  return {
    async configure(request) {
      const { provider: config } = parseOrThrow(ConfigureRequest, request, 'configure request')
      if (closed) throw new SessionlineError('invalid_state', 'The runner is closed')
      use(config)
      if (!provider) return
      const waiting = [...deferredRecovery]
      deferredRecovery.clear()
      await Promise.all(waiting.map((sessionId) => recoverOrphan(sessionId, 'interrupted')))
      for (const driver of drivers.values()) wake(driver)
    },

    async interrupt(sessionId) {
      if (closed) return
      const driver = driverOf(sessionId)
      driver.paused = true
      if (driver.turn) {
        driver.turn.control.abort('interrupt' satisfies StopReason)
        // The interrupted turn only: new input may already be lining up the next one.
        await driver.turn.ended
        return
      }
      // Between turns (or waiting for another runner's lock): pausing is enough.
      if (driver.loop) return
      // Not ours: end an orphaned turn (no live runner holds its lock) unless the host drives turns.
      if (provider) await recoverOrphan(sessionId, 'aborted')
    },

    async recover(sessionId) {
      if (closed) return
      if (!provider) {
        // Host-driven: the host may be writing this turn right now; look again once a provider is set.
        deferredRecovery.add(sessionId)
        return
      }
      if (drivers.get(sessionId)?.loop) return
      await recoverOrphan(sessionId, 'interrupted')
    },

    async close() {
      if (closed) return
      closed = true
      unsubscribe()
      closing.abort()
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
  return control.signal.reason === 'close' ? 'interrupted' : 'aborted'
}

function withUsage<T extends object>(data: T, usage: Usage | undefined): T & { usage?: Usage } {
  return usage ? { ...data, usage } : data
}

/**
 * Feeds every chunk to `onChunk`, and stops waiting as soon as `signal` aborts even when the
 * provider does not honour it (its iterator is then told to return, in the background).
 */
async function forEachChunk(
  chunks: AsyncIterable<ProviderChunk>,
  signal: AbortSignal,
  onChunk: (chunk: ProviderChunk) => void,
): Promise<void> {
  const iterator = chunks[Symbol.asyncIterator]()
  try {
    while (true) {
      const next = await raceAbort(iterator.next(), signal)
      if (next.done) return
      onChunk(next.value)
    }
  } catch (error) {
    void Promise.resolve()
      .then(() => iterator.return?.())
      .catch(() => {})
    throw error
  }
}

/** `promise`, or an `aborted` rejection as soon as `signal` aborts (the loser's rejection is swallowed). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(abortError('step'))
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError('step'))
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

function asSessionlineError(error: unknown, code: 'internal' | 'provider_error'): SessionlineError {
  if (isSessionlineError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new SessionlineError(code, message, undefined, { cause: error })
}
