import type { SessionEvent } from '../src/index'

/**
 * Writes believable long sessions for trying the turn rail: every turn has a prompt, some call
 * a tool, answers run over several lines. Deterministic for a given session id and turn count.
 */
export interface SeedOptions {
  turns: number
  /** Events per `append` call: large batches, because one IndexedDB transaction has a fixed cost. */
  batchSize?: number
  onProgress?: (turnsWritten: number) => void
}

export type AppendEvents = (events: readonly SessionEvent[]) => Promise<unknown>

const TOPICS = [
  'the retry policy for flaky uploads',
  'a cache key for paged transcript reads',
  'why the worker answers late on a cold start',
  'naming the inbox states',
  'a migration that adds an index',
  'the flaky test around reconnects',
  'trimming long tool outputs',
  'the keyboard path through the rail',
  'what to log when a provider stalls',
  'an offline banner that does not nag',
]
const TOOLS = ['read_file', 'search_docs', 'run_tests', 'list_dir'] as const

/** The turn whose prompt holds the session's marker word. */
export const MARKER_TURN = 3

/**
 * A word that occurs in one row of the seeded session `sessionId` only (turn 3's prompt) and in
 * no other seeded session: a search for it has exactly one hit, deterministically.
 */
export function markerWord(sessionId: string): string {
  let hash = 2166136261
  for (const char of sessionId) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0
  return `quokka${hash.toString(36)}`
}

/** One completed turn as events, with ids unique across sessions (rows are keyed by id). */
export function seedTurn(sessionId: string, turn: number): SessionEvent[] {
  const topic = TOPICS[turn % TOPICS.length]!
  const prefix = `${sessionId}-t${turn}`
  const marker = turn === MARKER_TURN ? ` Keep the ${markerWord(sessionId)} notes in mind.` : ''
  const events: SessionEvent[] = [
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: {
        inputId: `${prefix}-u`,
        text: `Turn ${turn}: can you look into ${topic}?${marker}`,
        delivery: 'steer',
        source: 'user',
      },
    },
  ]
  let step = 1
  if (turn % 3 === 0) {
    const tool = TOOLS[turn % TOOLS.length]!
    const messageId = `${prefix}-a0`
    const callId = `${prefix}-c`
    events.push(
      { type: 'step/start', data: { turn, step } },
      { type: 'assistant/start', data: { messageId, turn, step } },
      { type: 'assistant/delta', data: { messageId, text: `Let me check ${topic} first.` } },
      { type: 'tool/call', data: { messageId, callId, name: tool, input: { query: topic, turn } } },
      { type: 'tool/result', data: { callId, output: { ok: true, lines: (turn % 7) + 3 }, isError: false } },
      {
        type: 'assistant/end',
        data: { messageId, finish: 'tool-calls', usage: { input: 120 + turn, output: 18 } },
      },
      { type: 'step/end', data: { turn, step, usage: { input: 120 + turn, output: 18 } } },
    )
    step += 1
  }
  const messageId = `${prefix}-a${step}`
  const answer = [
    `Here is what I found about ${topic}.`,
    `- The current behaviour is consistent with turn ${turn - 1 > 0 ? turn - 1 : 1}.`,
    `- One change would make it clearer; the rest can stay as it is.`,
    turn % 2 === 0
      ? 'I would start with a small test that pins the behaviour down.'
      : 'Nothing else needs to move.',
  ].join('\n')
  events.push(
    { type: 'step/start', data: { turn, step } },
    { type: 'assistant/start', data: { messageId, turn, step } },
    { type: 'assistant/delta', data: { messageId, text: answer } },
    { type: 'assistant/end', data: { messageId, finish: 'stop', usage: { input: 240 + turn, output: 64 } } },
    { type: 'step/end', data: { turn, step, usage: { input: 240 + turn, output: 64 } } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  )
  return events
}

/** Appends `turns` turns to an empty session in batches of about `batchSize` events. */
export async function seedSession(
  sessionId: string,
  append: AppendEvents,
  options: SeedOptions,
): Promise<void> {
  const batchSize = options.batchSize ?? 4000
  let batch: SessionEvent[] = []
  for (let turn = 1; turn <= options.turns; turn++) {
    batch.push(...seedTurn(sessionId, turn))
    if (batch.length >= batchSize || turn === options.turns) {
      await append(batch)
      batch = []
      options.onProgress?.(turn)
    }
  }
}
