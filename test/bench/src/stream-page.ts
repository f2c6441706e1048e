/**
 * (10) `stream-page`: how long a streamed delta takes to reach the page's snapshot while a view
 * holds a window of `streamPageRows` rows, and how often that snapshot changes. Two views of the
 * same session watch the same answer, one with every row loaded and one with the 50-row tail
 * (the baseline: what the delta costs when the window is small), so the ratio says whether the
 * page's work per delta grows with the window. The deltas are sent back to back, as fast as the
 * engine commits them, and each is timed from its `append` call to the first snapshot that
 * shows its text; `stream-page-updates` is the most snapshots either view published within any
 * 16 ms, against the most deltas committed within 16 ms.
 */
import type { SessionlineClient, SessionView, TimelineSnapshot } from '../../../src/client/types'
import type { BenchConfig } from './config'
import { promptText, prose, seededTurns } from './fixtures'
import { type Comparison, compare, type Figure } from './stats'

export const STREAM_PAGE_SESSION = 'stream-page'
const ANSWER = 'stream-page-answer'

export const p95 = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] ?? 0
}

export const single = (value: number, reps: number): Figure => {
  const v = Math.round(value * 1000) / 1000
  return { reps, opsPerRep: 1, median: v, perOp: v, min: v, max: v, all: [v] }
}

/** The most timestamps of `times` (ascending) within any window of `ms`. */
function densest(times: readonly number[], ms: number): number {
  let most = 0
  let lo = 0
  for (let hi = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= ms) lo++
    most = Math.max(most, hi - lo + 1)
  }
  return most
}

export function until(view: SessionView, ok: (snap: TimelineSnapshot) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!ok(view.getSnapshot())) return
      stop()
      resolve()
    }
    const stop = view.subscribe(check)
    check()
  })
}

/** Text length of the answer row in `snap` (-1: not there); it is at the tail. */
function answerLength(snap: TimelineSnapshot): number {
  for (let i = snap.rows.length - 1; i >= 0; i--) {
    const row = snap.rows[i]!
    if (row.kind !== 'message' || row.message.id !== ANSWER) continue
    let n = 0
    for (const part of row.message.parts) if (part.type === 'text') n += part.text.length
    return n
  }
  return -1
}

/** Times every delta from its send to the first snapshot of `view` that shows it. */
function tracker(view: SessionView, sent: readonly number[], lengths: readonly number[]) {
  const latencies: number[] = []
  const updates: number[] = []
  let seen = 0
  const stop = view.subscribe(() => {
    const now = performance.now()
    updates.push(now)
    const length = answerLength(view.getSnapshot())
    while (seen < sent.length && lengths[seen]! <= length) latencies.push(now - sent[seen++]!)
  })
  return { latencies, updates, done: () => seen === lengths.length, stop }
}

/** Creates session `id` with about `streamPageRows` rows of seeded turns; returns their count. */
export async function seedWindow(client: SessionlineClient, id: string, cfg: BenchConfig): Promise<number> {
  await client.createSession({ id })
  // 2.25 rows a seeded turn on average.
  const turns = Math.ceil(cfg.streamPageRows / 2.25)
  for (let from = 1; from <= turns; from += cfg.seedTurnsPerWrite)
    await client.append(id, seededTurns(from, Math.min(turns, from + cfg.seedTurnsPerWrite - 1)))
  return turns
}

export async function runStreamPage(
  client: SessionlineClient,
  cfg: BenchConfig,
  log: (message: string) => void,
): Promise<Comparison[]> {
  const id = STREAM_PAGE_SESSION
  const turns = await seedWindow(client, id, cfg)
  const big = client.open(id)
  const small = client.open(id)
  try {
    await until(big, (s) => s.status !== 'loading')
    await until(small, (s) => s.status !== 'loading')
    await big.loadThrough(1)
    const loaded = big.getSnapshot().rows.length
    if (loaded < cfg.streamPageRows) throw new Error(`stream-page: ${loaded} rows loaded`)
    log(`(10) ${loaded} rows in the window; streaming ${cfg.streamKb} deltas`)
    const turn = turns + 1
    await client.admit(id, { id: 'stream-page-in', text: promptText(turn), delivery: 'steer' })
    await client.promote(id, 'settled')
    await client.append(id, [
      { type: 'step/start', data: { turn, step: 1 } },
      { type: 'assistant/start', data: { messageId: ANSWER, turn, step: 1 } },
    ])
    await until(big, (s) => answerLength(s) >= 0)
    await until(small, (s) => answerLength(s) >= 0)
    const sent: number[] = []
    const lengths: number[] = []
    const committed: number[] = []
    const views = [tracker(big, sent, lengths), tracker(small, sent, lengths)] as const
    let length = 0
    for (let i = 0; i < cfg.streamKb; i++) {
      const text = prose(i, 1024)
      length += text.length
      sent.push(performance.now())
      lengths.push(length)
      await client.append(id, [{ type: 'assistant/delta', data: { messageId: ANSWER, text } }])
      committed.push(performance.now())
    }
    await Promise.all([big, small].map((view) => until(view, (s) => answerLength(s) >= length)))
    for (const view of views) view.stop()
    await client.append(id, [
      { type: 'assistant/end', data: { messageId: ANSWER, finish: 'stop' } },
      { type: 'step/end', data: { turn, step: 1 } },
      { type: 'turn/end', data: { turn, reason: 'completed' } },
    ])
    const [bigView, smallView] = views
    const most = Math.max(densest(bigView.updates, 16), densest(smallView.updates, 16))
    const rows = loaded.toLocaleString('en-US')
    return [
      compare(
        {
          id: 'stream-page',
          name: `delta → page snapshot p95, ${rows}-row window open (${cfg.streamKb} 1 KB deltas)`,
          op: 'delta (p95)',
          note: `target p95 ≤ 50 ms; baseline: the same deltas in a view of the 50-row tail; snapshots: ${bigView.updates.length} for ${cfg.streamKb} deltas`,
        },
        single(p95(bigView.latencies), bigView.latencies.length),
        single(p95(smallView.latencies), smallView.latencies.length),
      ),
      compare(
        {
          id: 'stream-page-updates',
          name: 'most snapshots a view published within 16 ms while the deltas streamed',
          op: 'snapshots per 16 ms',
          unit: 'snapshots',
          note: 'target ≤ 1; baseline: the most deltas committed within 16 ms',
        },
        single(most, 1),
        single(densest(committed, 16), 1),
      ),
    ]
  } finally {
    big.dispose()
    small.dispose()
  }
}
