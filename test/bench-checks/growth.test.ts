/**
 * The growth benchmark (test/bench/src/growth.ts) on fake-indexeddb: not its timings (those stay
 * in `npm run bench -- --huge`), but that its raw baseline is grown to the same session as
 * sessionline's at every size, which is what makes "sessionline ÷ raw" per size mean anything,
 * and that every metric is reported three ways per size under its stable id.
 */
import { IDBKeyRange, IDBObjectStore, indexedDB } from 'fake-indexeddb'
import { describe, expect, it } from 'vitest'
import { openDb } from '../../src/store/db'
import { NODE } from '../bench/src/config'
import type { BenchEnv } from '../bench/src/env'
import { GROWTH_DB, GROWTH_SESSION, runGrowth } from '../bench/src/growth'
import { openRaw } from '../bench/src/raw'

const env: BenchEnv = {
  dexie: { indexedDB, IDBKeyRange },
  engine: { indexedDB, IDBKeyRange },
  log: () => undefined,
  objectStore: IDBObjectStore,
}

const METRICS = ['cold-open-outline', 'admit', 'append-turn', 'loadThrough']
const SIZES = [40, 300]

describe('the growth benchmark', () => {
  it('grows sessionline and raw Dexie to the same events and rows, and reports each metric per size against a reference session of the smallest size and against raw', async () => {
    const comparisons = await runGrowth(env, {
      ...NODE,
      growthSizes: SIZES,
      seedTurnsPerWrite: 50,
      // The 40-turn reference session holds 90 rows.
      loadRows: 50,
      pageSize: 25,
      tailLimit: 20,
    })
    expect(comparisons.map((c) => c.id)).toEqual(
      SIZES.flatMap((size) =>
        METRICS.flatMap((m) => [
          `growth-${m}-${size}`,
          `growth-raw-${m}-${size}`,
          `growth-vs-raw-${m}-${size}`,
        ]),
      ),
    )
    // Only sessionline's own growth past the smallest size has a target.
    expect(comparisons.filter((c) => c.target !== undefined).map((c) => c.id)).toEqual(
      METRICS.map((m) => `growth-${m}-300`),
    )
    for (const c of comparisons) {
      expect(c.sessionline.reps).toBe(c.id.includes('cold-open') ? NODE.coldReps : 7)
      expect(c.sessionline.median).toBeGreaterThan(0)
      expect(c.raw.median).toBeGreaterThan(0)
    }
    const sl = openDb(GROWTH_DB.sessionline, env.engine)
    const raw = openRaw(GROWTH_DB.raw, env.dexie)
    try {
      const between = (sessionId: string) =>
        [
          [sessionId, 0],
          [sessionId, Number.POSITIVE_INFINITY],
        ] as const
      const events = (db: typeof raw | typeof sl, sessionId: string) =>
        db.events
          .where('[sessionId+seq]')
          .between(...between(sessionId))
          .toArray()
      const rows = (db: typeof raw | typeof sl, sessionId: string) =>
        db.messages
          .where('[sessionId+seq]')
          .between(...between(sessionId))
          .toArray()
      // Both sides end on the same logs and transcripts: the grown session seeded to 40 turns, then
      // 7 + 1 reps of 20 appended turns (200), seeded on to 300, 160 more; a fresh 40-turn reference
      // session beside it at each size, 160 turns appended to each.
      for (const [sessionId, turns] of [
        [GROWTH_SESSION, 300 + 160],
        ['ref-40', 40 + 160],
        ['ref-300', 40 + 160],
      ] as const) {
        const [slEvents, rawEvents, slRows, rawRows] = await Promise.all([
          events(sl, sessionId),
          events(raw, sessionId),
          rows(sl, sessionId),
          rows(raw, sessionId),
        ])
        expect(slEvents.filter((e) => e.type === 'turn/end')).toHaveLength(turns)
        expect(rawEvents.map((e) => [e.seq, e.type])).toEqual(slEvents.map((e) => [e.seq, e.type]))
        expect(rawRows.map((r) => [r.seq, r.id, r.parts])).toEqual(slRows.map((r) => [r.seq, r.id, r.parts]))
      }
      // Every admitted input was cancelled on both sides: none is left pending.
      const pending = async (db: typeof raw | typeof sl) =>
        (await db.inputs.toArray()).filter((r) => r.status === 'pending')
      expect(await pending(sl)).toEqual([])
      expect(await pending(raw)).toEqual([])
      expect(await sl.inputs.count()).toBe(4 * 8 * 50)
      expect(await raw.inputs.count()).toBe(4 * 8 * 50)
    } finally {
      sl.close()
      raw.close()
    }
  }, 180_000)
})
