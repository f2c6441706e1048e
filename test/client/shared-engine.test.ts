/**
 * One engine for all tabs: pages that `connect` to a SharedWorker talk to one engine through
 * ports of their own (test/client/shared-workers.ts runs them as a browser does, with the real
 * `exposeEngine` and `connect`). Every instance has BroadcastChannel off, so what one tab sees
 * of another's commits comes through the shared engine alone.
 */
import type { Endpoint } from 'comlink'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { type ConnectOptions, connect, type WorkerStart } from '../../src/client/connect'
import type { SessionlineClient } from '../../src/client/types'
import { sharedOrDedicated, sharedWorkerName } from '../../src/client/worker-choice'
import type { SessionChange } from '../../src/engine/types'
import type { Hello } from '../../src/wire/protocol'
import { workerGone, wrapEngine } from '../../src/wire/remote-engine'
import { changeFeed } from '../support/feed'
import { turnEvents, until } from './harness'
import { createSharedWorkers, type PagePort, type SharedWorkers } from './shared-workers'

let workers: SharedWorkers | undefined
const clients: SessionlineClient[] = []
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close()
  await workers?.close()
  workers = undefined
  vi.unstubAllGlobals()
})

/** Quick heartbeats: a silent tab is let go of after 2 × (10 + 150) ms. */
const quick: ConnectOptions = { heartbeatMs: 10, heartbeatTimeoutMs: 150, startTimeoutMs: 300 }

/** A tab: a client on the shared worker `name`, restarted by the same factory when it is lost. */
function tab(shared: SharedWorkers, options: ConnectOptions = quick, name = 'sessionline') {
  const starts: WorkerStart[] = []
  const client = connect((start) => {
    starts.push(start)
    return new shared.SharedWorker('engine.worker.js', { type: 'module', name })
  }, options)
  clients.push(client)
  return { client, starts }
}

