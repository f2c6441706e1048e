/**
 * Deterministic workloads: the same seed gives the same texts, ids and events on every side
 * and every run. Raw Dexie gets its transcript rows from sessionline's own pure fold, so both
 * sides store rows of the same shape and size.
 */
import {
  applyTranscript,
  checkEvent,
  initTranscript,
  type TranscriptState,
} from '../../../src/core/transcript'
import type { SessionEvent, StoredEvent } from '../../../src/schema/events'
import type { SessionMessage } from '../../../src/schema/messages'

/** mulberry32: a tiny seeded generator, so texts are not trivially compressible yet repeatable. */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = (
  'the a session worker index row page turn input steer queue tool call result stream text ' +
  'model answer prompt outline window seq log event store read write cache fold view delta ' +
  'reply file line test build error value key range cursor commit schema version offline'
).split(' ')

/** About `chars` characters of word salad, the same for the same seed. */
export function prose(seed: number, chars: number): string {
  const next = random(seed)
  let out = ''
  while (out.length < chars) out += `${WORDS[Math.floor(next() * WORDS.length)]} `
  return out.slice(0, chars)
}

/** A user prompt of about 90 characters. */
export const promptText = (seed: number) => `${prose(seed, 88)}?`

/**
 * The body of a streamed turn after its opening (`turn/start` and `user/message` come from a
 * promotion): a step that calls a tool, then a step that streams its answer in `deltas`
 * coalesced `assistant/delta` batches of about 60 characters, then `turn/end`. Exactly
 * `total` events.
 */
export function streamedTurnBody(turn: number, total: number, idPrefix: string): SessionEvent[] {
  const first = `${idPrefix}-t${turn}-m1`
  const second = `${idPrefix}-t${turn}-m2`
  const callId = `${idPrefix}-t${turn}-c1`
  const head: SessionEvent[] = [
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId: first, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId: first, reasoning: prose(turn * 7 + 1, 120) } },
    {
      type: 'tool/call',
      data: { messageId: first, callId, name: 'read_file', input: { path: 'src/index.ts' } },
    },
    {
      type: 'assistant/end',
      data: { messageId: first, finish: 'tool-calls', usage: { input: 1200, output: 40 } },
    },
    { type: 'tool/result', data: { callId, output: { text: prose(turn * 7 + 2, 400) }, isError: false } },
    { type: 'step/end', data: { turn, step: 1, usage: { input: 1200, output: 40 } } },
    { type: 'step/start', data: { turn, step: 2 } },
    { type: 'assistant/start', data: { messageId: second, turn, step: 2 } },
  ]
  const tail: SessionEvent[] = [
    {
      type: 'assistant/end',
      data: { messageId: second, finish: 'stop', usage: { input: 1700, output: 900 } },
    },
    { type: 'step/end', data: { turn, step: 2, usage: { input: 1700, output: 900 } } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
  const deltas = total - head.length - tail.length
  if (deltas < 1) throw new Error(`a streamed turn needs more than ${head.length + tail.length} events`)
  const body: SessionEvent[] = []
  for (let i = 0; i < deltas; i++) {
    body.push({ type: 'assistant/delta', data: { messageId: second, text: prose(turn * 1000 + i, 60) } })
  }
  return [...head, ...body, ...tail]
}

/**
 * One whole turn of the long seeded session, opening included: a prompt, a multi-line answer
 * of about 400 characters, and every fourth turn a tool call first. 8 events and 2 rows, or
 * 14 events and 3 rows with the tool. Ids start with `idPrefix`: ids are unique across sessions,
 * so a second session of the same turns needs a prefix of its own.
 */
export function seededTurn(turn: number, idPrefix = ''): SessionEvent[] {
  const inputId = `${idPrefix}in-${turn}`
  const answer = `${idPrefix}msg-${turn}-a`
  const events: SessionEvent[] = [
    { type: 'turn/start', data: { turn } },
    { type: 'user/message', data: { inputId, text: promptText(turn), delivery: 'steer', source: 'user' } },
  ]
  let step = 1
  if (turn % 4 === 0) {
    const asked = `${idPrefix}msg-${turn}-t`
    const callId = `${idPrefix}call-${turn}`
    events.push(
      { type: 'step/start', data: { turn, step } },
      { type: 'assistant/start', data: { messageId: asked, turn, step } },
      {
        type: 'tool/call',
        data: { messageId: asked, callId, name: 'search', input: { query: prose(turn, 30) } },
      },
      {
        type: 'assistant/end',
        data: { messageId: asked, finish: 'tool-calls', usage: { input: 900, output: 30 } },
      },
      { type: 'tool/result', data: { callId, output: { hits: prose(turn + 1, 200) }, isError: false } },
      { type: 'step/end', data: { turn, step, usage: { input: 900, output: 30 } } },
    )
    step++
  }
  const text = [prose(turn * 3, 140), prose(turn * 3 + 1, 140), prose(turn * 3 + 2, 120)].join('\n')
  events.push(
    { type: 'step/start', data: { turn, step } },
    { type: 'assistant/start', data: { messageId: answer, turn, step } },
    { type: 'assistant/delta', data: { messageId: answer, text } },
    {
      type: 'assistant/end',
      data: { messageId: answer, finish: 'stop', usage: { input: 1500, output: 120 } },
    },
    { type: 'step/end', data: { turn, step, usage: { input: 1500, output: 120 } } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  )
  return events
}

/** Turns `from..to` (inclusive) of the seeded session as one event list. */
export function seededTurns(from: number, to: number, idPrefix = ''): SessionEvent[] {
  const out: SessionEvent[] = []
  for (let turn = from; turn <= to; turn++) out.push(...seededTurn(turn, idPrefix))
  return out
}

/**
 * Stamps events the way the engine does (dense seqs from `firstSeq`) and folds them with
 * sessionline's transcript fold, returning what raw Dexie will write: the events and, once per
 * id, the rows they created or changed as they stand after the last event.
 */
export class Stamper {
  private state: TranscriptState = initTranscript()
  constructor(
    readonly sessionId: string,
    private nextSeq: number,
  ) {}

  stamp(events: readonly SessionEvent[], at: number): { events: StoredEvent[]; rows: SessionMessage[] } {
    const stored: StoredEvent[] = []
    const rows = new Map<string, SessionMessage>()
    for (const event of events) {
      // The fold ignores an event that cannot follow; a workload must never rely on that.
      const reason = checkEvent(this.state, event)
      if (reason !== undefined) throw new Error(`workload bug: ${event.type} cannot follow: ${reason}`)
      const s = { ...event, sessionId: this.sessionId, seq: this.nextSeq++, at } as StoredEvent
      const step = applyTranscript(this.state, s)
      this.state = step.state
      for (const row of step.changed) rows.set(row.id, row)
      stored.push(s)
    }
    return { events: stored, rows: [...rows.values()] }
  }

  get headSeq(): number {
    return this.nextSeq - 1
  }
}

/** Splits `items` into runs of `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
