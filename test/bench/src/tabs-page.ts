/**
 * One tab of the two-tab bench (run.mjs drives several): connects to the engine in a dedicated
 * or a shared worker, opens a view of one session and records when its snapshot reaches each head.
 * Times are `performance.timeOrigin + performance.now()`, comparable across the tabs of one browser.
 */
import { connect } from '../../../src/client/connect'
import type { SessionlineClient, SessionView } from '../../../src/client/types'
import { sharedOrDedicated } from '../../../src/client/worker-choice'
import type { SessionEvent } from '../../../src/schema/events'

type Mode = 'dedicated' | 'shared'

const now = () => performance.timeOrigin + performance.now()

let client: SessionlineClient | undefined
let view: SessionView | undefined
let sessionId = ''
/** When the view first showed each head it reached. */
const reached: { headSeq: number; at: number }[] = []

function turnEvents(turn: number): SessionEvent[] {
  const messageId = `a-${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: { inputId: `u-${turn}`, text: `question ${turn}`, delivery: 'steer', source: 'user' },
    },
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: `answer ${turn} `.repeat(20) } },
    { type: 'assistant/end', data: { messageId, finish: 'stop' } },
    { type: 'step/end', data: { turn, step: 1 } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

function need<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('call open first')
  return value
}

const api = {
  /**
   * Connects and opens the session's view; answers how long until the view was ready (ms). With
   * `seedTurns`, first creates the session with that many finished turns (the time then means nothing).
   */
  async open({
    mode,
    dbName,
    id,
    seedTurns,
  }: {
    mode: Mode
    dbName: string
    id: string
    seedTurns?: number
  }) {
    sessionId = id
    const began = now()
    client = connect(
      sharedOrDedicated({
        name: dbName,
        prefer: mode,
        shared: (name) =>
          new SharedWorker(new URL('./tabs.worker.ts', import.meta.url), { type: 'module', name }),
        dedicated: () =>
          new Worker(new URL('./tabs.worker.ts', import.meta.url), { type: 'module', name: dbName }),
      }),
    )
    if (seedTurns) await api.seed({ id, turns: seedTurns })
    const opened = client.open(id)
    view = opened
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        const s = opened.getSnapshot()
        if (s.status === 'ready') resolve()
        else if (s.status === 'error') reject(new Error(s.error?.message ?? 'view failed'))
      }
      opened.subscribe(check)
      check()
    })
    const openMs = now() - began
    opened.subscribe(() => {
      const { headSeq } = opened.getSnapshot()
      if (headSeq > (reached.at(-1)?.headSeq ?? 0)) reached.push({ headSeq, at: now() })
    })
    return { openMs, rows: opened.getSnapshot().rows.length }
  },
  /** Creates the session with `turns` finished turns, 250 turns a commit. */
  async seed({ id, turns }: { id: string; turns: number }) {
    const c = need(client)
    if (!(await c.getSession(id))) await c.createSession({ id })
    for (let first = 1; first <= turns; first += 250) {
      const events = Array.from({ length: Math.min(250, turns - first + 1) }, (_, i) => turnEvents(first + i))
      await c.append(id, events.flat())
    }
    return true
  },
  /** Commits turn `turn`; answers its head, when the commit was sent and when its answer came. */
  async commit({ turn }: { turn: number }) {
    const sentAt = now()
    const { headSeq } = await need(client).append(sessionId, turnEvents(turn))
    return { headSeq, sentAt, answeredAt: now() }
  },
  /** When the view first showed `headSeq` (waiting up to `ms` for it). */
  async seen({ headSeq, ms }: { headSeq: number; ms: number }) {
    const deadline = Date.now() + ms
    for (;;) {
      const hit = reached.find((r) => r.headSeq >= headSeq)
      if (hit) return hit.at
      if (Date.now() > deadline) throw new Error(`the view never reached seq ${headSeq}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  },
  async close() {
    need(view).dispose()
    await need(client).close()
    return true
  },
}

;(window as unknown as { benchTab: typeof api }).benchTab = api
