/**
 * fast-check arbitraries for VALID session event logs: `session/created`, then turns the way the
 * engine writes them (turn/start → prompt → steps with streamed text, reasoning and tool calls →
 * turn/end), with steers between steps, synthetic messages, late and missing tool results,
 * aborted turns cut mid-stream and, optionally, a last turn left open.
 *
 * @example
 *   fc.assert(fc.property(arbSessionLog(), (log) => {
 *     const events = stamp(log, 's1')
 *     // …
 *   }), { seed: 42, numRuns: 500 })
 */
import fc from 'fast-check'
import type { Delivery, Json, MessageSource, Usage } from '../../src/schema/common'
import type { Finish, SessionEvent, StoredEvent, TurnEndReason } from '../../src/schema/events'

export interface ArbLogOptions {
  /** Fewest and most turns (default 0 and 5). */
  minTurns?: number
  maxTurns?: number
  /** Most steps per turn (default 3), assistant messages per step (2), stream chunks per message (6), tool calls per message (2). */
  maxSteps?: number
  maxMessages?: number
  maxChunks?: number
  maxTools?: number
  /** Let the log end inside its last turn, even mid-stream (default true). */
  openTail?: boolean
  /** Let turn numbers jump ahead (still strictly increasing; default true). */
  turnGaps?: boolean
  /** Text of one streamed chunk or one message (default: words, whitespace, newlines, emoji). */
  text?: fc.Arbitrary<string>
}

/** How ids are spelled: `tricky` uses names that break code treating records as plain maps. */
type IdStyle = 'plain' | 'numeric' | 'tricky'
const TRICKY_IDS = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf']

interface ToolPlan {
  name: string
  input: Json
  /** `undefined`: the call never answers (interrupted at turn end). */
  result: { output: Json; isError: boolean } | undefined
  /** Stream chunk index the call follows. */
  after: number
}
interface MessagePlan {
  chunks: { text?: string; reasoning?: string }[]
  tools: ToolPlan[]
  finish: Finish
  usage: Usage | undefined
}
interface StepPlan {
  steers: { text: string; source: MessageSource }[]
  messages: MessagePlan[]
  usage: Usage | undefined
  /** Tool results arrive after `step/end` instead of before it. */
  lateResults: boolean
}
interface TurnPlan {
  gap: number
  synthetic: string[]
  prompt: { text: string; delivery: Delivery } | undefined
  steps: StepPlan[]
  reason: TurnEndReason
  /** Cut the last message mid-stream (only when the turn does not complete). */
  cut: number | undefined
}
interface LogPlan {
  title: string
  idStyle: IdStyle
  turns: TurnPlan[]
  /** Keep this many events of the last turn (modulo its length, at least 1): the log ends mid-turn. */
  tail: number | undefined
}

const defaultText = fc
  .array(
    fc.oneof(
      { weight: 5, arbitrary: fc.lorem({ maxCount: 1 }).map((word) => `${word} `) },
      { weight: 2, arbitrary: fc.constantFrom(' ', '  ', '\n', '\n\n', '\t', ' \r\n ') },
      { weight: 1, arbitrary: fc.constantFrom('😀', 'é', '中文', '…') },
      { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map((words) => words.join(''))

const arbUsage: fc.Arbitrary<Usage> = fc.record({
  input: fc.nat({ max: 100_000 }),
  output: fc.nat({ max: 10_000 }),
})

const arbJson: fc.Arbitrary<Json> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), {
    maxKeys: 3,
  }),
)

function arbPlan(options: ArbLogOptions): fc.Arbitrary<LogPlan> {
  const text = options.text ?? defaultText
  const tool = fc.record({
    name: fc.constantFrom('read', 'grep', 'bash', 'edit'),
    input: arbJson,
    result: fc.option(fc.record({ output: arbJson, isError: fc.boolean() }), { freq: 4, nil: undefined }),
    after: fc.nat({ max: 8 }),
  })
  const chunk = fc.oneof(
    { weight: 6, arbitrary: fc.record({ text }) },
    { weight: 2, arbitrary: fc.record({ reasoning: text }) },
    { weight: 1, arbitrary: fc.record({ text, reasoning: text }) },
  )
  const message = fc.record({
    chunks: fc.array(chunk, { maxLength: options.maxChunks ?? 6 }),
    tools: fc.array(tool, { maxLength: options.maxTools ?? 2 }),
    finish: fc.constantFrom<Finish>('stop', 'stop', 'tool-calls', 'length', 'aborted', 'error'),
    usage: fc.option(arbUsage, { nil: undefined }),
  })
  const step = fc.record({
    steers: fc.array(
      fc.record({ text, source: fc.constantFrom<MessageSource>('user', 'user', 'synthetic') }),
      { maxLength: 2 },
    ),
    messages: fc.array(message, { minLength: 1, maxLength: options.maxMessages ?? 2 }),
    usage: fc.option(arbUsage, { freq: 6, nil: undefined }),
    lateResults: fc.boolean(),
  })
  const turn = fc.record({
    gap:
      options.turnGaps === false
        ? fc.constant(0)
        : fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, fc.nat(3)),
    synthetic: fc.array(text, { maxLength: 1 }),
    prompt: fc.option(fc.record({ text, delivery: fc.constantFrom<Delivery>('steer', 'queue') }), {
      freq: 8,
      nil: undefined,
    }),
    steps: fc.array(step, { minLength: 1, maxLength: options.maxSteps ?? 3 }),
    reason: fc.constantFrom<TurnEndReason>(
      'completed',
      'completed',
      'completed',
      'aborted',
      'error',
      'interrupted',
    ),
    cut: fc.option(fc.nat({ max: 8 }), { nil: undefined }),
  })
  return fc.record({
    title: fc.string({ maxLength: 20 }),
    idStyle: fc.constantFrom<IdStyle>('plain', 'plain', 'numeric', 'tricky'),
    turns: fc.array(turn, { minLength: options.minTurns ?? 0, maxLength: options.maxTurns ?? 5 }),
    tail:
      options.openTail === false
        ? fc.constant(undefined)
        : fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat() }),
  })
}

