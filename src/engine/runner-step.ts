/**
 * One step of a turn: one provider request and the tools it called. The step's start is logged,
 * the model-visible context read, the stream shown live (`publishLive`) and persisted as
 * coalesced `assistant/delta` batches through an append queue that keeps call order; tool calls
 * run once the model is done; the step ends in the log however it ends.
 */
import { nanoid } from 'nanoid'
import { contextOfVisible } from '../core/history-tree'
import type { Usage } from '../schema/common'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { Finish, SessionEvent } from '../schema/events'
import type { ToolPart } from '../schema/messages'
import type { ModelProvider, ProviderChunk, ToolSpec, Tools } from './provider'
import { abortError, raceAbort } from './providers/abort'
import { awaitingCalls, type WaitingStep } from './runner-approvals'
import { type VisibleContext, watchVisibleContext } from './runner-context'
import { runTools } from './runner-tools'
import type { Engine, RunnerHost } from './types'

/** What a turn runs with: the provider and tools it started with, and the specs the provider is told. */
export interface TurnSetup {
  readonly provider: ModelProvider
  readonly tools: Tools
  readonly specs: readonly ToolSpec[]
}

/** The part of the runner's per-session state a step reads and writes. */
export interface StepDriver {
  readonly sessionId: string
  /** Inputs admitted so far, to tell input that came after a failure. */
  readonly inputs: number
  /** `inputs` when the running turn failed. */
  failedAt: number | null
  /** The model-visible transcript, followed in memory while the runner holds the lock. */
  context: VisibleContext | null
}

/** Appends in call order, one transaction per call; after a failed append every later one fails too. */
export interface AppendQueue {
  append(events: readonly SessionEvent[]): Promise<void>
  /** Resolves once every append so far has finished, whatever its outcome. */
  settled(): Promise<void>
}

export interface StepDeps {
  host: RunnerHost
  /** Longest time streamed text waits before it is persisted, in ms. */
  flushMs: number
  report(error: SessionlineError, sessionId: string): void
}

