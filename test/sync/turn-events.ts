import type { SessionEvent } from '../../src/schema/events'

/** One answered turn's events, as the plan tests cut and fold them (input `u<turn>`, answer `a<turn>`). */
export const turnEvents = (turn: number): SessionEvent[] => [
  { type: 'turn/start', data: { turn } },
  {
    type: 'user/message',
    data: { inputId: `u${turn}`, text: `t${turn}`, delivery: 'queue', source: 'user' },
  },
  { type: 'step/start', data: { turn, step: 1 } },
  { type: 'assistant/start', data: { messageId: `a${turn}`, turn, step: 1 } },
  { type: 'assistant/end', data: { messageId: `a${turn}`, finish: 'stop' } },
  { type: 'step/end', data: { turn, step: 1 } },
  { type: 'turn/end', data: { turn, reason: 'completed' } },
]