function idMaker(style: IdStyle): (kind: 'in' | 'msg' | 'call') => string {
  let next = 0
  const tricky = [...TRICKY_IDS]
  return (kind) => {
    next += 1
    if (style === 'numeric') return String(next)
    if (style === 'tricky' && tricky.length > 0 && next % 2 === 1) return tricky.shift()!
    return `${kind}-${next}`
  }
}

function buildMessage(
  out: SessionEvent[],
  newId: ReturnType<typeof idMaker>,
  turn: number,
  step: number,
  plan: MessagePlan,
  cut: number | undefined,
): { callId: string; result: NonNullable<ToolPlan['result']> }[] {
  const messageId = newId('msg')
  const body: SessionEvent[] = plan.chunks.map((chunk) => ({
    type: 'assistant/delta',
    data: { messageId, ...chunk },
  }))
  const answered: { callId: string; result: NonNullable<ToolPlan['result']> }[] = []
  // Insert tool calls at their positions, from the back so earlier indexes stay valid.
  const calls = plan.tools.map((tool) => ({ tool, callId: newId('call') }))
  for (const { tool, callId } of [...calls].reverse()) {
    const at = Math.min(tool.after, body.length)
    body.splice(at, 0, { type: 'tool/call', data: { messageId, callId, name: tool.name, input: tool.input } })
  }
  for (const { tool, callId } of calls) if (tool.result) answered.push({ callId, result: tool.result })
  out.push({ type: 'assistant/start', data: { messageId, turn, step } })
  if (cut !== undefined) {
    out.push(...body.slice(0, cut % (body.length + 1)))
    return []
  }
  out.push(...body)
  out.push({
    type: 'assistant/end',
    data: plan.usage
      ? { messageId, usage: plan.usage, finish: plan.finish }
      : { messageId, finish: plan.finish },
  })
  return answered
}

function buildTurn(
  out: SessionEvent[],
  newId: ReturnType<typeof idMaker>,
  turn: number,
  plan: TurnPlan,
): void {
  out.push({ type: 'turn/start', data: { turn } })
  for (const text of plan.synthetic)
    out.push({
      type: 'user/message',
      data: { inputId: newId('in'), text, delivery: 'steer', source: 'synthetic' },
    })
  if (plan.prompt)
    out.push({
      type: 'user/message',
      data: { inputId: newId('in'), text: plan.prompt.text, delivery: plan.prompt.delivery, source: 'user' },
    })
  const cutTurn = plan.reason !== 'completed' && plan.cut !== undefined
  for (const [s, stepPlan] of plan.steps.entries()) {
    const step = s + 1
    const lastStep = s === plan.steps.length - 1
    for (const steer of stepPlan.steers)
      out.push({
        type: 'user/message',
        data: { inputId: newId('in'), text: steer.text, delivery: 'steer', source: steer.source },
      })
    out.push({ type: 'step/start', data: { turn, step } })
    const results: { callId: string; result: NonNullable<ToolPlan['result']> }[] = []
    for (const [m, messagePlan] of stepPlan.messages.entries()) {
      const cutHere = cutTurn && lastStep && m === stepPlan.messages.length - 1
      results.push(...buildMessage(out, newId, turn, step, messagePlan, cutHere ? plan.cut : undefined))
    }
    if (cutTurn && lastStep) break // the stream stopped: no results, no step/end
    const resultEvents = results.map(
      ({ callId, result }): SessionEvent => ({ type: 'tool/result', data: { callId, ...result } }),
    )
    if (!stepPlan.lateResults) out.push(...resultEvents)
    out.push({
      type: 'step/end',
      data: stepPlan.usage ? { turn, step, usage: stepPlan.usage } : { turn, step },
    })
    if (stepPlan.lateResults) out.push(...resultEvents)
  }
  out.push({ type: 'turn/end', data: { turn, reason: plan.reason } })
}

function buildLog(plan: LogPlan): SessionEvent[] {
  const out: SessionEvent[] = [{ type: 'session/created', data: { title: plan.title } }]
  const newId = idMaker(plan.idStyle)
  let turn = 0
  for (const turnPlan of plan.turns) {
    turn += 1 + turnPlan.gap
    const start = out.length
    buildTurn(out, newId, turn, turnPlan)
    if (plan.tail !== undefined && turnPlan === plan.turns.at(-1)) {
      out.length = start + 1 + (plan.tail % (out.length - start))
    }
  }
  return out
}

/** A valid `SessionEvent[]`: `session/created` first, then whole turns (the last one possibly cut off). */
export function arbSessionLog(options: ArbLogOptions = {}): fc.Arbitrary<SessionEvent[]> {
  return arbPlan(options).map(buildLog)
}

/** The log as the engine stores it: dense seqs from `startSeq`, times 1 ms apart from `startAt`. */
export function stamp(
  events: readonly SessionEvent[],
  sessionId: string,
  startSeq = 1,
  startAt = 1_750_000_000_000,
): StoredEvent[] {
  return events.map(
    (event, i) => ({ ...event, sessionId, seq: startSeq + i, at: startAt + i }) as StoredEvent,
  )
}
