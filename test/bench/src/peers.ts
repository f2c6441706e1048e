/**
 * (10) Peers, on one chat workload: sessionline against the stores an app would otherwise pick
 * for the same chat, in the same browser run, each driven from the page the way its users drive
 * it (docs/decisions/0023). Steps, one id each: `admit` (a round's prompts written and shown),
 * `stream` (one reply of `peerDeltas` deltas written and shown), `page` (a fresh observer on the
 * open store until the whole history is in it), `cold-open` (the store closed, then opened until
 * the first screen is shown). The sides take turns step by step, the first rotating; a figure is
 * the median over rounds (writes) or repetitions (reads). At the end of the writes every side
 * must hold exactly the same history, or the run fails.
 */
import type { BenchConfig } from './config'
import { liveQuerySide } from './peers-livequery'
import { rxdbSide } from './peers-rxdb'
import { type ConnectEngine, sessionlineSide } from './peers-sessionline'
import { type ChatSide, chatRounds, checkHistory, expectedHistory, PEER_DB } from './peers-workload'
import type { DexieEnv } from './raw'
import { type Comparison, compare, figure } from './stats'

export interface PeerHost {
  /** Where the peers find IndexedDB (the page's own; Node: fake-indexeddb). */
  dexie: DexieEnv
  /** A new sessionline engine on `PEER_DB.sessionline`, and a client of it. */
  connectEngine: ConnectEngine
  log(message: string): void
}

const SIDES = ['sessionline', 'liveQuery', 'rxdb'] as const
type SideName = (typeof SIDES)[number]

function sidesFor(host: PeerHost, sessionId: string): Record<SideName, ChatSide> {
  return {
    sessionline: sessionlineSide(host.connectEngine, sessionId),
    liveQuery: liveQuerySide(host.dexie, PEER_DB.liveQuery, sessionId),
    rxdb: rxdbSide(host.dexie, PEER_DB.rxdb, sessionId),
  }
}

/** The sides in the order of step `i`: each goes first in turn. */
const turnOrder = (i: number): SideName[] => SIDES.map((_, k) => SIDES[(i + k) % SIDES.length]!)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Dexie drops a cached query result 3 s after its last observer left (see peers-livequery.ts). */
const DEXIE_CACHE_LINGER_MS = 3_100

/**
 * A pause after each timed read, untimed, on every side: work a side goes on with after its
 * figure ends (sessionline's worker taking over a first screen read on the page; docs/decisions/0038)
 * must not run into the next side's figure.
 */
const SETTLE_MS = 50

type Steps = 'admit' | 'stream' | 'page' | 'coldOpen'

/** Runs the whole chat once on every side; returns each side's milliseconds per step. */
async function runChat(host: PeerHost, sessionId: string, cfg: PeerSizes, reads: number) {
  const sides = sidesFor(host, sessionId)
  const rounds = chatRounds(sessionId, cfg)
  const history = expectedHistory(rounds)
  const times = Object.fromEntries(
    SIDES.map((s) => [s, { admit: [], stream: [], page: [], coldOpen: [] } as Record<Steps, number[]>]),
  ) as Record<SideName, Record<Steps, number[]>>
  try {
    for (const side of SIDES) await sides[side].start()
    for (const [r, round] of rounds.entries()) {
      for (const side of turnOrder(r)) times[side].admit.push(await sides[side].admit(round.prompts))
      for (const side of turnOrder(r + 1))
        times[side].stream.push(await sides[side].stream(round.reply, round.prompts))
      const ms = (side: SideName) => `${side} ${Math.round(times[side].stream[r]!)} ms`
      host.log(`(10) ${sessionId}: reply ${r + 1}/${rounds.length} streamed: ${SIDES.map(ms).join(', ')}`)
    }
    for (const side of SIDES) checkHistory(sides[side].name, await sides[side].history(), history)
    for (const side of SIDES) await sides[side].leave()
    await sleep(DEXIE_CACHE_LINGER_MS)
    // One untimed repetition of each read first, for the JIT.
    for (let rep = -1; rep < reads; rep++)
      for (const side of turnOrder(rep + 1)) {
        const ms = await sides[side].page(rep, history.length)
        if (rep >= 0) times[side].page.push(ms)
        await sleep(SETTLE_MS)
      }
    for (let rep = -1; rep < reads; rep++)
      for (const side of turnOrder(rep + 2)) {
        const ms = await sides[side].coldOpen(rep, history.length)
        if (rep >= 0) times[side].coldOpen.push(ms)
        await sleep(SETTLE_MS)
      }
  } finally {
    for (const side of SIDES) await sides[side].close().catch(() => undefined)
  }
  return { times, rows: history.length, chars: history.reduce((n, row) => n + row.text.length, 0) }
}

