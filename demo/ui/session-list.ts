import type { SessionInfo } from '../../src/index'
import { h, setAttrs } from './dom'

export interface SessionListOptions {
  select(id: string): void
  remove(session: SessionInfo): void
  /** Downloads the session as a `sessionline` file (importing it restores it whole). */
  exportSession(session: SessionInfo): void
}

/** The sidebar's list of sessions, newest first; the open one is `aria-current="page"`. */
export class SessionList {
  private readonly list = h('ul', { class: 'sessions' })

  constructor(
    host: HTMLElement,
    private readonly options: SessionListOptions,
  ) {
    host.append(this.list)
  }

  render(sessions: readonly SessionInfo[], currentId: string | undefined): void {
    const items = sessions.map((session) => {
      const open = h('button', {
        class: 'sessions__open',
        attrs: { type: 'button', 'aria-current': session.id === currentId ? 'page' : undefined },
      })
      open.append(h('span', { class: 'sessions__title', text: session.title || 'Untitled' }))
      open.append(h('span', { class: 'sessions__meta', text: describe(session) }))
      open.addEventListener('click', () => this.options.select(session.id))
      const remove = h('button', {
        class: 'sessions__delete',
        text: '×',
        attrs: { type: 'button', 'aria-label': `Delete ${session.title || 'session'}`, title: 'Delete' },
      })
      remove.addEventListener('click', () => this.options.remove(session))
      const download = h('button', {
        class: 'sessions__export',
        text: '↓',
        attrs: { type: 'button', 'aria-label': `Export ${session.title || 'session'}`, title: 'Export' },
      })
      download.addEventListener('click', () => this.options.exportSession(session))
      const item = h('li', { class: 'sessions__item' }, [open, download, remove])
      setAttrs(item, { 'data-session': session.id })
      return item
    })
    this.list.replaceChildren(...items)
    if (items.length === 0) this.list.append(h('li', { class: 'sessions__empty', text: 'No sessions yet' }))
  }
}

function describe(session: SessionInfo): string {
  const when = new Date(session.updatedAt).toLocaleString(undefined, {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  })
  return session.source === 'native' ? when : `${session.source} import · ${when}`
}
