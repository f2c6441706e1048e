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
  it('grows sessionline and raw Dexie to the same events and rows, and reports each metric per size against the smallest size and against raw', async () => {
    const comparisons = await runGrowth(env, {
      ...NODE,
      growthSizes: SIZES,
      seedTurnsPerWrite: 50,
      loadRows: 100,
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
    // At the smallest size, each side's growth is itself against itself.
    for (const m of METRICS) {
      expect(comparisons.find((c) => c.id === `growth-${m}-40`)?.ratio).toBe(1)
      expect(comparisons.find((c) => c.id === `growth-raw-${m}-40`)?.ratio).toBe(1)
    }

    // Both sides end on the same log and transcript: seeded to 300 turns, then 7 + 1 reps of 20
    // appended turns (the smallest size's appends count towards the next size's seeding).
    const sl = openDb(GROWTH_DB.sessionline, env.engine)
    const raw = openRaw(GROWTH_DB.raw, env.dexie)
    try {
      const all = [GROWTH_SESSION, 0, GROWTH_SESSION, Number.POSITIVE_INFINITY] as const
      const events = (db: typeof raw | typeof sl) =>
        db.events.where('[sessionId+seq]').between([all[0], all[1]], [all[2], all[3]]).toArray()
      const rows = (db: typeof raw | typeof sl) =>
        db.messages.where('[sessionId+seq]').between([all[0], all[1]], [all[2], all[3]]).toArray()
      const [slEvents, rawEvents, slRows, rawRows] = await Promise.all([
        events(sl),
        events(raw),
        rows(sl),
        rows(raw),
      ])
      const turns = 300 + 8 * 20
      expect(slEvents.filter((e) => e.type === 'turn/end')).toHaveLength(turns)
      expect(rawEvents.map((e) => [e.seq, e.type])).toEqual(slEvents.map((e) => [e.seq, e.type]))
      expect(rawRows.map((r) => [r.seq, r.id, r.parts])).toEqual(slRows.map((r) => [r.seq, r.id, r.parts]))
      // Every admitted input was cancelled on both sides: none is left pending.
      const pending = async (db: typeof raw | typeof sl) =>
        (await db.inputs.toArray()).filter((r) => r.sessionId === GROWTH_SESSION && r.status === 'pending')
      expect(await pending(sl)).toEqual([])
      expect(await pending(raw)).toEqual([])
      expect((await raw.inputs.count()) > 0 && (await sl.inputs.count()) === (await raw.inputs.count())).toBe(
        true,
      )
    } finally {
      sl.close()
      raw.close()
    }
  }, 180_000)
})
