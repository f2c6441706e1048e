/**
 * The browser contract: every scenario written once against the driver surface in
 * `drivers/types.ts`, run in Chromium, Firefox ESR and WebKitGTK by the three `*.contract.ts`
 * files. One browser per file (on a profile of its own, relaunched where a scenario needs it),
 * one database per scenario, a static server on the browser's fixed port.
 *
 * Each runs in two modes (docs/decisions/0035): `dedicated`, a worker per tab, runs every
 * scenario; `shared`, one SharedWorker for the tabs of a database, runs the scenarios whose
 * meaning does not change with the mode (admit, reload, two tabs, the big catch-up, the two-tab
 * run, upgrade, an attachment, a resend under a kill — whose kill there is closing every tab) and
 * its own (a turn outlives the tab that started it, the tab that started the
 * worker closing, the last tab closing mid-turn, a stuck shared worker), not the relaunch (storage, not workers) nor the fault
 * injection (a page cannot terminate a shared worker); its two-tab run is a third as long.
 * `CONTRACT_MODES=shared` runs one mode.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { startServer } from '../../../demo/serve.mjs'
import type { BrowserKind, BrowserSession, Tab } from './drivers/types'

const DIST = fileURLToPath(new URL('./dist/', import.meta.url))
export const ARTIFACTS = fileURLToPath(new URL('../artifacts/contract/', import.meta.url))
const RUN_DIR = process.env.SESSIONLINE_E2E_TMP ?? join(tmpdir(), 'sessionline-contract')

/** Fault injection: rounds per browser and the seed that fixes where each round kills. */
export const FAULT_ROUNDS = Number(process.env.CONTRACT_FAULT_ROUNDS ?? 20)
export const FAULT_SEED = 20_261_201
/** The two-tab run: its length, and when the second tab is closed and reopened. */
const CHAOS_MS = Number(process.env.CONTRACT_CHAOS_MS ?? 30_000)

export type WorkerMode = 'dedicated' | 'shared'
const MODES = (process.env.CONTRACT_MODES ?? 'dedicated,shared')
  .split(',')
  .filter((mode): mode is WorkerMode => mode === 'dedicated' || mode === 'shared')

const scripted = (wordDelayMs: number) => ({ kind: 'scripted' as const, seed: 3, wordDelayMs, toolRate: 0.3 })
const hostDriven = { kind: 'none' as const }

interface Features {
  sharedWorker: boolean
  locks: boolean
  broadcastChannel: boolean
  indexedDB: boolean
  storageEstimate: boolean
  userAgent: string
}
interface Snapshot {
  status: string
  headSeq: number
  rows: { key: string; kind: string; role?: string; state?: string }[]
  queued: { id: string; state: string }[]
}
interface Digest {
  headSeq: number
  rows: string[]
}
interface AuditReport {
  headSeq: number
  lastCommitAt: number
  promoted: string[]
  pending: string[]
  lost: string[]
  problems: string[]
}
interface Received {
  acknowledged: string[]
  cancelled: string[]
  /** Ids whose cancel had not been answered when this was asked. */
  cancelling: string[]
  failed: Record<string, string>
}
/** A message row's place in the history tree, as the page's `places` and `freshEngine` give it. */
interface Place {
  id: string
  seq: number
  role: string
  status: string
  visibility: string
  branch: { index: number; count: number } | null
  files: string[]
}
interface FreshRead {
  headSeq: number
  all: Place[]
  visible: string[]
}
interface LogEvent {
  seq: number
  at: number
  type: string
  data: { turn?: number; reason?: string; inputId?: string; cause?: string; head?: string | null }
}
interface Trace {
  at: number
  status: string
  headSeq: number
}
export interface FaultRound {
  round: number
  killAtMs: number
  streamingAtKill: boolean
  admitsInFlightAtKill: number
  admittedAfterKill: number
  admitted: number
  acknowledged: number
  failed: number
  lost: number
  headSeq: number
  /** Reads of the log the audit needed to find it still: more than one, a runner went on. */
  auditReads: number
  problems: string[]
}
interface ChaosStatus {
  done: boolean
  lastOpAt: number
  error?: string
  ops: { admit: number; cancel: number; edit: number; promote: number; refused: number; unexpected: string[] }
}

