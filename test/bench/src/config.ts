/**
 * What one benchmark run does, and the three sizes it comes in. The runner hands a preset (plus
 * any `--config` overrides) across the page boundary, so the config is validated here, once.
 */
import { z } from 'zod'

const count = z.number().int().positive()

export const BenchConfig = z.strictObject({
  /** (1) admits timed per repetition. */
  admitCalls: count,
  /** (2) streamed turns per repetition, each `appendsPerTurn` appends of `eventsPerAppend` events. */
  appendTurns: count,
  appendsPerTurn: count,
  eventsPerAppend: count.max(10_000),
  /** (1c) admits issued at once per repetition (the raw side: as many concurrent puts). */
  concurrentAdmits: count,
  /** (8) streamed answers per run, each `streamKb` KB in 1 KB deltas (one append per delta). */
  streamReps: count,
  streamKb: count,
  /** (10) rows loaded in the view that watches a streamed answer (`streamKb` deltas of 1 KB). */
  streamPageRows: count,
  /** (3) promotions timed per repetition. */
  promoteCalls: count,
  /** Repetitions of (1)–(3); sides alternate order every repetition. */
  writeReps: count,
  /** (4), (5), (7): turns of the long seeded session; each has 2–3 transcript rows. */
  seedTurns: count,
  /** Turns per seeding write (one append / one bulk transaction). */
  seedTurnsPerWrite: count,
  /** (4) cold opens timed (a new engine or Dexie connection each). */
  coldReps: count,
  /** (13b) exports and imports of the long session timed, per side. */
  fileReps: count,
  /** (4b) warm tail reads per repetition, and repetitions. */
  tailReads: count,
  tailReps: count,
  tailLimit: count,
  /** (5) rows paged back, in pages of `pageSize`. */
  loadRows: count,
  pageSize: count,
  loadReps: count,
  /** (6) tail reads through Comlink per repetition. */
  comlinkCalls: count,
  comlinkReps: count,
  /** (8) rows of the search corpus (demo-seeded sessions of `seedTurns` turns until this many). */
  searchRows: count,
  /** (8) index builds timed, each on a fresh engine with the stored index dropped, beside as many raw reads. */
  searchBuildReps: count,
  /** (8) queries timed against the built index, and (9) jumps / hits landed timed. */
  searchQueries: count,
  jumpReps: count,
  /** admit-under-load: repetitions per side (each loaded one builds the index over `searchRows` rows). */
  underLoadReps: count,
  /** (11) peers (src/peers.ts): prompts admitted, replies streamed (one per `peerPrompts / peerReplies` prompts), deltas per reply. */
  peerPrompts: count,
  peerReplies: count,
  peerDeltas: count,
  /** (11) timed fresh reads of the whole history, and cold opens, per side. */
  peerReads: count,
  /**
   * (11) whether sessionline's client is told the engine's database, so a view reads its first
   * screen on the page (docs/decisions/0038); `false` measures the worker's path alone.
   */
  peerPageRead: z.boolean(),
  /** provider-ai-sdk: deltas of one mock model stream, appended every `providerBatch` deltas; repetitions per side. */
  providerDeltas: count,
  providerBatch: count,
  providerReps: count,
  /** stream-page-tools: tool calls in the one step of each answer, and answers per side. */
  toolCalls: count,
  toolReps: count,
  /** context-growth: turns of the long session (the last `historyTail` after a compaction), and timed reads per side. */
  historyTurns: count,
  historyTail: count,
  historyReps: count,
  /** switch-branch: turns of the session, branches in it, and switches / cold opens timed. */
  branchTurns: count,
  branchCount: count,
  branchReps: count,
  /** (12) `--huge`: the session sizes, in turns, the growth suite measures at (none: skipped). */
  growthSizes: z.array(count),
})
export type BenchConfig = z.infer<typeof BenchConfig>