describe('tabs on one shared engine', () => {
  test("one tab's commits reach the other tab's view through the shared engine, with no channel between engines", async () => {
    workers = createSharedWorkers()
    const a = tab(workers)
    const b = tab(workers)
    const { id } = await a.client.createSession({ id: 's-shared' })
    const view = b.client.open(id)
    await until(view, (s) => s.status === 'ready')
    await a.client.append(id, turnEvents(1))
    await a.client.admit(id, { id: 'q-a', text: 'from tab a', delivery: 'queue' })
    const seen = await until(view, (s) => s.queued.length === 1)
    expect(seen.rows.map((row) => row.key)).toEqual(['u-1', 'a-1'])
    expect(seen.queued.map((input) => input.id)).toEqual(['q-a'])
    // One worker served both tabs.
    expect([...workers.instances.keys()]).toEqual(['sessionline'])
    expect(workers.instance('sessionline').ports).toHaveLength(2)
  })

  test("a live preview of streamed text (not yet in the log) reaches the other tab's watch", async () => {
    workers = createSharedWorkers({ provider: { kind: 'scripted', seed: 3, wordDelayMs: 15, toolRate: 0 } })
    const a = tab(workers)
    const b = tab(workers)
    const { id } = await a.client.createSession({ id: 's-live' })
    const feed = changeFeed()
    await b.client.watch(id, feed.listener)
    await a.client.admit(id, { id: 'p-1', text: 'stream to the other tab' })
    // Previews are pushed by the engine that streams; a second engine would see durable commits only.
    await feed.until((changes: SessionChange[]) => changes.some((change) => !change.durable))
  })

  test("Stop in one tab ends the turn the other tab's input started, through the one runner", async () => {
    workers = createSharedWorkers({ provider: { kind: 'scripted', seed: 3, wordDelayMs: 40, toolRate: 0 } })
    const a = tab(workers)
    const b = tab(workers)
    const { id } = await a.client.createSession({ id: 's-stop' })
    const view = a.client.open(id)
    await a.client.admit(id, { id: 'long', text: 'a long answer, please' })
    await until(view, (s) => s.rows.some((row) => row.kind === 'message' && row.message.role === 'assistant'))
    await b.client.interrupt(id)
    const events = await a.client.events(id)
    const ends = events.filter((e) => e.type === 'turn/end').map((e) => e.data)
    expect(ends).toEqual([{ turn: 1, reason: 'aborted' }])
  })

  test("a tab whose port falls silent is let go of after twice its heartbeat's span: its watches end, the other tab's stay", async () => {
    workers = createSharedWorkers()
    const b = tab(workers)
    const { id } = await b.client.createSession({ id: 's-silent' })
    const stayed = b.client.open(id)
    await until(stayed, (s) => s.status === 'ready')
    // A frozen tab runs no timers, so it never notices anything: the wire alone, as it stands.
    const frozen = new workers.SharedWorker('engine.worker.js', { type: 'module', name: 'sessionline' })
    const remote = wrapEngine(frozen.port as unknown as Endpoint, { timeoutMs: 200 })
    await remote.handshake({ heartbeatMs: 10, heartbeatTimeoutMs: 150 })
    // The worker last hears this tab at its watch call: the silence is counted from there.
    const lastSent = Date.now()
    await remote.watch(id, () => undefined)
    const worker = workers.instance('sessionline')
    expect(worker.watching()).toBe(2)
    const port = frozen.port as unknown as PagePort
    port.silent = true
    await vi.waitFor(() => expect(worker.watching()).toBe(1), { timeout: 3_000, interval: 10 })
    // Not before 2 × (10 + 150) ms of silence.
    expect(Date.now() - lastSent).toBeGreaterThanOrEqual(320)
    // The worker closed that port: the tab, awake again, gets no answer there.
    port.silent = false
    await expect(remote.listSessions()).rejects.toMatchObject({ code: 'timeout' })
    await b.client.admit(id, { id: 'b-1', text: 'still heard', delivery: 'queue' })
    await until(stayed, (s) => s.queued.some((input) => input.id === 'b-1'))
    remote.fail(workerGone('test over'))
  })

  test('a tab that never says how often it checks is never let go of for its silence', async () => {
    workers = createSharedWorkers()
    const { port } = new workers.SharedWorker('engine.worker.js', { type: 'module', name: 'sessionline' })
    const remote = wrapEngine(port as unknown as Endpoint)
    await remote.handshake({ heartbeatMs: 0, heartbeatTimeoutMs: 150 })
    const { id } = await remote.createSession()
    await remote.watch(id, () => undefined)
    const silentFor = 400
    ;(port as unknown as PagePort).silent = true
    await new Promise((resolve) => setTimeout(resolve, silentFor))
    expect(workers.instance('sessionline').watching()).toBe(1)
    remote.fail(workerGone('test over'))
  })

  test('a tab that lost its port connects again to the same worker, catches up, and its old watch is let go of', async () => {
    workers = createSharedWorkers()
    const a = tab(workers)
    const b = tab(workers)
    const { id } = await a.client.createSession({ id: 's-thaw' })
    const view = a.client.open(id)
    await until(view, (s) => s.status === 'ready')
    const worker = workers.instance('sessionline')
    const [portA] = worker.ports
    // Silent both ways: the page's heartbeat goes unanswered, and the worker hears nothing.
    portA!.silent = true
    await until(view, (s) => s.status === 'reconnecting')
    await b.client.append(id, turnEvents(1))
    const back = await until(view, (s) => s.status === 'ready' && s.rows.length === 2)
    expect(back.rows.map((row) => row.key)).toEqual(['u-1', 'a-1'])
    // Back on the same worker (a crash or a silence is not a stuck worker): no second instance.
    expect(a.starts.map((start) => start.after)).toEqual([undefined, 'gone'])
    expect([...workers.instances.keys()]).toEqual(['sessionline'])
    expect(worker.watching()).toBe(1)
  })

  test("one tab's close lets go of that tab only: the shared engine serves the other tab on", async () => {
    workers = createSharedWorkers()
    const a = tab(workers)
    const b = tab(workers)
    const { id } = await a.client.createSession({ id: 's-close' })
    const view = b.client.open(id)
    await until(view, (s) => s.status === 'ready')
    await a.client.watch(id, () => undefined)
    const worker = workers.instance('sessionline')
    expect(worker.watching()).toBe(2)
    await a.client.close()
    await vi.waitFor(() => expect(worker.watching()).toBe(1), { timeout: 2_000, interval: 20 })
    await b.client.admit(id, { id: 'after-close', text: 'served on', delivery: 'queue' })
    await until(view, (s) => s.queued.some((input) => input.id === 'after-close'))
  })
})

