/**
 * Helpers for runner tests: engines on fake-indexeddb with a provider, waiting on the change
 * feed (never on sleeps), and providers that hold a step open until the test lets go.
 */
import type { EngineOptions } from '../../src/engine/engine'
import type { ModelProvider, ProviderChunk } from '../../src/engine/provider'
import { abortError } from '../../src/engine/providers/abort'
import { createScriptedProvider } from '../../src/engine/providers/scripted'
import type { Engine } from '../../src/engine/types'
import type { StoredEvent } from '../../src/schema/events'
import type { SessionMessage } from '../../src/schema/messages'
import { type EngineFactory, inProcessEngine, type TestEngine } from '../support/engines'

export const scripted = (seed = 1, toolRate = 0) =>
  createScriptedProvider({ kind: 'scripted', seed, wordDelayMs: 0, toolRate })

export async function startEngine(
  options: EngineOptions = {},
  factory: EngineFactory = inProcessEngine,
): Promise<TestEngine & { sessionId: string }> {
  const started = await factory(options)
  const { id } = await started.engine.createSession({ title: 'runner test' })
  return { ...started, sessionId: id }
}

export async function allEvents(engine: Engine, sessionId: string): Promise<StoredEvent[]> {
  const out: StoredEvent[] = []
  while (true) {
    const page = await engine.events(sessionId, { afterSeq: out.at(-1)?.seq ?? 0, limit: 1000 })
    out.push(...page)
    if (page.length < 1000) return out
  }
}

export async function allRows(engine: Engine, sessionId: string): Promise<SessionMessage[]> {
  return (await engine.loadThrough(sessionId, { seq: 0 })).messages
}

/**
 * Resolves once `check` holds, re-checking after every change the session's feed delivers
 * (and once at the start). Rejects if `check` throws.
 */
export async function waitFor(
  engine: Engine,
  sessionId: string,
  check: () => Promise<boolean>,
): Promise<void> {
  let settle!: { resolve: () => void; reject: (error: unknown) => void }
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject }
  })
  let finished = false
  let running = false
  let again = false
  const run = async () => {
    if (finished) return
    if (running) {
      again = true
      return
    }
    running = true
    try {
      do {
        again = false
        if (await check()) {
          finished = true
          settle.resolve()
          return
        }
      } while (again && !finished)
    } catch (error) {
      finished = true
      settle.reject(error)
    } finally {
      running = false
    }
  }
  const unsubscribe = await engine.watch(sessionId, () => void run())
  void run()
  try {
    await done
  } finally {
    unsubscribe()
  }
}

export const countOf = (events: readonly StoredEvent[], type: StoredEvent['type']) =>
  events.filter((e) => e.type === type).length

/** Waits until the log holds `n` ended turns. */
export const untilTurnsEnded = (engine: Engine, sessionId: string, n: number) =>
  waitFor(engine, sessionId, async () => countOf(await allEvents(engine, sessionId), 'turn/end') >= n)

/** Waits until the log holds an event of `type` (optionally matching `where`). */
export const untilEvent = (
  engine: Engine,
  sessionId: string,
  type: StoredEvent['type'],
  where: (e: StoredEvent) => boolean = () => true,
) =>
  waitFor(engine, sessionId, async () =>
    (await allEvents(engine, sessionId)).some((e) => e.type === type && where(e)),
  )

/**
 * Wraps a provider: in the step `holdAt` picks, streams `words` and then holds the step open until
 * its signal aborts (the model "still thinking"); every other step goes to `inner`.
 */
export function holdingProvider(
  inner: ModelProvider,
  words: readonly string[],
  holdAt: (turn: number, step: number) => boolean = (turn, step) => turn === 1 && step === 1,
): ModelProvider {
  return (request) => {
    if (!holdAt(request.turn, request.step)) return inner(request)
    return (async function* (): AsyncGenerator<ProviderChunk> {
      for (const word of words) yield { type: 'text', text: word }
      await new Promise<never>((_, reject) => {
        if (request.signal.aborted) reject(abortError('model request'))
        request.signal.addEventListener('abort', () => reject(abortError('model request')), { once: true })
      })
    })()
  }
}

/** Wraps a provider: runs `before` just before the finish chunk of the steps `at` picks. */
export function beforeFinish(
  inner: ModelProvider,
  at: (turn: number, step: number) => boolean,
  before: () => Promise<unknown>,
): ModelProvider {
  return (request) =>
    (async function* () {
      for await (const chunk of inner(request)) {
        if (chunk.type === 'finish' && at(request.turn, request.step)) await before()
        yield chunk
      }
    })()
}

/** The turn/start…turn/end slices of a log, keyed by turn number. */
export function turnsOf(events: readonly StoredEvent[]): Map<number, StoredEvent[]> {
  const turns = new Map<number, StoredEvent[]>()
  let current: StoredEvent[] | undefined
  for (const event of events) {
    if (event.type === 'turn/start') {
      current = []
      turns.set(event.data.turn, current)
    }
    current?.push(event)
    if (event.type === 'turn/end') current = undefined
  }
  return turns
}

/** Checks the log grammar the runner promises: every turn closed, steps and messages nested. */
export function expectWellFormed(events: readonly StoredEvent[]): string[] {
  const problems: string[] = []
  let openTurn: number | null = null
  let openStep: number | null = null
  let openMessage: string | null = null
  for (const e of events) {
    switch (e.type) {
      case 'turn/start':
        if (openTurn !== null) problems.push(`turn ${e.data.turn} starts inside turn ${openTurn}`)
        openTurn = e.data.turn
        break
      case 'step/start':
        if (openStep !== null) problems.push(`step ${e.data.step} starts inside step ${openStep}`)
        openStep = e.data.step
        break
      case 'assistant/start':
        openMessage = e.data.messageId
        break
      case 'assistant/end':
        if (openMessage !== e.data.messageId) problems.push(`assistant/end of ${e.data.messageId} not open`)
        openMessage = null
        break
      case 'step/end':
        if (openMessage !== null) problems.push(`step ${e.data.step} ends with message ${openMessage} open`)
        openStep = null
        break
      case 'turn/end':
        if (openStep !== null) problems.push(`turn ${e.data.turn} ends with step ${openStep} open`)
        openTurn = null
        break
      case 'user/message':
        if (openStep !== null) problems.push(`user/message ${e.data.inputId} inside step ${openStep}`)
        break
    }
  }
  if (openTurn !== null) problems.push(`turn ${openTurn} never ended`)
  return problems
}
