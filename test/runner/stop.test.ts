/**
 * Stop always stops: an interrupt that arrives in any phase of the runner's loop ends the turn
 * (or keeps it from opening), resolves once it took effect, and no provider request starts
 * after it. Each phase is held open by a gate in the host or the provider, so the interrupt
 * lands exactly there; the runner is then left to go idle (it gives its session lock back)
 * before the log is read.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { createEngineWithHost } from '../../src/engine/engine'
import { createInProcessLocks, type LockRequester } from '../../src/engine/locks'
import type { ModelProvider, Tools } from '../../src/engine/provider'
import { abortError } from '../../src/engine/providers/abort'
import { createRunner } from '../../src/engine/runner'
import type { Engine, RunnerHost } from '../../src/engine/types'
import type { StoredEvent } from '../../src/schema/events'
import { freshDbName } from '../support/engines'
import { createSignal } from '../support/feed'
import { allEvents, expectWellFormed } from './harness'

afterEach(() => {
  vi.restoreAllMocks()
})

/** A point the runner stops at until the test lets go; `reached` resolves when it got there. */
function createGate() {
  let arrive!: () => void
  let open!: () => void
  const reached = new Promise<void>((resolve) => {
    arrive = resolve
  })
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  let armed = true
  return {
    reached,
    /** Called by the runner's side: the first call waits for `release`, later ones pass. */
    async pass(): Promise<void> {
      if (!armed) return
      armed = false
      arrive()
      await opened
    },
    release: () => open(),
  }
}

/** An in-process lock manager that tells when no lock is held (the runner went idle). */
function observedLocks() {
  const inner = createInProcessLocks()
  const changed = createSignal()
  let held = 0
  const locks: LockRequester = {
    request(name, options, callback) {
      return inner.request(name, options, async (lock) => {
        if (lock) held++
        try {
          return await callback(lock)
        } finally {
          if (lock) held--
          changed.notify()
        }
      })
    },
  }
  return { locks, idle: () => changed.until(() => held === 0, 'the runner to give its lock back') }
}

type Phase =
  | 'reading the turn state'
  | 'promoting the turn open'
  | 'writing the step start'
  | 'streaming'
  | 'running a tool'
  | 'between steps'

/**
 * Step 1 calls the tool `slow`, step 2 answers; in the `streaming` phase step 1 streams a word and
 * then waits for its signal. Every request is counted, and marked if it started after the stop.
 */
function providerFor(phase: Phase, gate: ReturnType<typeof createGate>, stopped: () => boolean) {
  const requests: { step: number; afterStop: boolean }[] = []
  const provider: ModelProvider = (request) => {
    requests.push({ step: request.step, afterStop: stopped() })
    return (async function* () {
      if (phase === 'streaming') {
        yield { type: 'text', text: 'thinking' } as const
        await gate.pass()
        await new Promise<never>((_, reject) => {
          if (request.signal.aborted) reject(abortError('model request'))
          request.signal.addEventListener('abort', () => reject(abortError('model request')), { once: true })
        })
      }
      if (request.step === 1) {
        yield { type: 'tool-call', callId: 'c1', name: 'slow', input: {} } as const
        yield { type: 'finish', finish: 'tool-calls' } as const
        return
      }
      yield { type: 'text', text: 'done' } as const
      yield { type: 'finish', finish: 'stop' } as const
    })()
  }
  return { provider, requests }
}

/** The host the runner sees, with `gate` in front of the call of `phase` (the others pass through). */
function gatedHost(host: RunnerHost, phase: Phase, gate: ReturnType<typeof createGate>): RunnerHost {
  const engine: Engine = { ...host.engine }
  let checkpoints = 0
  engine.promote = async (sessionId, mode) => {
    if (mode === 'settled' && phase === 'promoting the turn open') await gate.pass()
    // The first checkpoint comes before step 1; the second is the boundary after it.
    if (mode === 'checkpoint' && ++checkpoints === 2 && phase === 'between steps') await gate.pass()
    return host.engine.promote(sessionId, mode)
  }
  engine.append = async (sessionId, events) => {
    if (events[0]?.type === 'step/start' && phase === 'writing the step start') await gate.pass()
    return host.engine.append(sessionId, events)
  }
  return {
    ...host,
    engine,
    async turnState(sessionId) {
      if (phase === 'reading the turn state') await gate.pass()
      return host.turnState(sessionId)
    },
  }
}

