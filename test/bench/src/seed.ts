/**
 * The long session that (4)–(7) read: `seedTurns` turns written on each side in writes of
 * whole turns, and (7) what each side keeps on the heap after seeding and after a cold open.
 */
import type { Engine } from '../../../src/engine/types'
import type { BenchConfig } from './config'
import { type BenchEnv, clock, DB, freshEngine, LONG_SESSION, openEngine } from './env'
import { chunks, Stamper, seededTurns } from './fixtures'
import { appendBatch, createRawSession, freshRaw, openRaw, rowsBelow } from './raw'
import { type Comparison, compare, figure } from './stats'

/** Reads the heap of the current JavaScript context after a full garbage collection. */
export interface HeapProbe {
  /** Bytes in use after collecting garbage. */
  measure(): Promise<number>
}

export type SideName = 'sessionline' | 'raw'

export interface SeedResult {
  side: SideName
  turns: number
  /** Transcript rows written (known on the raw side, which writes them itself). */
  rows?: number
  headSeq: number
  seedMs: number
  /** Bytes retained by the open engine / Dexie connection right after seeding. */
  heapAfterSeed?: number
  /** Bytes retained by a freshly opened engine / connection after its cold open. */
  heapAfterColdOpen?: number
}

/**
 * What a page shows first on opening a session (what a SessionView reads): the tail page and the
 * rail's first screen, the outline's newest slice with its total.
 */
export async function coldOpen(engine: Engine, limit: number, sessionId = LONG_SESSION) {
  const [page, outline] = await Promise.all([engine.page(sessionId, { limit }), engine.outline(sessionId)])
  if (
    page.messages.length !== limit ||
    outline.entries.length === 0 ||
    outline.total < outline.entries.length
  )
    throw new Error('cold open read too little')
  return { page, outline }
}

/** Heap growth since `before`; `keep` stays reachable until measured, as a page would hold it. */
async function growth(heap: HeapProbe | undefined, before: number | undefined, keep?: unknown) {
  if (!heap || before === undefined) return undefined
  const after = await heap.measure()
  void keep
  return after - before
}

/** Turn numbers `1..seedTurns` in runs of `seedTurnsPerWrite`, as [first, last]. */
function spansOf(cfg: BenchConfig): [number, number][] {
  const turns = Array.from({ length: cfg.seedTurns }, (_, i) => i + 1)
  return chunks(turns, cfg.seedTurnsPerWrite).map((span) => [span[0]!, span[span.length - 1]!])
}

export function seedLongSession(env: BenchEnv, side: SideName, cfg: BenchConfig, heap?: HeapProbe) {
  return side === 'sessionline' ? seedWithEngine(env, cfg, heap) : seedRaw(env, cfg, heap)
}

async function seedWithEngine(env: BenchEnv, cfg: BenchConfig, heap?: HeapProbe): Promise<SeedResult> {
  const before = await heap?.measure()
  const engine = await freshEngine(env, DB.longSl)
  await engine.createSession({ id: LONG_SESSION, title: 'long' })
  const t0 = performance.now()
  let headSeq = 0
  for (const [first, last] of spansOf(cfg)) {
    ;({ headSeq } = await engine.append(LONG_SESSION, seededTurns(first, last)))
  }
  const seedMs = performance.now() - t0
  const heapAfterSeed = await growth(heap, before, engine)
  await engine.close()

  const beforeOpen = await heap?.measure()
  const reopened = openEngine(env, DB.longSl)
  const opened = await coldOpen(reopened, cfg.tailLimit)
  const heapAfterColdOpen = await growth(heap, beforeOpen, opened)
  await reopened.close()
  return { side: 'sessionline', turns: cfg.seedTurns, headSeq, seedMs, heapAfterSeed, heapAfterColdOpen }
}

async function seedRaw(env: BenchEnv, cfg: BenchConfig, heap?: HeapProbe): Promise<SeedResult> {
  const before = await heap?.measure()
  const db = await freshRaw(DB.longRaw, env.dexie)
  await createRawSession(db, LONG_SESSION, clock())
  const stamper = new Stamper(LONG_SESSION, 2)
  let rows = 0
  let seedMs = 0
  for (const [first, last] of spansOf(cfg)) {
    const at = clock()
    // Events and rows are prepared outside the timing: raw only writes them.
    const batch = stamper.stamp(seededTurns(first, last), at)
    rows += batch.rows.length
    const t0 = performance.now()
    await appendBatch(db, LONG_SESSION, batch.events, batch.rows, at)
    seedMs += performance.now() - t0
  }
  const headSeq = stamper.headSeq
  const heapAfterSeed = await growth(heap, before, db)
  db.close()

  const beforeOpen = await heap?.measure()
  const reopened = openRaw(DB.longRaw, env.dexie)
  const tail = await rowsBelow(reopened, LONG_SESSION, cfg.tailLimit)
  const heapAfterColdOpen = await growth(heap, beforeOpen, [reopened, tail])
  reopened.close()
  return { side: 'raw', turns: cfg.seedTurns, rows, headSeq, seedMs, heapAfterSeed, heapAfterColdOpen }
}

/** (7a) the seeding itself, and (7b, 7c) the heap, when it could be measured. */
export function memoryComparisons(sl: SeedResult, raw: SeedResult): Comparison[] {
  const ofTurns = `${sl.turns.toLocaleString('en')} turns`
  const out: Comparison[] = [
    compare(
      {
        id: 'seed',
        name: `seed ${ofTurns} (${(raw.rows ?? 0).toLocaleString('en')} rows) in writes of whole turns`,
        op: 'turn',
        note: 'informational: sessionline validates, folds and appends events; raw writes prepared events and rows',
      },
      figure([sl.seedMs], sl.turns),
      figure([raw.seedMs], raw.turns),
    ),
  ]
  if (sl.heapAfterSeed === undefined || raw.heapAfterSeed === undefined) return out
  const mb = (bytes: number | undefined) => figure([(bytes ?? 0) / 2 ** 20], 1)
  out.push(
    compare(
      {
        id: 'heap-after-seed',
        name: `heap retained after seeding ${ofTurns}`,
        op: 'MB',
        unit: 'MB',
        note: 'the open engine vs the open Dexie connection, after a forced GC',
      },
      mb(sl.heapAfterSeed),
      mb(raw.heapAfterSeed),
    ),
    compare(
      {
        id: 'heap-after-cold-open',
        name: `heap retained after a cold open of ${ofTurns}`,
        op: 'MB',
        unit: 'MB',
        note: 'sessionline holds the tail page, the outline and its fold caches; raw the tail rows',
      },
      mb(sl.heapAfterColdOpen),
      mb(raw.heapAfterColdOpen),
    ),
  )
  return out
}
