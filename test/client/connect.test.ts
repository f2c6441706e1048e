import type { Endpoint } from 'comlink'
import * as Comlink from 'comlink'
import { afterEach, describe, expect, test } from 'vitest'
import { connect } from '../../src/client/connect'
import type { SessionlineClient } from '../../src/client/types'
import type { SessionChange } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import { changeFeed } from '../support/feed'
import { openPage, type Page, record, turnEvents, until } from './harness'
import { createFleet, type Fleet, witness } from './mortal-workers'

let page: Page | undefined
afterEach(async () => {
  await page?.close()
  page = undefined
})

/** A worker that never answers, and can crash (an `error` event) or close on demand. */
class SilentWorker extends EventTarget implements Endpoint {
  posted = 0
  postMessage(): void {
    this.posted++
  }
}

const codeOf = (error: unknown) => (isSessionlineError(error) ? error.code : error)

describe('connect', () => {
  test('every engine call answers through the client as the engine answers it', async () => {
    page = await openPage()
    const { client, engine } = page
    const created = await client.createSession({ id: 's-1', title: 'same answers' })
    expect(created).toEqual(await engine.getSession('s-1'))
    await client.append('s-1', [...turnEvents(1), ...turnEvents(2)])
    await client.admit('s-1', { id: 'i-1', text: 'queued', delivery: 'queue' })
    const reads = [
      ['getSession', () => engine.getSession('s-1'), () => client.getSession('s-1')],
      ['listSessions', () => engine.listSessions(), () => client.listSessions()],
      ['pending', () => engine.pending('s-1'), () => client.pending('s-1')],
      ['events', () => engine.events('s-1', { afterSeq: 3 }), () => client.events('s-1', { afterSeq: 3 })],
      ['page', () => engine.page('s-1', { limit: 3 }), () => client.page('s-1', { limit: 3 })],
      [
        'loadThrough',
        () => engine.loadThrough('s-1', { seq: 2 }),
        () => client.loadThrough('s-1', { seq: 2 }),
      ],
      [
        'outline',
        () => engine.projection('s-1', 'turnOutline'),
        () => client.projection('s-1', 'turnOutline'),
      ],
      ['usage', () => engine.projection('s-1', 'usage'), () => client.projection('s-1', 'usage')],
    ] as const
    for (const [name, direct, remote] of reads) expect([name, await remote()]).toEqual([name, await direct()])
    const promoted = await client.promote('s-1', 'settled')
    expect(promoted).toEqual((await engine.page('s-1')).messages.slice(-1))
  })

  test('errors keep their code across the wire', async () => {
    page = await openPage()
    const failures = await Promise.all([
      page.client.admit('nowhere', { text: 'hi' }).catch((e: unknown) => e),
      page.client.page('nowhere', { limit: 5000 }).catch((e: unknown) => e),
    ])
    expect(failures.map(codeOf)).toEqual(['not_found', 'invalid_input'])
  })

  test('watch delivers committed changes, and its unsubscribe can be called twice', async () => {
    page = await openPage()
    const { id } = await page.client.createSession()
    const feed = changeFeed()
    const stop = await page.client.watch(id, feed.listener)
    const witness = changeFeed()
    await page.client.watch(id, witness.listener)
    const admitted = (changes: SessionChange[]) => changes.flatMap((c) => c.inputs.map((r) => r.id))
    await page.client.admit(id, { id: 'w-1', text: 'watched' })
    await feed.until((changes) => changes.length > 0)
    expect(admitted(feed.changes)).toEqual(['w-1'])
    // Unsubscribe while the next push is already on its way: the worker-side listener below runs
    // right after the engine posted that push to the page. Unsubscribing is final at once anyway.
    let armed = true
    await page.engine.watch(id, () => {
      if (!armed) return
      armed = false
      stop()
      stop()
    })
    await page.client.admit(id, { id: 'w-2', text: 'not watched' })
    await witness.until((changes) => admitted(changes).includes('w-2'))
    // Each subscription has its own port, so the witness can arrive before the push it follows:
    // give that push the turn it would need to land (absence has no event to await).
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(admitted(feed.changes)).toEqual(['w-1'])
  })

  test('a worker that speaks another protocol fails every call with unsupported_format', async () => {
    const { port1, port2 } = new MessageChannel()
    Comlink.expose({ handshake: async () => ({ protocol: 999 }), listSessions: async () => [] }, port1)
    const client = connect(port2)
    await expect(client.listSessions()).rejects.toMatchObject({ code: 'unsupported_format' })
    await client.close()
    port1.close()
  })

  test('a call the worker never answers rejects with timeout', async () => {
    const client = connect(new SilentWorker(), { timeoutMs: 50 })
    await expect(client.listSessions()).rejects.toMatchObject({ code: 'timeout' })
    await client.close()
  })

  test('pending and later calls reject with worker_gone when the worker fails', async () => {
    const worker = new SilentWorker()
    const client = connect(worker)
    const pending = client.getSession('s').catch((e: unknown) => e)
    const view = client.open('s')
    worker.dispatchEvent(new Event('error'))
    expect(codeOf(await pending)).toBe('worker_gone')
    await expect(client.listSessions()).rejects.toMatchObject({ code: 'worker_gone' })
    const s = await new Promise<ReturnType<typeof view.getSnapshot>>((resolve) => {
      const check = () => view.getSnapshot().status !== 'loading' && resolve(view.getSnapshot())
      view.subscribe(() => void check())
      check()
    })
    expect(s).toMatchObject({ status: 'error', error: { code: 'worker_gone' } })
    await client.close()
  })

  test('close disposes the views and rejects what is still pending', async () => {
    const worker = new SilentWorker()
    const client = connect(worker)
    const pending = client.listSessions().catch((e: unknown) => e)
    await client.close()
    expect(codeOf(await pending)).toBe('worker_gone')
    await expect(client.getSession('x')).rejects.toMatchObject({ code: 'worker_gone' })
  })
})