describe('a shared worker that is stuck cannot be terminated from a page', () => {
  test('with a plain SharedWorker factory, every restart reaches the same stuck worker, and the view ends in error', async () => {
    workers = createSharedWorkers()
    const { client, starts } = tab(workers, { ...quick, maxRestarts: 2 })
    const { id } = await client.createSession({ id: 's-stuck' })
    const view = client.open(id)
    await until(view, (s) => s.status === 'ready')
    workers.wedge('sessionline')
    const s = await until(view, (snapshot) => snapshot.status === 'error')
    expect(s.error?.code).toBe('worker_gone')
    expect(starts.map((start) => start.after)).toEqual([undefined, 'gone', 'unanswered'])
    expect([...workers.instances.keys()]).toEqual(['sessionline'])
  })

  test('sharedOrDedicated moves every tab to a fresh shared worker, and a tab opened later joins it', async () => {
    workers = createSharedWorkers()
    const stored = new Map<string, string>()
    vi.stubGlobal('SharedWorker', workers.SharedWorker)
    vi.stubGlobal('localStorage', {
      getItem: (key: string) => stored.get(key) ?? null,
      setItem: (key: string, value: string) => void stored.set(key, value),
    })
    const shared = workers
    const open = () => {
      const client = connect(
        sharedOrDedicated({
          shared: (name) => new shared.SharedWorker('engine.worker.js', { type: 'module', name }),
          dedicated: () => {
            throw new Error('a dedicated worker where SharedWorker exists')
          },
        }),
        quick,
      )
      clients.push(client)
      return client
    }
    const a = open()
    const b = open()
    const { id } = await a.createSession({ id: 's-moved' })
    const views = [a.open(id), b.open(id)]
    for (const view of views) await until(view, (s) => s.status === 'ready')
    workers.wedge('sessionline')
    // Each tab notices, tries the same name once more (it may have crashed rather than hung),
    // gets no answer, and moves on to the next name: both land on the same fresh worker.
    for (const view of views) await until(view, (s) => s.status === 'reconnecting')
    for (const view of views) await until(view, (s) => s.status === 'ready')
    const fresh = sharedWorkerName('sessionline', 1)
    expect([...workers.instances.keys()]).toEqual(['sessionline', fresh])
    expect(workers.instance(fresh).watching()).toBe(2)
    await a.admit(id, { id: 'moved', text: 'heard in tab b', delivery: 'queue' })
    await until(views[1]!, (s) => s.queued.some((input) => input.id === 'moved'))
    // A tab opened now starts on the fresh worker at once, not on the stuck one.
    const c = open()
    await c.listSessions()
    expect(workers.instance(fresh).ports).toHaveLength(3)
  })

  test('sharedOrDedicated starts a dedicated worker where SharedWorker is missing', () => {
    vi.stubGlobal('SharedWorker', undefined)
    const dedicated = { postMessage() {}, addEventListener() {}, removeEventListener() {} }
    const factory = sharedOrDedicated({
      shared: () => {
        throw new Error('no SharedWorker here')
      },
      dedicated: () => dedicated as unknown as Worker,
    })
    expect(factory({ restarts: 0 })).toBe(dedicated)
  })
})

describe('the choice between a shared and a dedicated worker', () => {
  const startsOf = (after: WorkerStart['after'][]) =>
    after.map((cause, restarts) => ({ restarts, after: cause }))

  test('sharedOrDedicated keeps the name after a loss, and takes the next one only after a stuck worker', () => {
    const names: string[] = []
    vi.stubGlobal('SharedWorker', class {})
    vi.stubGlobal('localStorage', undefined)
    const factory = sharedOrDedicated({
      name: 'app',
      shared: (name) => {
        names.push(name)
        return {} as SharedWorker
      },
      dedicated: () => {
        throw new Error('not here')
      },
    })
    for (const start of startsOf([undefined, 'gone', 'unanswered', 'gone', 'wedged', 'gone'])) factory(start)
    expect(names).toEqual(['app', 'app', 'app~1', 'app~1', 'app~2', 'app~2'])
  })

  test('a tab takes the newer name another tab stored, and two tabs that notice one stuck worker agree on the next', () => {
    vi.stubGlobal('SharedWorker', class {})
    const stored = new Map<string, string>()
    vi.stubGlobal('localStorage', {
      getItem: (key: string) => stored.get(key) ?? null,
      setItem: (key: string, value: string) => void stored.set(key, value),
    })
    const tabNames = () => {
      const names: string[] = []
      const factory = sharedOrDedicated({
        shared: (name) => {
          names.push(name)
          return {} as SharedWorker
        },
        dedicated: () => {
          throw new Error('not here')
        },
      })
      return { names, factory }
    }
    const a = tabNames()
    const b = tabNames()
    a.factory({ restarts: 0 })
    b.factory({ restarts: 0 })
    a.factory({ restarts: 1, after: 'unanswered' })
    b.factory({ restarts: 1, after: 'unanswered' })
    const later = tabNames()
    later.factory({ restarts: 0 })
    expect([a.names, b.names, later.names]).toEqual([
      ['sessionline', 'sessionline~1'],
      ['sessionline', 'sessionline~1'],
      ['sessionline~1'],
    ])
  })

  test('connect takes a SharedWorker itself, not only a factory', async () => {
    workers = createSharedWorkers()
    const client = connect(
      new workers.SharedWorker('engine.worker.js', { type: 'module', name: 'one' }),
      quick,
    )
    clients.push(client)
    const { id } = await client.createSession({ title: 'through the port' })
    expect(await workers.instance('one').engine.getSession(id)).toMatchObject({ title: 'through the port' })
  })

  test('a handshake whose hello has the wrong shape is refused with invalid_input', async () => {
    workers = createSharedWorkers()
    const { port } = new workers.SharedWorker('engine.worker.js', { type: 'module', name: 'sessionline' })
    const remote = wrapEngine(port as unknown as Endpoint)
    await expect(
      remote.handshake({ heartbeatMs: -1, heartbeatTimeoutMs: 10 } as unknown as Hello),
    ).rejects.toMatchObject({ code: 'invalid_input' })
    remote.fail(workerGone('test over'))
  })
})
