/**
 * Events of whole turns for tests that need transcript rows with chosen words in them.
 */

import type { Json } from '../../src/schema/common'
import type { SessionEvent } from '../../src/schema/events'

export interface TurnText {
  prompt: string
  answer?: string
  reasoning?: string
  tool?: { name: string; input: Json; output?: Json }
}

let counter = 0

/** One completed turn: a prompt, an optional tool call, an answer; ids unique per process. */
export function turnEvents(
  turn: number,
  text: TurnText,
): { events: SessionEvent[]; userId: string; answerId: string } {
  const id = `t${++counter}`
  const userId = `${id}-u`
  const answerId = `${id}-a`
  const events: SessionEvent[] = [
    { type: 'turn/start', data: { turn } },
    { type: 'user/message', data: { inputId: userId, text: text.prompt, delivery: 'steer', source: 'user' } },
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId: answerId, turn, step: 1 } },
  ]
  if (text.reasoning)
    events.push({ type: 'assistant/delta', data: { messageId: answerId, reasoning: text.reasoning } })
  if (text.answer) events.push({ type: 'assistant/delta', data: { messageId: answerId, text: text.answer } })
  if (text.tool) {
    const callId = `${id}-c`
    events.push({
      type: 'tool/call',
      data: { messageId: answerId, callId, name: text.tool.name, input: text.tool.input },
    })
    if (text.tool.output !== undefined)
      events.push({ type: 'tool/result', data: { callId, output: text.tool.output, isError: false } })
  }
  events.push(
    { type: 'assistant/end', data: { messageId: answerId, finish: 'stop' } },
    { type: 'step/end', data: { turn, step: 1 } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  )
  return { events, userId, answerId }
}
