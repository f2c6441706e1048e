/**
 * context-growth: what `context()` costs in a long session after a compaction, against the same
 * read in a short one (docs/decisions/0033). Both sessions end with `historyTail` turns after a
 * compaction; the long one has `historyTurns` turns of history before it, the short one a single
 * turn. `context()` reads the rows after the path's last summary (and the summary), so it should
 * not grow with the history: the target is ≤ 1.5×. Each side is read once untimed (an engine
 * folds a session's tree the first time a verb or `context()` needs it), then timed warm.
 */
import type { Engine } from '../../../src/engine/types'
import type { BenchConfig } from './config'
import { type BenchEnv, freshEngine, openEngine } from './env'
import { seededTurns } from './fixtures'
import { type Comparison, compare, figure } from './stats'

const DB_NAME = 'bench-context-growth'

/** `before` turns, a compaction of all of them, then `tail` turns; in writes of `perWrite` turns. */
async function seedCompacted(
  engine: Engine,
  sessionId: string,
  before: number,
  tail: number,
  perWrite: number,
) {
  await engine.createSession({ id: sessionId, title: sessionId })
  const write = async (first: number, last: number) => {
    for (let from = first; from <= last; from += perWrite)
      await engine.append(sessionId, seededTurns(from, Math.min(last, from + perWrite - 1), `${sessionId}-`))
  }
  await write(1, before)
  await engine.compact(sessionId, { summary: `the first ${before} turns` })
  await write(before + 1, before + tail)
}

export async function runHistory(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const engine = await freshEngine(env, DB_NAME)
  try {
    const long = 'context-long'
    const short = 'context-short'
    const t0 = performance.now()
    await seedCompacted(
      engine,
      long,
      cfg.historyTurns - cfg.historyTail,
      cfg.historyTail,
      cfg.seedTurnsPerWrite,
    )
    await seedCompacted(engine, short, 1, cfg.historyTail, cfg.seedTurnsPerWrite)
    env.log(`context-growth: seeded in ${Math.round(performance.now() - t0)} ms`)
    const [a, b] = await Promise.all([engine.context(long), engine.context(short)])
    if (a.rows.length !== b.rows.length || a.rows[0]?.role !== 'summary')
      throw new Error(`context-growth: contexts differ (${a.rows.length} vs ${b.rows.length} rows)`)
    const times = { long: [] as number[], short: [] as number[] }
    for (let rep = 0; rep < cfg.historyReps; rep++) {
      // Sides alternate which goes first, so neither always meets a warmer database.
      const order = rep % 2 === 0 ? [long, short] : [short, long]
      for (const id of order) {
        const started = performance.now()
        await engine.context(id)
        ;(id === long ? times.long : times.short).push(performance.now() - started)
      }
    }
    return [
      compare(
        {
          id: 'context-growth',
          name: `context() after a compaction: ${cfg.historyTurns.toLocaleString('en')} turns vs ${(cfg.historyTail + 1).toLocaleString('en')}`,
          op: `context() of a summary and ${cfg.historyTail.toLocaleString('en')} turns`,
          target: 1.5,
          note: 'reference: the same read in a session whose history before the compaction is one turn',
        },
        figure(times.long, 1),
        figure(times.short, 1),
      ),
    ]
  } finally {
    await engine.close()
  }
}

/**
 * switch-branch: `switchBranch` in a session of `branchTurns` turns with `branchCount` branches,
 * each an edited prompt (`resend`) and its answer, forking every `BRANCH_SPACING` turns in the
 * newest part of the history (as a branch picker on recent messages makes them), against a cold
 * open of the tail in a new engine. A switch rewrites the rows whose visibility changes, so it
 * costs in proportion to the rows between the two branches' fork points, not to the session.
 */
const BRANCH_SPACING = 10

