/**
 * (10) The chat workload every peer runs, and the shape each side implements. One session: in
 * each round a user sends a few prompts, then the assistant streams one long reply. The same
 * seed gives every side the same ids, texts and order, and the run checks at the end that every
 * side holds exactly this history.
 */
import type { BenchConfig } from './config'
import { promptText, prose } from './fixtures'

/** The databases of the peers run, one per side. */
export const PEER_DB = {
  sessionline: 'bench-peers-sessionline',
  liveQuery: 'bench-peers-livequery',
  rxdb: 'bench-peers-rxdb',
} as const

/** A prompt as the user typed it, with the id the app gives it (the input id in sessionline). */
export interface ChatPrompt {
  id: string
  text: string
}

/** One assistant reply: its row id and the deltas a model streams for it, in order. */
export interface ChatReply {
  id: string
  deltas: readonly string[]
  /** The deltas joined: what the row holds at the end. */
  text: string
}

export interface ChatRound {
  prompts: readonly ChatPrompt[]
  reply: ChatReply
}

/** A row of history as every side reads it back: who wrote it and its text. */
export interface HistoryRow {
  id: string
  role: 'user' | 'assistant'
  text: string
}

/**
 * `peerPrompts` prompts and `peerReplies` replies of `peerDeltas` deltas, as rounds of
 * `peerPrompts / peerReplies` prompts then one reply. Deltas are 4–12 characters (a token or
 * two, what a model's stream hands the app at a time).
 */
export function chatRounds(
  sessionId: string,
  cfg: Pick<BenchConfig, 'peerPrompts' | 'peerReplies' | 'peerDeltas'>,
) {
  const perRound = Math.floor(cfg.peerPrompts / cfg.peerReplies)
  if (perRound < 1 || perRound * cfg.peerReplies !== cfg.peerPrompts)
    throw new Error('peerPrompts must be a multiple of peerReplies')
  const rounds: ChatRound[] = []
  for (let r = 0; r < cfg.peerReplies; r++) {
    const prompts = Array.from({ length: perRound }, (_, k) => {
      const n = r * perRound + k + 1
      return { id: `${sessionId}-in${n}`, text: promptText(n) }
    })
    const deltas = Array.from({ length: cfg.peerDeltas }, (_, i) => prose(r * 100_000 + i, 4 + (i % 9)))
    rounds.push({ prompts, reply: { id: `${sessionId}-a${r + 1}`, deltas, text: deltas.join('') } })
  }
  return rounds
}

/** The history the rounds leave: every round's prompts, then its reply. */
export function expectedHistory(rounds: readonly ChatRound[]): HistoryRow[] {
  return rounds.flatMap((round) => [
    ...round.prompts.map((p) => ({ id: p.id, role: 'user' as const, text: p.text })),
    { id: round.reply.id, role: 'assistant' as const, text: round.reply.text },
  ])
}

/**
 * One store as an app builds a chat on it: its writes, an observer of the session's messages
 * (what the UI renders from), and its reads. Every method returns the milliseconds of its timed
 * part; a write counts as done once the observer has delivered it, since that is when the UI
 * can show the durable state.
 */
export interface ChatSide {
  readonly name: string
  /** Opens the store and the session's observer (untimed). */
  start(): Promise<void>
  /** Writes each prompt, each awaited before the next, until the observer shows them all. */
  admit(prompts: readonly ChatPrompt[]): Promise<number>
  /** Streams the reply one awaited write per delta, until the observer shows all its text. */
  stream(reply: ChatReply, prompts: readonly ChatPrompt[]): Promise<number>
  /** Closes the session's observer (untimed): the user leaves the chat. */
  leave(): Promise<void>
  /** A fresh observer on the open store, until it delivers the whole history. */
  page(rep: number, rows: number): Promise<number>
  /** Closes the store (untimed), then opens it anew until the first screen is delivered. */
  coldOpen(rep: number, rows: number): Promise<number>
  /** The whole history, read back for the check (untimed). */
  history(): Promise<HistoryRow[]>
  /** Closes everything (untimed). */
  close(): Promise<void>
}

/**
 * The latest value an observer delivered, and waiting until it satisfies a condition (checked
 * on every delivery, so a wait never misses one).
 */
export class Latest<T> {
  value: T | undefined
  private waiters: { test: (value: T) => boolean; resolve: (value: T) => void }[] = []
  private failure: unknown

  push = (value: T): void => {
    this.value = value
    this.waiters = this.waiters.filter((w) => {
      if (!w.test(value)) return true
      w.resolve(value)
      return false
    })
  }

  fail = (error: unknown): void => {
    this.failure = error
  }

  until(test: (value: T) => boolean, what: string, ms = 120_000): Promise<T> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    if (this.value !== undefined && test(this.value)) return Promise.resolve(this.value)
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`observer never showed ${what}`)), ms)
      this.waiters.push({
        test,
        resolve: (value) => {
          clearTimeout(timer)
          resolve(value)
        },
      })
    })
  }
}

/** Throws unless `actual` is exactly `expected`: every side must end with the same history. */
export function checkHistory(side: string, actual: readonly HistoryRow[], expected: readonly HistoryRow[]) {
  const at = expected.findIndex(
    (row, i) => actual[i]?.id !== row.id || actual[i]?.role !== row.role || actual[i]?.text !== row.text,
  )
  if (at >= 0 || actual.length !== expected.length)
    throw new Error(
      `${side} holds a different history: ${actual.length} rows for ${expected.length}` +
        (at >= 0 ? `, first difference at row ${at} (${expected[at]?.id})` : ''),
    )
}

/**
 * Times a fresh observer of `rows` rows: `observe` subscribes one into `into` (over a range no
 * earlier read used, so no peer's result cache serves it) and returns its unsubscribe.
 */
export async function timeFreshRead<T extends readonly unknown[]>(
  observe: (into: Latest<T>) => () => void,
  rows: number,
): Promise<number> {
  const fresh = new Latest<T>()
  const t0 = performance.now()
  const unsubscribe = observe(fresh)
  await fresh.until((r) => r.length === rows, `${rows} rows`)
  const ms = performance.now() - t0
  unsubscribe()
  return ms
}