describe('connect with a worker factory: a dead worker is noticed and replaced', () => {
  let fleet: Fleet | undefined
  let client: SessionlineClient | undefined
  afterEach(async () => {
    await client?.close()
    client = undefined
    await fleet?.close()
    fleet = undefined
  })
  /** Quick heartbeats, so a silent death is noticed in a few tens of ms. */
  const quick = { heartbeatMs: 10, heartbeatTimeoutMs: 150, startTimeoutMs: 300 }

  async function started() {
    fleet = createFleet()
    client = connect(fleet.factory, quick)
    const { id } = await client.createSession({ id: 's-restart' })
    return { fleet, client, id }
  }

  test('a silent death (no event) rejects the calls in flight with worker_gone, and later calls reach a fresh worker', async () => {
    const { fleet, client, id } = await started()
    fleet.killOn('getSession', 'before-call')
    await expect(client.getSession(id)).rejects.toMatchObject({ code: 'worker_gone' })
    expect(fleet.workers.length).toBeGreaterThanOrEqual(1)
    expect(await client.getSession(id)).toMatchObject({ id })
    expect(fleet.workers.length).toBe(2)
    expect(fleet.current().alive).toBe(true)
  })

  for (const when of ['before-call', 'before-answer'] as const) {
    test(`an admit the worker died ${when === 'before-call' ? 'before running' : 'after running but before answering'} is re-sent by id and admitted once`, async () => {
      const { fleet, client, id } = await started()
      const view = client.open(id)
      await until(view, (s) => s.status === 'ready')
      const seen = record(view)
      fleet.killOn('admit', when)
      const receipt = await view.admit('survives the worker', { id: 'in-1', delivery: 'queue' })
      expect(receipt).toMatchObject({ id: 'in-1', seq: 1, status: 'pending' })
      expect(seen.map((s) => s.status)).toContain('reconnecting')
      await until(view, (s) => s.status === 'ready' && s.queued.length === 1)
      // Nothing doubled: one receipt, and the next input takes the next admission seq.
      const truth = witness(fleet)
      expect((await truth.pending(id)).map((r) => [r.id, r.seq])).toEqual([['in-1', 1]])
      expect(await view.admit('next', { id: 'in-2', delivery: 'queue' })).toMatchObject({ seq: 2 })
      expect(view.getSnapshot().queued.map((input) => [input.id, input.state])).toEqual([
        ['in-1', 'pending'],
        ['in-2', 'pending'],
      ])
      await truth.close()
    })
  }

  test('the last configure is made again on a fresh worker before anything else reaches it: an input re-sent there is answered by the configured model', async () => {
    const { fleet, client, id } = await started()
    // The fleet's engines run no model until configured: an unconfigured fresh worker would
    // leave the input pending for ever.
    await client.configure({ provider: { kind: 'none' } })
    await client.configure({ provider: { kind: 'scripted', seed: 3, wordDelayMs: 0, toolRate: 0 } })
    const view = client.open(id)
    await until(view, (s) => s.status === 'ready')
    fleet.killOn('admit', 'before-call')
    await view.admit('answered after the restart', { id: 'in-1', delivery: 'queue' })
    const answered = await until(view, (s) =>
      s.rows.some(
        (row) =>
          row.kind === 'message' && row.message.role === 'assistant' && row.message.status === 'complete',
      ),
    )
    expect(answered.rows.filter((row) => row.kind === 'message').map((row) => row.key)[0]).toBe('in-1')
    const fresh = fleet.current()
    expect(fleet.workers.indexOf(fresh)).toBe(1)
    // The configuration went first, once, and it was the last one made (not `none`).
    const methods = [...fresh.calls.keys()].filter((method) => method !== 'handshake')
    expect(methods[0]).toBe('configure')
    expect(fresh.calls.get('configure')).toBe(1)
  })

  test('a fresh worker that refuses the last configure is reported to onError, and calls go on', async () => {
    fleet = createFleet()
    const errors: unknown[] = []
    client = connect(fleet.factory, { ...quick, timeoutMs: 200, onError: (error) => errors.push(error) })
    const { id } = await client.createSession({ id: 's-refused' })
    await client.configure({ provider: { kind: 'scripted', wordDelayMs: 0, toolRate: 0 } })
    fleet.kill()
    const inFlight = client.getSession(id).catch(codeOf)
    // The fresh worker swallows the replayed configure: it times out and is reported.
    fleet.hangOn('configure')
    expect(await inFlight).toBe('worker_gone')
    await expect(client.getSession(id)).resolves.toMatchObject({ id })
    expect(errors.map(codeOf)).toEqual(['timeout'])
  })

  test('a re-opened view shows what was committed while no worker served it, and hears commits again', async () => {
    const { fleet, client, id } = await started()
    const view = client.open(id)
    await until(view, (s) => s.status === 'ready')
    fleet.stillborn = true // the next workers never answer, so the gap stays open
    fleet.kill()
    await until(view, (s) => s.status === 'reconnecting')
    const other = witness(fleet)
    await other.append(id, turnEvents(1))
    fleet.stillborn = false
    const back = await until(view, (s) => s.status === 'ready')
    expect(back.rows.map((row) => row.key)).toEqual(['u-1', 'a-1'])
    await other.append(id, turnEvents(2))
    await other.close()
    // The fresh worker's engine reads the log the other engine wrote only when told; a commit
    // through the client goes through the fresh worker and reaches the view through its feed.
    await client.admit(id, { id: 'after', text: 'after the restart' })
    const heard = await until(view, (s) => s.rows.some((row) => row.key === 'after'))
    expect(heard.status).toBe('ready')
  })

  test('a view opened while a fresh worker is on its way subscribes once there, and loads through the seq asked in its opening task', async () => {
    const { fleet, client, id } = await started()
    await client.append(id, [...turnEvents(1), ...turnEvents(2)])
    const first = client.open(id)
    await until(first, (s) => s.status === 'ready')
    fleet.kill()
    // The loss is known and the fresh worker not started yet (it starts in a task of its own).
    await until(first, (s) => s.status === 'reconnecting')
    const opened = client.open(id, { tail: 1 })
    void opened.loadThrough(1)
    const shown = await until(opened, (s) => s.status === 'ready')
    await until(first, (s) => s.status === 'ready')
    expect(shown.rows.map((row) => row.key)).toEqual(['u-1', 'a-1', 'u-2', 'a-2'])
    expect(shown.hasOlder).toBe(false)
    // The fresh worker: one watch and one first read per view (the second one's from seq 1).
    const fresh = fleet.current()
    expect(fleet.workers.length).toBe(2)
    expect([
      fresh.calls.get('watch'),
      fresh.calls.get('firstRead'),
      fresh.calls.get('page'),
      fresh.calls.get('loadThrough'),
    ]).toEqual([2, 2, undefined, undefined])
  })

  test('a view read that times out while the worker still answers its heartbeat replaces the worker, and the view loads from the fresh one', async () => {
    fleet = createFleet()
    client = connect(fleet.factory, { ...quick, timeoutMs: 300 })
    const { id } = await client.createSession({ id: 's-wedged' })
    await client.append(id, turnEvents(1))
    fleet.hangOn('firstRead')
    const view = client.open(id)
    const s = await until(view, (snapshot) => snapshot.status === 'ready')
    expect(s.rows.map((row) => row.key)).toEqual(['u-1', 'a-1'])
    expect(fleet.workers.length).toBe(2)
  })

  test('a watch made on the client comes back on the fresh worker, first with a reset change', async () => {
    const { fleet, client, id } = await started()
    const feed = changeFeed()
    await client.watch(id, feed.listener)
    fleet.kill()
    await feed.until((changes) => changes.some((change) => change.reset === true))
    await client.admit(id, { id: 'w-after', text: 'heard again' })
    await feed.until((changes) => changes.some((change) => change.inputs.some((r) => r.id === 'w-after')))
    expect(fleet.workers.length).toBe(2)
  })

  test('after maxRestarts fresh workers that never answer, the view and held admits fail with worker_gone', async () => {
    fleet = createFleet()
    client = connect(fleet.factory, { ...quick, maxRestarts: 2 })
    const { id } = await client.createSession({ id: 's-doomed' })
    const view = client.open(id)
    await until(view, (s) => s.status === 'ready')
    fleet.stillborn = true
    fleet.killOn('admit', 'before-call')
    const admitted = view.admit('never served', { id: 'lost-1' }).catch((e: unknown) => e)
    expect(codeOf(await admitted)).toBe('worker_gone')
    const s = await until(view, (snapshot) => snapshot.status === 'error')
    expect(s.error?.code).toBe('worker_gone')
    expect(s.rows.find((row) => row.key === 'lost-1')).toMatchObject({ input: { state: 'failed' } })
    // The first worker, then two fresh ones that never answered: no more.
    expect(fleet.workers.length).toBe(3)
    await expect(client.listSessions()).rejects.toMatchObject({ code: 'worker_gone' })
  })
})

describe('connect without a factory: a dead worker fails the client for good', () => {
  test('a worker that stops answering (no event) rejects pending calls with worker_gone, not timeout', async () => {
    page = await openPage({ timeoutMs: 0, heartbeatMs: 10, heartbeatTimeoutMs: 100 })
    await page.client.listSessions()
    page.stall(true)
    await expect(page.client.listSessions()).rejects.toMatchObject({ code: 'worker_gone' })
  })

  test('a worker that never answers its first call is gone after startTimeoutMs', async () => {
    const client = connect(new SilentWorker(), { timeoutMs: 0, heartbeatTimeoutMs: 50, startTimeoutMs: 50 })
    await expect(client.listSessions()).rejects.toMatchObject({ code: 'worker_gone' })
    await client.close()
  })
})

test('a view opened after the worker is gone for good says error at once, not reconnecting', async () => {
  const worker = new SilentWorker()
  const client = connect(worker)
  worker.dispatchEvent(new Event('error'))
  const view = client.open('s')
  expect(view.getSnapshot()).toMatchObject({ status: 'error', error: { code: 'worker_gone' } })
  await client.close()
})