export async function runSwitchBranch(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const dbName = `${DB_NAME}-branches`
  const sessionId = 'branched'
  const engine = await freshEngine(env, dbName)
  let closed = false
  const branchAnswers: string[] = []
  try {
    await engine.createSession({ id: sessionId, title: sessionId })
    const turns = cfg.branchTurns
    for (let from = 1; from <= turns; from += cfg.seedTurnsPerWrite)
      await engine.append(sessionId, seededTurns(from, Math.min(turns, from + cfg.seedTurnsPerWrite - 1)))
    for (let b = 1; b <= cfg.branchCount; b++) {
      const forkTurn = turns - b * BRANCH_SPACING
      await engine.resend(sessionId, `in-${forkTurn}`, { id: `branch-${b}`, text: `edited prompt ${b}` })
      // A resend opens the session's next turn number, whatever branch it is on.
      const turn = turns + b
      const messageId = `branch-${b}-answer`
      await engine.append(sessionId, [
        { type: 'step/start', data: { turn, step: 1 } },
        { type: 'assistant/start', data: { messageId, turn, step: 1 } },
        { type: 'assistant/delta', data: { messageId, text: `answer on branch ${b}` } },
        { type: 'assistant/end', data: { messageId, finish: 'stop' } },
        { type: 'step/end', data: { turn, step: 1 } },
        { type: 'turn/end', data: { turn, reason: 'completed' } },
      ])
      branchAnswers.push(messageId)
    }
    const targets = [`msg-${turns}-a`, ...branchAnswers]
    // Warm: the engine has folded the tree once.
    await engine.switchBranch(sessionId, targets[0]!)
    const switches: number[] = []
    const opens: number[] = []
    for (let rep = 0; rep < cfg.branchReps; rep++) {
      const target = targets[(rep * 7 + 1) % targets.length]!
      const started = performance.now()
      await engine.switchBranch(sessionId, target)
      switches.push(performance.now() - started)
    }
    await engine.close()
    closed = true
    for (let rep = 0; rep < cfg.branchReps; rep++) {
      const cold = openEngine(env, dbName)
      const started = performance.now()
      await Promise.all([cold.page(sessionId, { limit: cfg.tailLimit }), cold.outline(sessionId)])
      opens.push(performance.now() - started)
      await cold.close()
    }
    env.log(`switch-branch: ${turns} turns, ${cfg.branchCount} branches, ${cfg.branchReps} switches`)
    return [
      compare(
        {
          id: 'switch-branch',
          name: `switchBranch in ${turns.toLocaleString('en')} turns with ${cfg.branchCount} branches vs a cold open of the tail`,
          op: `a switch between branches forking up to ${cfg.branchCount * BRANCH_SPACING} turns back`,
          target: 2,
          note: `reference: page(${cfg.tailLimit}) and outline() in a new engine on the same session`,
        },
        figure(switches, 1),
        figure(opens, 1),
      ),
    ]
  } finally {
    if (!closed) await engine.close()
  }
}

/**
 * resend, regenerate: what the two verbs that open a turn cost against the ordinary way a turn
 * opens, `admit` + `promote`, in the same session of `branchTurns / 10` turns (each side closes
 * its turn untimed). A resend is an admit and a promotion in one transaction, plus the head move
 * and the rows it rewrites; a regenerate the head move and the turn alone.
 */
export async function runResend(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const sessionId = 'resend'
  const engine = await freshEngine(env, `${DB_NAME}-resend`)
  try {
    await engine.createSession({ id: sessionId, title: sessionId })
    const turns = Math.max(10, Math.floor(cfg.branchTurns / 10))
    for (let from = 1; from <= turns; from += cfg.seedTurnsPerWrite)
      await engine.append(sessionId, seededTurns(from, Math.min(turns, from + cfg.seedTurnsPerWrite - 1)))
    let lastTurn = turns
    const close = () =>
      engine.append(sessionId, [{ type: 'turn/end', data: { turn: lastTurn, reason: 'completed' } }])
    const times = { resend: [] as number[], regenerate: [] as number[], admit: [] as number[] }
    const sides = {
      // Each edits the newest prompt of the branch it left, so the head moves one step back each time.
      resend: async (rep: number) => {
        const { messages } = await engine.page(sessionId, { limit: 4 })
        const prompt = messages.findLast((r) => r.role === 'user')!
        const started = performance.now()
        await engine.resend(sessionId, prompt.id, { id: `resent-${rep}`, text: `edited ${rep}` })
        return performance.now() - started
      },
      regenerate: async () => {
        const { messages } = await engine.page(sessionId, { limit: 4 })
        const prompt = messages.findLast((r) => r.role === 'user')!
        const started = performance.now()
        await engine.regenerate(sessionId, prompt.id)
        return performance.now() - started
      },
      admit: async (rep: number) => {
        const started = performance.now()
        await engine.admit(sessionId, { id: `admitted-${rep}`, text: `prompt ${rep}`, delivery: 'queue' })
        await engine.promote(sessionId, 'settled')
        return performance.now() - started
      },
    }
    // Each figure is one call of ~3–5 ms: three times the branch repetitions (7 in the quick run
    // moved regenerate's ratio 23% between two runs), the order of the sides rotating each time.
    const reps = cfg.branchReps * 3
    const order = ['resend', 'regenerate', 'admit'] as const
    for (let rep = -1; rep < reps; rep++) {
      for (let k = 0; k < order.length; k++) {
        const side = order[(k + rep + order.length) % order.length]!
        const elapsed = await sides[side](rep)
        lastTurn += 1
        await close()
        if (rep >= 0) times[side].push(elapsed)
      }
    }
    env.log(`resend, regenerate: ${reps} each in a session of ${turns} turns`)
    const op = (verb: string) => `${verb} (one transaction) vs admit + promote (two)`
    return [
      compare(
        { id: 'resend', name: 'resend vs admit + promote', op: op('resend'), target: 1.5 },
        figure(times.resend, 1),
        figure(times.admit, 1),
      ),
      compare(
        { id: 'regenerate', name: 'regenerate vs admit + promote', op: op('regenerate'), target: 1.5 },
        figure(times.regenerate, 1),
        figure(times.admit, 1),
      ),
    ]
  } finally {
    await engine.close()
  }
}