const turnEnds = (events: readonly StoredEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []))

describe('interrupt stops the runner in every phase of its loop', () => {
  test.each<[Phase, { turnOpened: boolean; requests: number }]>([
    ['reading the turn state', { turnOpened: false, requests: 0 }],
    ['promoting the turn open', { turnOpened: true, requests: 0 }],
    ['writing the step start', { turnOpened: true, requests: 0 }],
    ['streaming', { turnOpened: true, requests: 1 }],
    ['running a tool', { turnOpened: true, requests: 1 }],
    ['between steps', { turnOpened: true, requests: 1 }],
  ])(
    'while %s: the turn ends aborted (or never opens) and no request starts after',
    async (phase, expected) => {
      const dbName = freshDbName('stop')
      const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
      const gate = createGate()
      let isStopped = false
      const { provider, requests } = providerFor(phase, gate, () => isStopped)
      const tools: Tools = {
        slow: {
          async run(_input, { signal }) {
            if (phase === 'running a tool') await gate.pass()
            if (signal.aborted) throw abortError('tool')
            return 'ok'
          },
        },
      }
      const { locks, idle } = observedLocks()
      const runner = createRunner(gatedHost(host, phase, gate), { provider, tools, locks, lockScope: dbName })
      try {
        const { id: sessionId } = await engine.createSession()
        const input = await engine.admit(sessionId, { text: 'go' })
        await gate.reached
        const stop = runner.interrupt(sessionId).then(() => {
          isStopped = true
        })
        gate.release()
        await stop
        await idle()

        const events = await allEvents(engine, sessionId)
        expect(expectWellFormed(events)).toEqual([])
        expect(turnEnds(events)).toEqual(expected.turnOpened ? ['aborted'] : [])
        expect(requests.filter((r) => r.afterStop)).toEqual([])
        expect(requests).toHaveLength(expected.requests)
        // Never opened: the input waits, pending, for the next one.
        const pending = (await engine.pending(sessionId)).map((r) => r.id)
        expect(pending).toEqual(expected.turnOpened ? [] : [input.id])
      } finally {
        await runner.close()
        await engine.close()
      }
    },
  )
})

describe('a stopped session stays stopped until new input arrives', () => {
  test('editing or cancelling a pending input after an interrupt never restarts the session; a new admit does', async () => {
    const dbName = freshDbName('stop-edit')
    const { engine, host } = createEngineWithHost({ dbName, indexedDB, IDBKeyRange })
    const { locks, idle } = observedLocks()
    let lockRequests = 0
    const counting: LockRequester = {
      request(name, options, callback) {
        lockRequests++
        return locks.request(name, options, callback)
      },
    }
    const gate = createGate()
    const { provider } = providerFor('streaming', gate, () => false)
    const runner = createRunner(host, { provider, locks: counting, lockScope: dbName })
    try {
      const { id: sessionId } = await engine.createSession()
      await engine.admit(sessionId, { text: 'go' })
      await gate.reached
      const queued = await engine.admit(sessionId, { text: 'next', delivery: 'queue' })
      const steer = await engine.admit(sessionId, { text: 'and this', delivery: 'steer' })
      gate.release()
      await runner.interrupt(sessionId)
      await idle()
      const requestsWhenStopped = lockRequests

      // The runner is woken synchronously by input it should act on, so a wake would show here.
      await engine.edit(sessionId, queued.id, { text: 'next, edited' })
      await engine.edit(sessionId, steer.id, { text: 'and this, edited' })
      await engine.cancel(sessionId, steer.id)
      expect(lockRequests).toBe(requestsWhenStopped)
      expect(turnEnds(await allEvents(engine, sessionId))).toEqual(['aborted'])
      expect((await engine.pending(sessionId)).map((r) => [r.id, r.text])).toEqual([
        [queued.id, 'next, edited'],
      ])

      // New input is what resumes a stopped session: the edited queued input runs in turn 2.
      await engine.admit(sessionId, { text: 'resume', delivery: 'queue' })
      expect(lockRequests).toBe(requestsWhenStopped + 1)
    } finally {
      await runner.close()
      await engine.close()
    }
  })
})