type PeerSizes = Pick<BenchConfig, 'peerPrompts' | 'peerReplies' | 'peerDeltas'>

const PEERS = {
  liveQuery: { id: 'livequery', what: 'Dexie liveQuery' },
  rxdb: { id: 'rxdb', what: 'RxDB 17 (Dexie storage)' },
} as const

export async function runPeers(host: PeerHost, cfg: BenchConfig): Promise<Comparison[]> {
  host.log('(10) peers: a small untimed chat first (JIT, database files)')
  await runChat(host, 'peers-warm', { peerPrompts: 4, peerReplies: 2, peerDeltas: 50 }, 1)
  const perRound = cfg.peerPrompts / cfg.peerReplies
  host.log(
    `(10) peers: ${cfg.peerPrompts} prompts, ${cfg.peerReplies} replies of ${cfg.peerDeltas} deltas, ${cfg.peerReads} reads`,
  )
  const { times, rows, chars } = await runChat(host, 'peers', cfg, cfg.peerReads)
  const total = (side: SideName) =>
    Math.round(times[side].admit.reduce((a, b) => a + b, 0) + times[side].stream.reduce((a, b) => a + b, 0))
  const history = `${rows} rows, ${Math.round(chars / 1024)} KB of text`
  const out: Comparison[] = []
  for (const peer of ['liveQuery', 'rxdb'] as const) {
    const { id, what } = PEERS[peer]
    const vs = (step: Steps, ops: number) =>
      [figure(times.sessionline[step], ops), figure(times[peer][step], ops)] as const
    const writes = `whole chat written: sessionline ${total('sessionline')} ms, ${what} ${total(peer)} ms`
    out.push(
      compare(
        {
          id: `peer-${id}-admit`,
          name: `chat vs ${what}: ${perRound} prompts written and shown`,
          op: 'prompt',
          target: 1,
          note: `median over ${cfg.peerReplies} rounds; ${writes}`,
        },
        ...vs('admit', perRound),
      ),
      compare(
        {
          id: `peer-${id}-stream`,
          name: `chat vs ${what}: a reply of ${cfg.peerDeltas} deltas written and shown`,
          op: 'delta',
          target: 1,
          note: `one awaited write per delta; median over ${cfg.peerReplies} replies; ${writes}`,
        },
        ...vs('stream', cfg.peerDeltas),
      ),
      compare(
        {
          id: `peer-${id}-page`,
          name: `chat vs ${what}: the whole history (${rows} rows) into a fresh view`,
          op: 'history',
          target: 1,
          note: `${history}; sessionline: open + loadThrough; peer: a new query's first result`,
        },
        ...vs('page', 1),
      ),
      compare(
        {
          id: `peer-${id}-cold-open`,
          name: `chat vs ${what}: cold open to the first screen`,
          op: 'open',
          target: 1,
          note: `${history}; sessionline: a new engine + connect + open, the tail of 50; peer: open + its query (all ${rows} rows)`,
        },
        ...vs('coldOpen', 1),
      ),
    )
  }
  return out
}