export function createStepRunner({ host, flushMs, report }: StepDeps) {
  const { engine } = host

  /**
   * One provider request and the tools it called. Returns how it finished; on `aborted` and
   * `error` the step is already closed in the log (best effort: a failing log is reported).
   */
  async function runStep(
    driver: StepDriver,
    turn: number,
    step: number,
    setup: TurnSetup,
    signal: AbortSignal,
  ): Promise<StepOutcome> {
    const { sessionId } = driver
    const messageId = `msg_${nanoid()}`
    const { headSeq } = await engine.append(sessionId, [
      { type: 'step/start', data: { turn, step } },
      { type: 'assistant/start', data: { messageId, turn, step } },
    ])
    const writer = createAppendQueue(engine, sessionId)
    const stream = createStreamBuffer(sessionId, messageId, writer)
    let messageOpen = true
    try {
      // The transcript through this step's start, but for the step's own (still empty) row.
      driver.context ??= watchVisibleContext(engine, sessionId)
      // In the order the model gets it, as `context()` answers (core/history-tree).
      const context = contextOfVisible(await driver.context.read(headSeq, messageId))
      // Stopped while the step was written or its context read: no request goes out.
      if (signal.aborted) throw abortError('step')
      const calls: Extract<ProviderChunk, { type: 'tool-call' }>[] = []
      const reported: { finish: Finish; usage?: Usage } = { finish: 'stop' }
      const chunks = setup.provider({
        sessionId,
        turn,
        step,
        context,
        tools: setup.specs,
        signal,
        attachment: (attachmentId) => engine.attachment(attachmentId),
      })
      await forEachChunk(chunks, signal, (chunk) => {
        switch (chunk.type) {
          case 'text':
          case 'reasoning':
            if (chunk.text !== '') stream.add(chunk.type, chunk.text)
            return
          case 'tool-call':
            // A call the provider ran itself is logged and answered by its `tool-result` chunk.
            if (!chunk.providerExecuted) calls.push(chunk)
            // With the text streamed before it, in one transaction. A failed write fails the
            // writer, and with it the step's next awaited write.
            writer
              .append([
                ...stream.take(),
                {
                  type: 'tool/call',
                  data: { messageId, callId: chunk.callId, name: chunk.name, input: chunk.input },
                },
              ])
              .catch(() => {})
            return
          case 'tool-result':
            writer
              .append([
                ...stream.take(),
                {
                  type: 'tool/result',
                  data: { callId: chunk.callId, output: chunk.output, isError: chunk.isError },
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
      // A provider may end its stream normally after our abort: the abort is what happened.
      if (signal.aborted) throw abortError('step')
      // Calls mean the model waits for their results, whatever finish it reported.
      const { usage } = reported
      const finish =
        calls.length > 0 ? 'tool-calls' : reported.finish === 'tool-calls' ? 'stop' : reported.finish
      await writer.append([
        ...stream.take(),
        { type: 'assistant/end', data: withUsage({ messageId, finish }, usage) },
      ])
      messageOpen = false
      if (calls.length > 0) {
        const run = { host, sessionId, tools: setup.tools, signal, appender: writer }
        if ((await runTools(run, calls)) === 'suspended') return suspend(writer)
      }
      if (signal.aborted) throw abortError('step')
      await writer.append([{ type: 'step/end', data: withUsage({ turn, step }, usage) }])
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

  /**
   * Takes up the step of the open turn that a runner that is gone left waiting for approval
   * (`waiting.row`, the step's assistant row, has ended). Calls a person approved whose result
   * is not in run now (approved is a request to run; a runner that died mid-run leaves it to
   * run again); calls that ran unattended then never answer (an error result, rather than run
   * twice); waiting ones are waited for. Then the step ends and the turn goes on.
   */
  async function resumeStep(
    driver: StepDriver,
    turn: number,
    waiting: WaitingStep,
    setup: TurnSetup,
    signal: AbortSignal,
  ): Promise<StepOutcome> {
    const { sessionId } = driver
    const { step, row, approved } = waiting
    const writer = createAppendQueue(engine, sessionId)
    try {
      const running = row.parts.filter(
        (part): part is ToolPart => part.type === 'tool' && part.state === 'running',
      )
      const lost = running.filter((part) => !approved.has(part.callId))
      if (lost.length > 0) {
        await writer.append(
          lost.map((part) => ({
            type: 'tool/result',
            data: { callId: part.callId, output: { error: LOST_RESULT }, isError: true },
          })),
        )
      }
      const toRun = [...awaitingCalls(row), ...running.filter((part) => approved.has(part.callId))]
      const calls = toRun.map((part) => ({
        type: 'tool-call' as const,
        callId: part.callId,
        name: part.name,
        input: part.input,
      }))
      const run = { host, sessionId, tools: setup.tools, signal, appender: writer }
      // Their requests are in the log; an approved one finds its answer there at once.
      const asked = new Set(toRun.map((part) => part.callId))
      if ((await runTools(run, calls, asked)) === 'suspended') return suspend(writer)
      if (signal.aborted) throw abortError('step')
      await writer.append([{ type: 'step/end', data: { turn, step } }])
      return 'tool-calls'
    } catch (error) {
      const aborted = signal.aborted
      if (!aborted) {
        driver.failedAt ??= driver.inputs
        report(asSessionlineError(error, 'internal'), sessionId)
      }
      await writer
        .settled()
        .then(() => engine.append(sessionId, [{ type: 'step/end', data: { turn, step } }]))
        .catch((writeError: unknown) => {
          report(asSessionlineError(writeError, 'internal'), sessionId)
        })
      return aborted ? 'aborted' : 'error'
    }
  }

  /** The step stays open in the log, its calls waiting, once what was written so far landed. */
  async function suspend(writer: AppendQueue): Promise<'suspended'> {
    await writer.settled()
    return 'suspended'
  }

  /**
   * Streamed text: shown to watchers at once (`publishLive`), persisted as coalesced
   * `assistant/delta` batches at most every `flushMs`, or with whatever is logged next.
   */
  function createStreamBuffer(sessionId: string, messageId: string, writer: AppendQueue) {
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
      if (events.length > 0) writer.append(events).catch(() => {})
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

  return { runStep, resumeStep }
}

/**
 * How a step ended: as its message finished, or `suspended` (the engine closed while calls
 * waited for approval: the step and turn stay open in the log, for the next runner).
 */
export type StepOutcome = Finish | 'suspended'

/** What a call that was running when its runner went away answers: it is not run again. */
export const LOST_RESULT = 'The tool call was interrupted before it returned (its runner stopped)'

function createAppendQueue(engine: Engine, sessionId: string): AppendQueue {
  let tail: Promise<unknown> = Promise.resolve()
  let failure: unknown
  return {
    append(events: readonly SessionEvent[]): Promise<void> {
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

export function asSessionlineError(error: unknown, code: 'internal' | 'provider_error'): SessionlineError {
  if (isSessionlineError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new SessionlineError(code, message, undefined, { cause: error })
}
