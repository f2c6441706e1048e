/**
 * The peers benchmark (test/bench/src/peers*.ts) on fake-indexeddb: not its timings (those stay
 * in `npm run bench`), but that every side runs the same chat and ends with the same history,
 * which is what makes its ratios comparable.
 */
import Dexie from 'dexie'
import { IDBKeyRange, IDBObjectStore, indexedDB } from 'fake-indexeddb'
import { beforeAll, describe, expect, it } from 'vitest'
import { NODE } from '../bench/src/config'
import type { BenchEnv } from '../bench/src/env'
import { runPeers } from '../bench/src/peers'
import { channelEngine } from '../bench/src/peers-channel'
import { chatRounds, checkHistory, expectedHistory } from '../bench/src/peers-workload'

const env: BenchEnv = {
  dexie: { indexedDB, IDBKeyRange },
  engine: { indexedDB, IDBKeyRange },
  log: () => undefined,
  objectStore: IDBObjectStore,
}

beforeAll(() => {
  // liveQuery runs only where Dexie finds a global IndexedDB; Node has none but fake-indexeddb's.
  Dexie.dependencies.indexedDB = indexedDB
  Dexie.dependencies.IDBKeyRange = IDBKeyRange
})

describe('the peers chat workload', () => {
  it('has peerPrompts prompts in rounds of prompts/replies, each reply of peerDeltas deltas, every id once', () => {
    const rounds = chatRounds('s', { peerPrompts: 12, peerReplies: 3, peerDeltas: 40 })
    expect(rounds.map((r) => r.prompts.length)).toEqual([4, 4, 4])
    expect(rounds.map((r) => r.reply.deltas.length)).toEqual([40, 40, 40])
    for (const r of rounds) expect(r.reply.text).toBe(r.reply.deltas.join(''))
    const history = expectedHistory(rounds)
    expect(history).toHaveLength(15)
    expect(new Set(history.map((row) => row.id)).size).toBe(15)
    expect(history.map((row) => row.role).slice(0, 5)).toEqual(['user', 'user', 'user', 'user', 'assistant'])
    expect(() => chatRounds('s', { peerPrompts: 10, peerReplies: 3, peerDeltas: 1 })).toThrow(/multiple/)
  })

  it('checkHistory fails on a missing row, a changed text and a reordering', () => {
    const history = expectedHistory(chatRounds('s', { peerPrompts: 2, peerReplies: 1, peerDeltas: 5 }))
    expect(() => checkHistory('side', history, history)).not.toThrow()
    expect(() => checkHistory('side', history.slice(1), history)).toThrow(/2 rows for 3/)
    const changed = history.map((row, i) => (i === 2 ? { ...row, text: `${row.text}!` } : row))
    expect(() => checkHistory('side', changed, history)).toThrow(/row 2/)
    expect(() => checkHistory('side', [...history].reverse(), history)).toThrow(/row 0/)
  })

  it('runs on sessionline, Dexie liveQuery and RxDB to the same history, and reports every step against each peer', async () => {
    const comparisons = await runPeers(
      {
        dexie: env.dexie,
        log: () => undefined,
        connectEngine: channelEngine(env),
      },
      { ...NODE, peerPrompts: 4, peerReplies: 2, peerDeltas: 12, peerReads: 1 },
    )
    expect(comparisons.map((c) => c.id)).toEqual(
      ['livequery', 'rxdb'].flatMap((peer) =>
        ['admit', 'stream', 'page', 'cold-open'].map((step) => `peer-${peer}-${step}`),
      ),
    )
    for (const c of comparisons) {
      expect(c.target).toBe(1)
      expect(c.sessionline.median).toBeGreaterThan(0)
      expect(c.raw.median).toBeGreaterThan(0)
    }
    // The stream step: one figure per reply, per delta.
    const stream = comparisons.find((c) => c.id === 'peer-rxdb-stream')
    expect(stream?.sessionline.reps).toBe(2)
    expect(stream?.sessionline.opsPerRep).toBe(12)
  }, 120_000)
})
