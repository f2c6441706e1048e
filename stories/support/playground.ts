import { replacedBy, siblingOf } from '../../demo/history/tree'
import { h } from '../../demo/ui/dom'
import { QueueTray } from '../../demo/ui/queue-tray'
import { Rail } from '../../demo/ui/rail'
import { Transcript } from '../../demo/ui/transcript'
import type { RailItem, SessionEvent, SessionView } from '../../src/index'
import { frameScheduler } from './frame'
import type { StorySession } from './story-session'

export interface PartsOptions {
  rail?: boolean
  tray?: boolean
  /** The history controls (edit, regenerate, rewind, branch picker, tray order), as the playground wires them. */
  history?: boolean
  /** Runs once the parts are on screen: what the story does to the session (admit, queue, …). */
  start?: (view: SessionView) => void
}

/**
 * The playground's transcript (and, when asked, its turn rail and queue tray) over one open
 * session view, wired as demo/main.ts wires them: state changes schedule one render per frame.
 * Returns what unmounts them.
 */
export function mountParts(host: HTMLElement, session: StorySession, options: PartsOptions = {}): () => void {
  const { client, sessionId } = session
  const view = client.open(sessionId)
  const body = h('div', { class: 'chat__body' })
  const transcriptHost = h('div', { class: 'chat__transcript' })
  body.append(transcriptHost)
  const railHost = h('nav', { class: 'rail', attrs: { 'aria-label': 'Turn rail' } })
  if (options.rail) body.append(railHost)
  const trayHost = h('section', { class: 'tray', attrs: { 'aria-label': 'Queued inputs' } })
  host.append(body)
  if (options.tray) host.append(trayHost)

  let jumpingTurn: number | undefined
  const report = (error: unknown) => console.warn('story action failed:', error)
  const transcript = new Transcript(transcriptHost, {
    loadOlder: () => void view.loadOlder().catch(report),
    onScroll: () => frame.schedule(),
    retry: (input) => void view.admit(input.text, { id: input.id, delivery: input.delivery }).catch(report),
    loadGap: (key, end) => void view.loadGap(key, end).catch(report),
    turnsIn: (fromSeq, toSeq) =>
      view.getSnapshot().outline.filter((entry) => entry.seq >= fromSeq && entry.seq <= toSeq).length,

    respond: (callId, answer) => void view.respondToApproval(callId, answer).catch(report),
    ...(options.history && {
      queueInstead: (inputId: string) => void client.setDelivery(sessionId, inputId, 'queue').catch(report),
      history: {
        editable: () => true,
        resend: (messageId, text) => void client.resend(sessionId, messageId, { text }).catch(report),
        regenerate: (messageId) => void client.regenerate(sessionId, messageId).catch(report),
        rewind: (messageId) => void client.rewind(sessionId, messageId).catch(report),
        switchBranch: (messageId, step) =>
          void siblingOf(client, sessionId, messageId, step)
            .then((sibling) => (sibling ? client.switchBranch(sessionId, sibling) : undefined))
            .catch(report),
        replaced: (summary) => replacedBy(client, sessionId, summary.id),
      },
    }),
  })
  const rail = new Rail(railHost, {
    activate: (item) => void jump(item).catch(report),
    loadBefore: (position) => void view.loadOutline(position).catch(report),
  })
  const tray = new QueueTray(trayHost, {
    cancel: (id) => void view.cancel(id).catch(report),
    edit: (id, text) => void view.edit(id, text).catch(report),
    ...(options.history && {
      // The view shows a move and a change of delivery at once, in the engine's order.
      reorder: (id: string, before: string | null) => void view.reorder(id, { before }).catch(report),
      steer: (id: string) => void view.setDelivery(id, 'steer').catch(report),
    }),
  })

  function render(): void {
    const snapshot = view.getSnapshot()
    if (jumpingTurn === undefined) transcript.render(snapshot.rows)
    transcript.setWindow(snapshot)
    if (options.tray) tray.render(snapshot.queued)
    if (options.rail)
      rail.update({
        items: snapshot.rail,
        before: snapshot.outlineBefore,
        current: transcript.readingTurn(),
        busy: jumpingTurn,
      })
  }
  const frame = frameScheduler(render)

  // A rail jump, as the playground does it: load an unloaded turn's neighbourhood, then land it at the top.
  async function jump(item: RailItem): Promise<void> {
    transcript.release()
    if (item.kind === 'loaded') {
      transcript.land(item.key)
      frame.schedule()
      return
    }
    jumpingTurn = item.turn
    render()
    try {
      await view.jumpTo(item.seq)
    } finally {
      jumpingTurn = undefined
    }
    render()
    const landed = view.getSnapshot().rail.find((entry) => entry.turn === item.turn)
    if (landed?.kind === 'loaded') transcript.land(landed.key)
    frame.schedule()
  }

  const unsubscribe = view.subscribe(frame.schedule)
  render()
  options.start?.(view)
  return () => {
    frame.cancel()
    unsubscribe()
    view.dispose()
  }
}

/** One finished turn whose answer is `answer` (markdown), as events for `client.append`. */
export function answeredTurn(turn: number, prompt: string, answer: string): SessionEvent[] {
  const messageId = `story-t${turn}-a1`
  const usage = { input: 40 + turn, output: 30 }
  return [
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: { inputId: `story-t${turn}-u`, text: prompt, delivery: 'steer', source: 'user' },
    },
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId, text: answer } },
    { type: 'assistant/end', data: { messageId, finish: 'stop', usage } },
    { type: 'step/end', data: { turn, step: 1, usage } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}