/** 20–40 minutes on the 2-core machine these targets were set on (1,199 s at 3bfe6ec). */
export const FULL: BenchConfig = {
  admitCalls: 300,
  appendTurns: 5,
  appendsPerTurn: 5,
  eventsPerAppend: 200,
  concurrentAdmits: 200,
  streamReps: 3,
  streamKb: 200,
  streamPageRows: 10_000,
  promoteCalls: 150,
  writeReps: 7,
  seedTurns: 10_000,
  seedTurnsPerWrite: 250,
  coldReps: 15,
  // An import of 10,000 turns takes ~10 s a side: five repetitions already spread only 1.07–1.31×.
  fileReps: 5,
  tailReads: 50,
  tailReps: 9,
  tailLimit: 50,
  loadRows: 2000,
  pageSize: 200,
  loadReps: 9,
  comlinkCalls: 200,
  comlinkReps: 7,
  searchRows: 100_000,
  searchBuildReps: 3,
  searchQueries: 200,
  jumpReps: 7,
  underLoadReps: 7,
  peerPrompts: 200,
  peerReplies: 20,
  peerDeltas: 2000,
  peerReads: 15,
  peerPageRead: true,
  providerDeltas: 5000,
  providerBatch: 100,
  providerReps: 9,
  toolCalls: 100,
  toolReps: 15,
  historyTurns: 100_000,
  historyTail: 1000,
  historyReps: 9,
  branchTurns: 10_000,
  branchCount: 20,
  branchReps: 9,
  growthSizes: [],
}

/** About five minutes here: the same shapes, fewer repetitions, a 1,000-turn session. */
export const QUICK: BenchConfig = {
  ...FULL,
  admitCalls: 100,
  appendTurns: 2,
  promoteCalls: 50,
  writeReps: 3,
  providerDeltas: 2000,
  providerReps: 7,
  toolReps: 9,
  historyTurns: 10_000,
  historyReps: 7,
  branchTurns: 5000,
  branchReps: 7,
  // As many answers as the full run: a p95 of 20 or 40 flushes is nearly their slowest, and swung 0.5–1.9×.
  streamReps: 3,
  seedTurns: 1000,
  // Cold opens are single samples of ~10 ms: five gave medians 2.6–4.4× raw on one commit.
  coldReps: 9,
  // Exports of 1,000 turns take ~0.1 s: five repetitions moved the ratio 20% between two runs.
  fileReps: 9,
  tailReads: 20,
  // Three repetitions of 20 warm reads moved the ratio 21% between two runs; each costs ~25 ms.
  tailReps: 7,
  loadReps: 3,
  comlinkCalls: 50,
  comlinkReps: 3,
  searchRows: 20_000,
  searchBuildReps: 5,
  searchQueries: 60,
  // One jump per repetition (~10 ms): three moved the ratios 20% and 61% between two runs.
  jumpReps: 7,
  underLoadReps: 5,
  // A quarter of the prompts and replies of the full chat, a tenth of each reply: 5 replies of 200 deltas.
  peerPrompts: 50,
  peerReplies: 5,
  peerDeltas: 200,
  peerReads: 11,
}

/** fake-indexeddb in Node: only proves every benchmark runs end to end. */
export const NODE: BenchConfig = {
  ...QUICK,
  admitCalls: 20,
  appendTurns: 1,
  appendsPerTurn: 2,
  promoteCalls: 10,
  writeReps: 2,
  concurrentAdmits: 40,
  streamKb: 20,
  streamPageRows: 1000,
  seedTurns: 200,
  seedTurnsPerWrite: 100,
  coldReps: 3,
  fileReps: 2,
  tailReads: 5,
  tailReps: 2,
  loadRows: 300,
  pageSize: 100,
  loadReps: 2,
  comlinkCalls: 10,
  comlinkReps: 2,
  searchRows: 1000,
  searchBuildReps: 1,
  searchQueries: 10,
  jumpReps: 2,
  underLoadReps: 2,
  providerDeltas: 300,
  providerReps: 2,
  toolCalls: 20,
  toolReps: 1,
  historyTurns: 2000,
  historyTail: 200,
  historyReps: 3,
  branchTurns: 500,
  branchReps: 3,
  peerPrompts: 6,
  peerReplies: 2,
  peerDeltas: 20,
  peerReads: 2,
  // The smallest has at least `loadRows` rows: its reference session is paged back through too.
  growthSizes: [150, 400],
}

/** `--huge`: only the growth suite, at 1,000, 10,000 and 100,000 turns (not part of quick or full). */
export const HUGE: BenchConfig = { ...FULL, growthSizes: [1000, 10_000, 100_000], seedTurnsPerWrite: 1000 }

export const PRESETS = { full: FULL, quick: QUICK, node: NODE, huge: HUGE } as const
export type PresetName = keyof typeof PRESETS

/** What the runner asks for: a preset, and fields to override (`--config '{"seedTurns":2000}'`). */
export const ConfigRequest = z.strictObject({
  preset: z.enum(['full', 'quick', 'node', 'huge']),
  overrides: BenchConfig.partial().default({}),
})

export function resolveConfig(request: unknown): BenchConfig {
  const { preset, overrides } = ConfigRequest.parse(request)
  return BenchConfig.parse({ ...PRESETS[preset], ...overrides })
}