/** Two views agree: same head, and the shorter window is the tail of the longer (windows grow by feed). */
function sameTail(a: Digest, b: Digest): boolean {
  const n = Math.min(a.rows.length, b.rows.length)
  return a.headSeq === b.headSeq && JSON.stringify(a.rows.slice(-n)) === JSON.stringify(b.rows.slice(-n))
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function poll<T>(
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  ms: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await read()
    if (ok(value)) return value
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`)
    await sleep(100)
  }
}

export async function writeArtifact(name: string, text: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true })
  const path = join(ARTIFACTS, name)
  await writeFile(path, text)
  return path
}

export function faultTable(browser: string, rounds: readonly FaultRound[]): string {
  const lines = [
    `fault injection in ${browser}: worker.terminate() from the page at a random moment of a streamed turn (seed ${FAULT_SEED})`,
    'round | kill at ms | streaming at kill | admits in flight at kill | admitted after kill (to the dead worker) | admitted | acknowledged | failed | lost | head seq | audit reads | problems',
    '----- | ---------- | ----------------- | ------------------------ | ---------------------------------------- | -------- | ------------ | ------ | ---- | -------- | ----------- | --------',
    ...rounds.map((r) =>
      [
        r.round,
        r.killAtMs,
        r.streamingAtKill ? 'yes' : 'no',
        r.admitsInFlightAtKill,
        r.admittedAfterKill,
        r.admitted,
        r.acknowledged,
        r.failed,
        r.lost,
        r.headSeq,
        r.auditReads,
        r.problems.length === 0 ? '-' : r.problems.join('; '),
      ].join(' | '),
    ),
    `total | | ${rounds.filter((r) => r.streamingAtKill).length} | ${rounds.reduce((n, r) => n + r.admitsInFlightAtKill, 0)} | ${rounds.reduce((n, r) => n + r.admittedAfterKill, 0)} | ${sum(rounds, 'admitted')} | ${sum(rounds, 'acknowledged')} | ${sum(rounds, 'failed')} | ${sum(rounds, 'lost')} | | |`,
  ]
  return `${lines.join('\n')}\n`
}

/** How long a probe of storage may take before storage counts as stalled (a busy run takes far less). */
const STALL_MS = 5_000

/**
 * Whether storage stopped answering `tab` while it waited: one of the probes its page has made
 * since `monitorStorage` took longer than STALL_MS, or one made now does. The WebKit stall may end
 * on its own before a wait gives up, so a probe made only afterwards can miss it.
 */
async function storageStalled(tab: Tab, dbName: string): Promise<boolean> {
  const seen = await tab.call<{ at: number; ms: number; answered: boolean }[]>('storageStalls', {
    overMs: STALL_MS,
  })
  if (seen.length > 0) {
    console.log(`storage probes over ${STALL_MS} ms: ${JSON.stringify(seen)}`)
    return true
  }
  return !(await tab.call<boolean>('storageAnswers', { dbName, ms: 2 * STALL_MS }))
}

const sum = (rounds: readonly FaultRound[], key: 'admitted' | 'acknowledged' | 'failed' | 'lost') =>
  rounds.reduce((total, r) => total + r[key], 0)

export function contractSuite(kind: BrowserKind): void {
  for (const mode of MODES) modeSuite(kind, mode)
}

function modeSuite(kind: BrowserKind, mode: WorkerMode): void {
  const missing = kind.missing()
  if (missing) console.warn(`${kind.name}: the browser contract cannot run here: ${missing}`)
  const dedicated = mode === 'dedicated'
  /** A scenario of one mode only. */
  const dedicatedTest = dedicated ? test : () => undefined
  const sharedTest = dedicated ? () => undefined : test

  describe.skipIf(missing !== undefined)(`browser contract in ${kind.name} (${mode} workers)`, () => {
    let server: { url: string; close(): Promise<unknown> } | undefined
    let browser: BrowserSession | undefined
    let profile = ''
    const tabs = new Set<Tab>()
    let features: Features | undefined

    beforeAll(async () => {
      server = await startServer({ root: DIST, port: kind.port })
      await mkdir(RUN_DIR, { recursive: true })
      profile = await mkdtemp(join(RUN_DIR, `${kind.name}-profile-`))
      browser = await kind.launch(profile)
    }, 120_000)
    afterAll(async () => {
      await browser?.close().catch(() => undefined)
      await server?.close()
      await rm(profile, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined)
    }, 60_000)
    afterEach(async () => {
      for (const tab of [...tabs].reverse()) await tab.close().catch(() => undefined)
      tabs.clear()
    })

    async function open(): Promise<Tab> {
      const tab = await browser!.newTab(`${server!.url}index.html`)
      tabs.add(tab)
      return tab
    }
    async function close(tab: Tab): Promise<void> {
      tabs.delete(tab)
      await tab.close()
    }
    const start = (tab: Tab, config: Record<string, unknown>) => tab.call('start', { ...config, mode })

    /**
     * `tab` once storage answers it again after a WebKit stall, whose page is closed by now.
     * Storage comes back when that page is gone, though not at once; if it does not within 60 s,
     * the browser is relaunched on the same profile (every tab closed) and a fresh tab asked.
     * Asked from the page's own connection, so a failure says storage, not a fresh worker.
     */
    async function afterStall(
      tab: Tab,
      dbName: string,
      what: string,
    ): Promise<{ tab: Tab; relaunched: boolean }> {
      const closedAt = Date.now()
      if (await tab.call<boolean>('storageAnswers', { dbName, ms: 60_000 })) {
        console.log(
          `${kind.name}: ${what}: storage answered ${Date.now() - closedAt} ms after the stalled page closed`,
        )
        return { tab, relaunched: false }
      }
      console.log(
        `${kind.name}: ${what}: storage did not answer within 60 s of closing the stalled page; relaunching`,
      )
      for (const other of [...tabs]) await close(other).catch(() => undefined)
      await browser!.relaunch()
      const fresh = await open()
      if (!(await fresh.call<boolean>('storageAnswers', { dbName, ms: 60_000 })))
        throw new Error(`${what}: storage did not answer within 60 s of relaunching the browser`)
      return { tab: fresh, relaunched: true }
    }

    test('has the features the engine relies on: IndexedDB, Web Locks, BroadcastChannel', async () => {
      const tab = await open()
      features = await tab.call<Features>('features')
      console.log(`${kind.name}: ${features.userAgent}`)
      expect(features).toMatchObject({ indexedDB: true, locks: true, broadcastChannel: true })
      if (!dedicated) expect(features.sharedWorker).toBe(true)
      // No browser here can shrink an origin's quota but Chromium (DevTools): said, not tested here.
      if (!features.storageEstimate) console.warn(`${kind.name}: navigator.storage.estimate is missing`)
    })

    test('an admitted input shows at once and is promoted in place, under the same key', async () => {
      const tab = await open()
      await start(tab, { dbName: 'contract-admit', sessionId: 's-admit', provider: scripted(2) })
      await tab.call('watchKey', { key: 'in-1' })
      await tab.call('admit', { text: 'hello from the contract', id: 'in-1', delivery: 'steer' })
      await tab.call('waitIdle', { ms: 30_000 })
      await tab.call('waitHead', { seq: 1, ms: 5_000 })
      const trace = await tab.call<string[]>('keyTrace', { key: 'in-1' })
      // Shown as an input from the first snapshot on, then as the transcript row, never absent.
      expect(trace[0]).toBe('input')
      expect(trace.at(-1)).toBe('message')
      expect(trace.slice(trace.indexOf('message'))).not.toContain('input')
      expect(trace).not.toContain('none')
      const snapshot = await tab.call<Snapshot>('snapshot')
      const at = snapshot.rows.findIndex((row) => row.key === 'in-1')
      expect(snapshot.rows[at]).toMatchObject({ kind: 'message', role: 'user' })
      expect(snapshot.rows.slice(at + 1).some((row) => row.role === 'assistant')).toBe(true)
      expect((await tab.call<AuditReport>('audit')).problems).toEqual([])
    })

    test('a reload shows the same transcript and the same pending input', async () => {
      const tab = await open()
      const config = { dbName: 'contract-reload', sessionId: 's-reload', provider: hostDriven }
      await start(tab, config)
      await tab.call('appendTurns', { from: 1, count: 3 })
      await tab.call('admit', { text: 'still queued after a reload', id: 'q-1', delivery: 'queue' })
      await tab.call('waitHead', { seq: 24, ms: 5_000 })
      const before = await tab.call<Digest>('digest')
      await tab.reload()
      await start(tab, config)
      expect(await tab.call<Digest>('digest')).toEqual(before)
      expect((await tab.call<Snapshot>('snapshot')).queued).toEqual([{ id: 'q-1', state: 'pending' }])
    })

    dedicatedTest(
      'a relaunched browser on the same profile shows the same transcript and pending input',
      async (context) => {
        if (kind.name === 'webkit' && !(browser as { persistent?: boolean }).persistent) {
          console.warn('webkit: stock MiniBrowser keeps IndexedDB in memory and python3-gi is missing')
          context.skip()
        }
        const config = { dbName: 'contract-relaunch', sessionId: 's-relaunch', provider: hostDriven }
        let tab = await open()
        await start(tab, config)
        await tab.call('appendTurns', { from: 1, count: 2 })
        await tab.call('admit', { text: 'survives a relaunch', id: 'q-r', delivery: 'queue' })
        await tab.call('waitHead', { seq: 16, ms: 5_000 })
        const before = await tab.call<Digest>('digest')
        await tab.call('stop') // let the worker finish; a relaunch is a clean quit
        tabs.clear()
        await browser!.relaunch()
        tab = await open()
        await start(tab, config)
        expect(await tab.call<Digest>('digest')).toEqual(before)
        expect((await tab.call<Snapshot>('snapshot')).queued).toEqual([{ id: 'q-r', state: 'pending' }])
      },
    )

    test("two tabs: the other tab's view takes each commit in commit order within a second, without reloading", async () => {
      const config = { dbName: 'contract-two-tabs', sessionId: 's-two', provider: hostDriven }
      const writer = await open()
      await start(writer, config)
      const reader = await open()
      await start(reader, config)
      const commits: { headSeq: number; at: number }[] = []
      for (let turn = 1; turn <= 10; turn++) {
        commits.push(
          await writer.call<{ headSeq: number; at: number }>('appendTurns', { from: turn, count: 1 }),
        )
        await sleep(100)
      }
      await reader.call('waitHead', { seq: 80, ms: 10_000 })
      const traces = await reader.call<Trace[]>('traces')
      const heads = traces.map((t) => t.headSeq)
      expect(heads).toEqual([...heads].sort((a, b) => a - b))
      const delays = commits.map((commit) => {
        const seen = traces.find((t) => t.headSeq >= commit.headSeq)
        return seen ? seen.at - commit.at : Number.POSITIVE_INFINITY
      })
      const worst = Math.max(...delays)
      console.log(`${kind.name}: cross-tab delays ms ${delays.join(', ')} (worst ${worst})`)
      expect(worst).toBeLessThan(1_000)
      expect(sameTail(await reader.call<Digest>('digest'), await writer.call<Digest>('digest'))).toBe(true)
    })

    for (const loss of ['closes', 'loses its worker'] as const) {
      dedicatedTest(
        `runner ownership passes through Web Locks to the other tab when the owner tab ${loss}`,
        async () => {
          const config = {
            dbName: `contract-owner-${loss === 'closes' ? 'close' : 'kill'}`,
            sessionId: 's-owner',
            provider: scripted(40),
          }
          const owner = await open()
          await start(owner, config)
          let heir = await open()
          await start(heir, config)
          await owner.call('admit', { text: 'a long answer, please', id: 'a-1', delivery: 'steer' })
          // The owner's runner streams the turn; the heir's inputs wait for the lock.
          await poll(
            () => owner.call<Snapshot>('snapshot'),
            (s) => s.rows.some((row) => row.role === 'assistant'),
            20_000,
            'the owner to stream',
          )
          await heir.call('monitorStorage', { dbName: config.dbName })
          await heir.call('admit', { text: 'queued in the heir 1', id: 'b-1', delivery: 'queue' })
          await heir.call('admit', { text: 'queued in the heir 2', id: 'b-2', delivery: 'queue' })
          // Either way the owner's lock dies with its worker; a killed worker is replaced in its tab.
          if (loss === 'closes') await close(owner)
          else await owner.call('kill')
          let stalled = false
          try {
            await heir.call('waitIdle', { ms: 60_000 })
          } catch (error) {
            // WebKit may leave the readwrite transaction a terminated worker had open alive for as
            // long as its page lives: every connection of the origin, the heir's included, then
            // waits for it. Only WebKit is allowed this; closing the owner tab should release it.
            // Told by the heir's probes, each a read over every table from a fresh connection:
            // one begun after the dead transaction waits for it whatever that transaction held.
            if (loss === 'closes' || !(await storageStalled(heir, config.dbName))) throw error
            stalled = true
            console.log(
              `${kind.name}: the database stalled after worker.terminate(); closing the owner tab (${error})`,
            )
            expect(kind.name).toBe('webkit')
            await close(owner)
            const after = await afterStall(heir, config.dbName, 'hand-over')
            heir = after.tab
            if (after.relaunched) await start(heir, config)
            await heir.call('waitIdle', { ms: 60_000 })
          }
          const report = await heir.call<AuditReport>('audit')
          expect(report.problems).toEqual([])
          expect([...report.promoted].sort()).toEqual(['a-1', 'b-1', 'b-2'])
          expect(report.pending).toEqual([])
          const log = await heir.call<{ events: { type: string; data: { reason?: string } }[] }>('log')
          const ends = log.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)
          console.log(`${kind.name}: turn ends after the owner tab ${loss}: ${ends.join(', ')}`)
          expect(ends.length).toBeGreaterThanOrEqual(3)
          if (loss === 'loses its worker' && !stalled) {
            // The owner tab's fresh worker serves its view again, and it shows what the heir ran.
            await owner.call('waitHead', { seq: report.headSeq, ms: 20_000 })
            expect((await owner.call<AuditReport>('audit')).problems).toEqual([])
          }
          // Room for a WebKit stall: the failed wait, and a relaunch if closing the owner is not enough.
        },
        360_000,
      )
    }

    test("a catch-up larger than the 2,000-event reset limit converges in the other tab's view", async () => {
      const config = { dbName: 'contract-catch-up', sessionId: 's-catch-up', provider: hostDriven, tail: 100 }
      const writer = await open()
      await start(writer, config)
      const reader = await open()
      await start(reader, config)
      const base = await writer.call<{ headSeq: number }>('appendTurns', { from: 1, count: 2 })
      await reader.call('waitHead', { seq: base.headSeq, ms: 10_000 })
      // One commit of 300 turns: 2,400 events past what the reader's engine holds.
      const { headSeq } = await writer.call<{ headSeq: number }>('appendTurns', { from: 3, count: 300 })
      expect(headSeq).toBe(base.headSeq + 2_400)
      await reader.call('waitHead', { seq: headSeq, ms: 30_000 })
      expect(sameTail(await reader.call<Digest>('digest'), await writer.call<Digest>('digest'))).toBe(true)
      expect((await reader.call<AuditReport>('audit')).problems).toEqual([])
    })

    dedicatedTest(
      `fault injection: ${FAULT_ROUNDS} rounds of worker.terminate() mid-stream lose nothing acknowledged`,
      async () => {
        const config = {
          dbName: 'contract-faults',
          sessionId: 's-faults',
          provider: scripted(3),
          heartbeatMs: 100,
          heartbeatTimeoutMs: 1_000,
        }
        let tab = await open()
        await start(tab, config)
        await tab.call('monitorStorage', { dbName: config.dbName })
        const rounds: FaultRound[] = []
        const acknowledged: string[] = []
        const stalls: number[] = []
        let workers = 0
        for (let round = 1; round <= FAULT_ROUNDS; round++) {
          try {
            rounds.push(await tab.call<FaultRound>('faultRound', { seed: FAULT_SEED, round, ms: 60_000 }))
          } catch (error) {
            // The WebKit stall (see the hand-over scenario): the killed worker's transaction holds
            // the database until its page goes away. Only WebKit may do this; the page is closed,
            // a fresh one opened on the same database, and what the old one had acknowledged must
            // all be in the log it serves.
            if (!(await storageStalled(tab, config.dbName))) throw error
            console.log(
              `${kind.name}: round ${round}: the database stalled after worker.terminate() (${error})`,
            )
            expect(kind.name).toBe('webkit')
            stalls.push(round)
            acknowledged.push(...(await tab.call<Received>('received')).acknowledged)
            workers += await tab.call<number>('workers')
            // The fresh tab opens first: closing a driver's last window only leaves the page, and
            // WebKit may keep a page it left (its workers' transactions too) in its page cache.
            const fresh = await open()
            await close(tab)
            tab = (await afterStall(fresh, config.dbName, `round ${round}`)).tab
            await start(tab, config)
            await tab.call('monitorStorage', { dbName: config.dbName })
          }
        }
        const table = faultTable(kind.name, rounds)
        console.log(table)
        await writeArtifact(`faults-${kind.name}.md`, table)
        await writeArtifact(`faults-${kind.name}.json`, `${JSON.stringify({ rounds, stalls }, null, 2)}\n`)
        expect(rounds.flatMap((r) => r.problems.map((p) => `round ${r.round}: ${p}`))).toEqual([])
        expect(sum(rounds, 'lost')).toBe(0)
        expect(sum(rounds, 'failed')).toBe(0)
        // Across every page this database served: each acknowledged admit is in the log once.
        await tab.call('waitIdle', { ms: 60_000 })
        acknowledged.push(...(await tab.call<Received>('received')).acknowledged)
        const log = await tab.call<{
          events: { type: string; data: { inputId?: string } }[]
          pending: string[]
        }>('log')
        const promoted = log.events.flatMap((e) => (e.type === 'user/message' ? [e.data.inputId!] : []))
        expect(new Set(promoted).size).toBe(promoted.length)
        const present = new Set([...promoted, ...log.pending])
        expect(acknowledged.filter((id) => !present.has(id))).toEqual([])
        expect(acknowledged.length).toBeGreaterThanOrEqual(sum(rounds, 'acknowledged'))
        // One fresh worker per kill; more only if a fresh one was wedged and replaced too (said here).
        workers += await tab.call<number>('workers')
        console.log(
          `${kind.name}: ${workers} workers started for ${FAULT_ROUNDS} kills on ${stalls.length + 1} pages`,
        )
        expect(workers).toBeGreaterThanOrEqual(rounds.length + stalls.length + 1)
      },
      450_000,
    )

    sharedTest(
      'a turn outlives the tab that started it: the one runner lives in the shared worker, and another tab sees it complete',
      async () => {
        const config = { dbName: 'contract-outlives', sessionId: 's-outlives', provider: scripted(40) }
        // The other tab starts the shared worker: the tab that closes only started the turn (see
        // the next scenario for the tab that started the worker).
        const other = await open()
        await start(other, config)
        const owner = await open()
        await start(owner, config)
        await owner.call('admit', { text: 'a long answer, please', id: 'a-1', delivery: 'steer' })
        await poll(
          () => other.call<Snapshot>('snapshot'),
          (s) => s.rows.some((row) => row.role === 'assistant'),
          20_000,
          'the other tab to show the answer streaming',
        )
        await other.call('admit', { text: 'queued in the other tab', id: 'b-1', delivery: 'queue' })
        await close(owner)
        await other.call('waitIdle', { ms: 60_000 })
        const report = await other.call<AuditReport>('audit')
        expect(report.problems).toEqual([])
        expect([...report.promoted].sort()).toEqual(['a-1', 'b-1'])
        const log = await other.call<{ events: { type: string; data: { reason?: string } }[] }>('log')
        const ends = log.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)
        // Nobody took over: the turn the closed tab started ran to its end in the shared worker.
        expect(ends).toEqual(['completed', 'completed'])
      },
      180_000,
    )

    // Not in WebKitGTK: it ends a shared worker with the tab that started it (decision 0035), so
    // this is a worker lost under the other tab, not a tab leaving a live worker. One run there
    // showed the other tab's view not reaching the head it had just committed within 20 s after
    // that loss, where earlier runs passed: a flake of the recovery path that is still open.
    // Since then it passed 5 of 5 runs in WebKit (3 alone, 2 in the whole shared-mode suite),
    // with 1 fresh worker each time. Seen meanwhile: an append made 0.5 s after the close is
    // answered by the worker WebKit is about to end, and the view shows it only after the fresh
    // worker's re-read (1.5 s later); a restart that stalled for the 15 s start timeout would put
    // that past 20 s. Unconfirmed: a failure now says the view's state and workers started.
    // The stuck-worker and last-tab scenarios below cover WebKit's loss of a shared worker.
    ;(kind.name === 'webkit' ? () => undefined : sharedTest)(
      'the tab that started the shared worker closes: the other tab is served on',
      async () => {
        const config = { dbName: 'contract-first-closes', sessionId: 's-first', provider: hostDriven }
        const first = await open()
        await start(first, config)
        const second = await open()
        await start(second, config)
        await first.call('appendTurns', { from: 1, count: 1 })
        await second.call('waitHead', { seq: 8, ms: 10_000 })
        const before = await second.call<number>('workers')
        await close(first)
        // The second tab's calls may meet a worker that went away with the first tab (they then
        // reject worker_gone while the client starts a fresh one): each is tried until it answers.
        const retried = async <T>(run: () => Promise<T>, what: string): Promise<T> => {
          const deadline = Date.now() + 30_000
          for (;;) {
            try {
              return await run()
            } catch (error) {
              if (Date.now() > deadline || !String(error).includes('worker_gone')) throw error
              console.log(`${kind.name}: ${what}: ${String(error)}; trying again`)
              await sleep(200)
            }
          }
        }
        const closedAt = Date.now()
        await sleep(3_000) // longer than the page's heartbeat timeout: a lost worker is noticed
        const { headSeq } = await retried(
          () => second.call<{ headSeq: number }>('appendTurns', { from: 2, count: 1 }),
          'append after the first tab closed',
        )
        const appendedAt = Date.now()
        await second.call('waitHead', { seq: headSeq, ms: 20_000 }).catch(async (error: unknown) => {
          const s = await second.call<Snapshot>('snapshot')
          throw new Error(
            `${String(error)} (view ${s.status} at seq ${s.headSeq}; ${(await second.call<number>('workers')) - before} worker(s) started since the close, on ${await second.call<string>('sharedWorker')})`,
          )
        })
        const after = await second.call<number>('workers')
        console.log(
          `${kind.name}: the tab that started the shared worker closed; the other tab started ${after - before} worker(s) since (${await second.call<string>('sharedWorker')}); appended ${appendedAt - closedAt} ms after the close, seen ${Date.now() - appendedAt} ms after that`,
        )
        expect((await second.call<AuditReport>('audit')).problems).toEqual([])
        // WebKitGTK 2.50 ends a shared worker with the tab that started it (in each of three runs
        // here); the other tab's client then starts a fresh one. Chromium and Firefox keep it.
        if (kind.name !== 'webkit') expect(after - before).toBe(0)
      },
    )

    sharedTest(
      'the last tab closing mid-turn: a tab opened later finds the turn ended and runs what was queued behind it',
      async () => {
        const config = { dbName: 'contract-last-tab', sessionId: 's-last', provider: scripted(40) }
        const only = await open()
        await start(only, config)
        await only.call('admit', { text: 'a long answer, please', id: 'l-1', delivery: 'steer' })
        await only.call('admit', { text: 'queued behind it', id: 'l-2', delivery: 'queue' })
        await poll(
          () => only.call<Snapshot>('snapshot'),
          (s) => s.rows.some((row) => row.role === 'assistant'),
          20_000,
          'the answer to stream',
        )
        await close(only)
        const next = await open()
        await start(next, config)
        await next.call('waitIdle', { ms: 60_000 })
        const report = await next.call<AuditReport>('audit')
        expect(report.problems).toEqual([])
        expect([...report.promoted].sort()).toEqual(['l-1', 'l-2'])
        const log = await next.call<{ events: { type: string; data: { reason?: string } }[] }>('log')
        const ends = log.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)
        // `interrupted`: the browser ended the worker with its last tab, and the next engine took the
        // turn over; `completed`: the browser kept the worker (or the page) a while and it finished.
        console.log(`${kind.name}: turn ends after the last tab closed mid-turn: ${ends.join(', ')}`)
        expect(ends).toHaveLength(2)
        expect(['interrupted', 'completed']).toContain(ends[0])
        expect(ends[1]).toBe('completed')
      },
      180_000,
    )

    sharedTest(
      'a stuck shared worker, which no page can terminate: every tab moves to a fresh one and hears the others there',
      async () => {
        const config = {
          dbName: 'contract-stuck',
          sessionId: 's-stuck',
          provider: hostDriven,
          heartbeatMs: 100,
          heartbeatTimeoutMs: 1_000,
          startTimeoutMs: 3_000,
        }
        const a = await open()
        await start(a, config)
        const b = await open()
        await start(b, config)
        const before = await a.call<string>('sharedWorker')
        expect(await b.call<string>('sharedWorker')).toBe(before)
        await a.call('appendTurns', { from: 1, count: 1 })
        await b.call('waitHead', { seq: 8, ms: 10_000 })
        const stuckAt = Date.now()
        await a.call('makeStuck')
        // Each tab misses its heartbeat, tries the same name once more (the same stuck worker, which
        // never answers), then moves to the next name.
        const moved = (tab: Tab) =>
          poll(
            async () => ({
              name: await tab.call<string>('sharedWorker'),
              status: (await tab.call<Snapshot>('snapshot')).status,
            }),
            ({ name, status }) => name !== before && status === 'ready',
            60_000,
            'the tab to move to a fresh shared worker',
          )
        const [movedA, movedB] = [await moved(a), await moved(b)]
        console.log(
          `${kind.name}: both tabs on a fresh shared worker ${Date.now() - stuckAt} ms after it got stuck`,
        )
        expect(movedB.name).toBe(movedA.name)
        const { headSeq } = await a.call<{ headSeq: number }>('appendTurns', { from: 2, count: 1 })
        await b.call('waitHead', { seq: headSeq, ms: 10_000 })
        expect(sameTail(await b.call<Digest>('digest'), await a.call<Digest>('digest'))).toBe(true)
        // A tab opened now goes to the fresh worker at once.
        const c = await open()
        await start(c, config)
        expect(await c.call<string>('sharedWorker')).toBe(movedA.name)
      },
      180_000,
    )

    test('history across tabs under a kill: a resend in one tab while the other streams, then the runner killed, leaves one tree every tab and a fresh engine agree on', async () => {
      const config = { dbName: 'contract-resend-kill', sessionId: 's-resend', provider: scripted(40) }
      const began = Date.now()
      let a = await open()
      await start(a, config)
      let b = await open()
      await start(b, config)
      await a.call('admit', { text: 'a long answer, please', id: 'p-1', delivery: 'steer' })
      await poll(
        () => a.call<Snapshot>('snapshot'),
        (s) => s.rows.some((row) => row.role === 'assistant'),
        20_000,
        'tab A to stream the answer',
      )
      await poll(
        () => b.call<Place[]>('places'),
        (rows) => rows.some((row) => row.id === 'p-1'),
        10_000,
        'tab B to show the prompt',
      )
      // B edits and resends the prompt A's turn answers, while A's runner streams that answer.
      const resent = await b.call<{ id: string; status: string }>('resend', {
        messageId: 'p-1',
        text: 'a different long answer, please',
        id: 'p-2',
      })
      expect(resent).toEqual({ id: 'p-2', status: 'promoted' })
      // The kill. Dedicated: at once, while A's runner still holds the session's lock and streams
      // the turn the resend ended (it learns so only at its next commit); B's engine, the heir,
      // takes the lock and must answer the resent turn. Shared: the one runner stopped the old
      // turn itself and answers the resent one; the shared worker no page can terminate is ended
      // by the browser with its last tab (decision 0035), so once it answers both tabs close and
      // two fresh ones open (the survivors), which find that turn cut off.
      const answering = dedicated
        ? false
        : await poll(
            () => b.call<Place[]>('places'),
            (rows) => rows.some((row) => row.id === 'p-2') && rows.at(-1)?.role === 'assistant',
            5_000,
            'the resent turn to be answered',
          ).then(
            () => true,
            () => false,
          )
      if (dedicated) {
        await a.call('monitorStorage', { dbName: config.dbName })
        await a.call('kill')
      } else {
        await close(a)
        await close(b)
        a = await open()
        await start(a, config)
        b = await open()
        await start(b, config)
      }
      const killedAt = Date.now()
      let stalled = false
      try {
        await b.call('waitIdle', { ms: 60_000 })
      } catch (error) {
        // The WebKit stall after worker.terminate() (see the hand-over scenario).
        if (!dedicated || !(await storageStalled(a, config.dbName))) throw error
        expect(kind.name).toBe('webkit')
        stalled = true
        console.log(`${kind.name}: the database stalled after worker.terminate(); closing tab A (${error})`)
        await close(a)
        const after = await afterStall(b, config.dbName, 'resend under a kill')
        b = after.tab
        if (after.relaunched) await start(b, config)
        await b.call('waitIdle', { ms: 60_000 })
        a = await open()
        await start(a, config)
      }
      const endsOf = async (tab: Tab) =>
        (await tab.call<{ events: LogEvent[] }>('log')).events.filter((e) => e.type === 'turn/end')
      let ends = await endsOf(b)
      const brief = (await b.call<{ events: LogEvent[] }>('log')).events
        .filter((e) => e.type !== 'assistant/delta')
        .map(
          (e) =>
            `${e.seq}:${e.type}${e.data.turn ? `#${e.data.turn}` : ''}${e.data.reason ? `(${e.data.reason})` : ''}@${e.at - killedAt}`,
        )
      console.log(`${kind.name}: resend under a kill: log ${brief.join(' ')}`)
      const resentTurnEnd = ends.find((e) => e.data.turn === 2)?.data.reason
      console.log(
        `${kind.name}: resend under a kill: answering at the kill ${answering}; turn ends ${ends.map((e) => `${e.data.turn}:${e.data.reason}`).join(', ')} (idle ${Date.now() - killedAt} ms after the kill)`,
      )
      expect(ends[0]?.data).toMatchObject({ turn: 1, reason: 'interrupted' })
      // Before the fix in src/engine/runner-recovery.ts the heir closed the resent turn unanswered.
      if (dedicated && !stalled) expect(resentTurnEnd).toBe('completed')
      expect(['completed', 'interrupted']).toContain(resentTurnEnd)
      if (resentTurnEnd === 'interrupted') {
        // Cut off with the worker: resumable, a regenerate answers the resent prompt again.
        await b.call('regenerate', { messageId: 'p-2' })
        await b.call('waitIdle', { ms: 60_000 })
        ends = await endsOf(b)
      }
      expect(ends.at(-1)?.data.reason).toBe('completed')
      const log = await b.call<{ events: LogEvent[] }>('log')
      const heads = log.events.filter((e) => e.type === 'history/head')
      expect(heads[0]?.data).toMatchObject({ head: null, cause: 'resend' })
      // A fresh engine (none of the tabs') reads one tree.
      const fresh = await b.call<FreshRead>('freshEngine', { dbName: config.dbName })
      const checkTree = (read: FreshRead) => {
        const ids = read.all.map((row) => row.id)
        expect(new Set(ids).size).toBe(ids.length)
        const old = read.all.find((row) => row.id === 'p-1')
        const prompt = read.all.find((row) => row.id === 'p-2')
        expect(old).toMatchObject({ role: 'user', visibility: 'inactive' })
        expect(prompt).toMatchObject({ role: 'user', visibility: 'visible', branch: { index: 1, count: 2 } })
        // The old turn's rows are all off the path; the visible rows are the path: the new
        // prompt first (a root, as the old one), then the answers below it, in seq order.
        const visible = read.all.filter((row) => row.visibility === 'visible')
        expect(
          read.all.filter((row) => row.seq < prompt!.seq).every((row) => row.visibility === 'inactive'),
        ).toBe(true)
        expect(visible[0]?.id).toBe('p-2')
        expect(visible.slice(1).length).toBeGreaterThan(0)
        expect(visible.slice(1).every((row) => row.role !== 'user')).toBe(true)
        expect(visible.map((row) => row.seq)).toEqual(
          [...visible.map((row) => row.seq)].sort((x, y) => x - y),
        )
        expect(visible.at(-1)).toMatchObject({ role: 'assistant', status: 'complete' })
        expect(read.visible).toHaveLength(visible.length)
      }
      checkTree(fresh)
      // Both tabs' views show exactly what the fresh engine reads, at its head.
      for (const [name, tab] of [
        ['A', a],
        ['B', b],
      ] as const) {
        await tab.call('waitHead', { seq: fresh.headSeq, ms: 20_000 })
        expect(await tab.call<Digest>('digest'), `tab ${name}`).toEqual({
          headSeq: fresh.headSeq,
          rows: fresh.visible,
        })
        expect((await tab.call<AuditReport>('audit')).problems, `tab ${name}`).toEqual([])
      }
      // And after a fresh reopen (every tab closed, so every engine and worker gone).
      await close(a)
      await close(b)
      const reopened = await open()
      await start(reopened, config)
      const again = await reopened.call<FreshRead>('freshEngine', { dbName: config.dbName })
      expect(again).toEqual(fresh)
      expect(await reopened.call<Digest>('digest')).toEqual({ headSeq: fresh.headSeq, rows: fresh.visible })
      expect((await reopened.call<AuditReport>('audit')).problems).toEqual([])
      console.log(`${kind.name}: resend under a kill passed in ${Date.now() - began} ms`)
    }, 240_000)

    test('an attachment: an image made in the page comes back byte for byte in this tab, another tab and after a relaunch; deleting the last session that uses it frees it', async () => {
      const config = { dbName: 'contract-attachment', sessionId: 's-attach', provider: scripted(2) }
      const began = Date.now()
      let tab = await open()
      await start(tab, config)
      const size = 4_096
      const admitted = await tab.call<{ sha256: string; files: unknown[] }>('admitFile', {
        id: 'f-1',
        text: 'what is on this picture?',
        seed: 7,
        size,
      })
      const id = admitted.sha256
      expect(admitted.files).toEqual([
        { type: 'file', attachmentId: id, name: 'made-7.png', mediaType: 'image/png', size },
      ])
      await tab.call('waitIdle', { ms: 30_000 })
      const shown = async (t: Tab) => (await t.call<Place[]>('places')).find((row) => row.id === 'f-1')
      expect(await shown(tab)).toMatchObject({ role: 'user', files: [id] })
      const whole = { sha256: id, size, type: 'image/png' }
      expect(await tab.call('attachmentDigest', { id })).toEqual(whole)
      const other = await open()
      await start(other, config)
      expect(await shown(other)).toMatchObject({ role: 'user', files: [id] })
      expect(await other.call('attachmentDigest', { id })).toEqual(whole)
      // From storage again: a relaunch where the profile keeps IndexedDB (dedicated mode; stock
      // MiniBrowser keeps it in memory), else every tab but one closed and that one reloaded.
      const relaunch =
        dedicated && (kind.name !== 'webkit' || (browser as { persistent?: boolean }).persistent === true)
      if (relaunch) {
        await tab.call('stop')
        await other.call('stop')
        tabs.clear()
        await browser!.relaunch()
        tab = await open()
      } else {
        await close(other)
        await tab.reload()
      }
      await start(tab, config)
      expect(await shown(tab)).toMatchObject({ role: 'user', files: [id] })
      expect(await tab.call('attachmentDigest', { id })).toEqual(whole)
      // A second session uses the same bytes: stored once, freed with the last session using them.
      const second = await tab.call<{ sha256: string; files: { attachmentId: string }[] }>('admitFile', {
        id: 'f-2',
        text: 'the same picture again',
        seed: 7,
        size,
        session: 's-attach-2',
      })
      expect(second.files.map((file) => file.attachmentId)).toEqual([id])
      await tab.call('waitIdle', { ms: 30_000, session: 's-attach-2' })
      await tab.call('deleteSession', { session: config.sessionId })
      expect(await tab.call('attachmentDigest', { id })).toEqual(whole)
      await tab.call('deleteSession', { session: 's-attach-2' })
      expect(await tab.call('attachmentDigest', { id })).toBeNull()
      console.log(
        `${kind.name}: attachment passed in ${Date.now() - began} ms (${relaunch ? 'relaunched' : 'reloaded'})`,
      )
    })

    // A third as long with a shared worker: the same run, kept short for CI's time.
    const chaosMs = dedicated ? CHAOS_MS : Math.round(CHAOS_MS / 3)
    test(`two tabs for ${chaosMs / 1000} s admit, cancel, edit and promote in one session (one tab closed and reopened): views converge`, async () => {
      const config = { dbName: 'contract-chaos', sessionId: 's-chaos', provider: scripted(2) }
      const half = Math.floor(chaosMs / 2)
      const first = await open()
      await start(first, config)
      let second = await open()
      await start(second, config)
      const began = Date.now()
      await first.call('startChaos', { seed: 1, durationMs: chaosMs, tag: 'A' })
      await second.call('startChaos', { seed: 2, durationMs: half, tag: 'B' })
      const received: Received[] = []
      const statuses: ChaosStatus[] = []
      await sleep(half)
      // Close the second tab as it finishes its half (whatever is in flight dies with it).
      received.push(await second.call<Received>('received'))
      statuses.push(await second.call<ChaosStatus>('chaosStatus'))
      await close(second)
      second = await open()
      await start(second, config)
      await second.call('startChaos', { seed: 3, durationMs: chaosMs - (Date.now() - began), tag: 'C' })
      const done = (tab: Tab) =>
        poll(
          () => tab.call<ChaosStatus>('chaosStatus'),
          (s) => s.done || s.error !== undefined,
          chaosMs + 60_000,
          'the run to end',
        )
      const [a, c] = [await done(first), await done(second)]
      statuses.push(a, c)
      const stoppedAt = Math.max(a.lastOpAt, c.lastOpAt)
      // Converged: both views show the same rows at the log's head.
      const converged = await poll(
        async () => {
          const [x, y, report] = [
            await first.call<Digest>('digest'),
            await second.call<Digest>('digest'),
            await first.call<AuditReport>('audit'),
          ]
          return { x, y, report }
        },
        ({ x, y, report }) => x.headSeq === report.headSeq && sameTail(x, y),
        60_000,
        'both views to show the same transcript',
      )
      const convergedAt = Date.now()
      received.push(await first.call<Received>('received'), await second.call<Received>('received'))
      const log = await first.call<{
        events: { type: string; data: { inputId?: string } }[]
        pending: string[]
      }>('log')
      const promoted = log.events.flatMap((e) => (e.type === 'user/message' ? [e.data.inputId!] : []))
      const present = new Set([...promoted, ...log.pending, ...received.flatMap((r) => r.cancelled)])
      const missing = received.flatMap((r) => r.acknowledged).filter((id) => !present.has(id))
      // A cancel still unanswered when the second tab closed may have committed before its worker
      // died: such an input is cancelled, not lost, if the store says so.
      const unanswered = new Set(received.flatMap((r) => r.cancelling))
      const stored = await first.call<Record<string, string>>('receiptStatuses', {
        dbName: config.dbName,
        ids: missing.filter((id) => unanswered.has(id)),
      })
      const lost = missing.filter((id) => stored[id] !== 'cancelled')
      if (lost.length < missing.length)
        console.log(
          `${kind.name}: cancelled by a cancel whose answer died with its tab: ${missing.filter((id) => !lost.includes(id)).join(', ')}`,
        )
      const ops = statuses.reduce(
        (total, s) => ({
          admit: total.admit + s.ops.admit,
          cancel: total.cancel + s.ops.cancel,
          edit: total.edit + s.ops.edit,
          promote: total.promote + s.ops.promote,
          refused: total.refused + s.ops.refused,
        }),
        { admit: 0, cancel: 0, edit: 0, promote: 0, refused: 0 },
      )
      const summary = {
        browser: kind.name,
        durationMs: chaosMs,
        ops,
        seqs: converged.report.headSeq,
        promoted: promoted.length,
        pendingAtEnd: log.pending.length,
        lost: lost.length,
        // From the last operation a tab made until both views showed the log's head (the runners
        // work off the queued inputs meanwhile), and from the last commit until then.
        settledMs: convergedAt - stoppedAt,
        convergenceMs: convergedAt - converged.report.lastCommitAt,
        problems: converged.report.problems,
      }
      console.log(`${kind.name}: two tabs ${JSON.stringify(summary)}`)
      await writeArtifact(`two-tabs-${kind.name}.json`, `${JSON.stringify(summary, null, 2)}\n`)
      expect(statuses.flatMap((s) => [...s.ops.unexpected, ...(s.error ? [s.error] : [])])).toEqual([])
      expect(converged.report.problems).toEqual([])
      expect(new Set(promoted).size).toBe(promoted.length)
      expect(lost).toEqual([])
      expect(ops.admit).toBeGreaterThan(20)
    })

    test('upgrade from version 5: the chunk rows of cached folds are renamed in this browser and every session is served as before', async () => {
      const dbName = 'contract-upgrade-v5'
      const tab = await open()
      await tab.call('loadFrozen', { dbName, version: 5 })
      const before = await tab.call<string[]>('chunkRowNames', { dbName })
      await start(tab, { dbName, sessionId: 'long', provider: hostDriven })
      const compared = await tab.call<{ sessions: number; rows: number; problems: string[] }>('compareFrozen')
      const after = await tab.call<string[]>('chunkRowNames', { dbName })
      console.log(
        `${kind.name}: frozen v5 database: ${compared.sessions} sessions, ${compared.rows} rows checked; chunk rows ${JSON.stringify(after)}`,
      )
      expect(compared.problems).toEqual([])
      expect(compared.sessions).toBe(3)
      // test/store/fixtures/README.md: `long`'s outline in three chunks, `short`'s in one.
      expect(before).toEqual([
        'long turnOutline#entries#0',
        'long turnOutline#entries#1',
        'long turnOutline#entries#2',
        'short turnOutline#entries#0',
      ])
      expect(after).toEqual([
        'long turnOutline#entries#00000000',
        'long turnOutline#entries#00000001',
        'long turnOutline#entries#00000002',
        'short turnOutline#entries#00000000',
      ])
    })

    test('upgrade: the frozen version 1 database opens in this browser with every session served as before; a newer version in another tab stops this view with upgraded', async () => {
      const dbName = 'contract-upgrade'
      const tab = await open()
      await tab.call('loadFrozen', { dbName })
      await start(tab, { dbName, sessionId: 'native', provider: hostDriven })
      const compared = await tab.call<{ sessions: number; rows: number; problems: string[] }>('compareFrozen')
      console.log(
        `${kind.name}: frozen v1 database: ${compared.sessions} sessions, ${compared.rows} rows checked`,
      )
      expect(compared.problems).toEqual([])
      expect(compared.sessions).toBe(8)
      // A newer release opens the database in another tab: this tab's connection gives way at
      // once (the newer open is not left blocked) and its view says upgraded instead of hanging.
      const newer = await open()
      const opened = await newer.call<{ version: number; blocked: boolean }>('openNewerVersion', { dbName })
      const stopped = await poll(
        () => tab.call<Snapshot & { error?: string }>('snapshot'),
        (s) => s.status === 'upgraded',
        10_000,
        'the old tab to say upgraded',
      )
      console.log(
        `${kind.name}: newer version ${opened.version} opened (blocked first: ${opened.blocked}); old view ${stopped.status}`,
      )
    })
  })
}
