import type { SearchHit } from '../../src/index'
import { h, setAttrs } from './dom'

export interface SearchActions {
  search(query: string): Promise<SearchHit[]>
  /** The title of a hit's session, for the result list. */
  titleOf(sessionId: string): string
  choose(hit: SearchHit): void
}

/** How long typing may pause before the query runs. */
const DEBOUNCE_MS = 80

/**
 * The search box (Ctrl/⌘+K): a modal dialog with a query field and a list of hits, each with
 * its session, turn and a snippet whose matched words are highlighted. Arrow keys move the
 * selection, Enter chooses, Escape closes. Snippet text goes in as text nodes, never as HTML.
 */
export class SearchBox {
  private readonly input: HTMLInputElement
  private readonly list: HTMLElement
  private readonly status: HTMLElement
  private hits: SearchHit[] = []
  private selected = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  /** Answers to older queries are dropped. */
  private asked = 0

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly actions: SearchActions,
  ) {
    this.input = dialog.querySelector<HTMLInputElement>('#search-input')!
    this.list = dialog.querySelector<HTMLElement>('#search-results')!
    this.status = dialog.querySelector<HTMLElement>('#search-status')!
    this.input.addEventListener('input', () => this.queue())
    this.input.addEventListener('keydown', (event) => this.onKey(event))
    dialog.addEventListener('click', (event) => {
      if (event.target === dialog) dialog.close()
    })
    document.addEventListener('keydown', (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'k') {
        event.preventDefault()
        this.open()
      }
    })
  }

  open(): void {
    if (!this.dialog.open) this.dialog.showModal()
    this.input.select()
  }

  private queue(): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.run(), DEBOUNCE_MS)
  }

  private async run(): Promise<void> {
    const query = this.input.value.trim()
    const asked = ++this.asked
    if (query === '') {
      this.show([], '')
      return
    }
    setAttrs(this.list, { 'aria-busy': 'true' })
    try {
      const started = performance.now()
      const hits = await this.actions.search(query)
      if (asked !== this.asked) return
      const ms = performance.now() - started
      this.status.dataset.ms = ms.toFixed(1)
      this.show(hits, hits.length === 0 ? 'No matches' : `${hits.length} matches · ${ms.toFixed(0)} ms`)
    } catch (error) {
      if (asked === this.asked) this.show([], error instanceof Error ? error.message : String(error))
    } finally {
      if (asked === this.asked) setAttrs(this.list, { 'aria-busy': undefined })
    }
  }

  private show(hits: SearchHit[], status: string): void {
    this.hits = hits
    this.selected = 0
    this.status.textContent = status
    this.list.replaceChildren(
      ...hits.map((hit, i) => {
        const item = h(
          'div',
          {
            class: 'search__hit',
            attrs: {
              role: 'option',
              id: `search-hit-${i}`,
              'data-message': hit.messageId,
              'data-turn': hit.turn,
            },
          },
          [
            h('div', {
              class: 'search__where',
              text: `${this.actions.titleOf(hit.sessionId)} · turn ${hit.turn} · ${hit.role}`,
            }),
            snippetNode(hit),
          ],
        )
        item.addEventListener('mousedown', (event) => event.preventDefault())
        item.addEventListener('click', () => this.choose(i))
        return item
      }),
    )
    this.select(0)
  }

  private select(index: number): void {
    if (this.hits.length === 0) {
      setAttrs(this.input, { 'aria-activedescendant': undefined })
      return
    }
    this.selected = (index + this.hits.length) % this.hits.length
    for (const [i, item] of [...this.list.children].entries())
      setAttrs(item, { 'aria-selected': i === this.selected ? 'true' : 'false' })
    setAttrs(this.input, { 'aria-activedescendant': `search-hit-${this.selected}` })
    this.list.children[this.selected]?.scrollIntoView({ block: 'nearest' })
  }

  private choose(index: number): void {
    const hit = this.hits[index]
    if (!hit) return
    this.dialog.close()
    this.actions.choose(hit)
  }

  private onKey(event: KeyboardEvent): void {
    if (event.key === 'ArrowDown') this.select(this.selected + 1)
    else if (event.key === 'ArrowUp') this.select(this.selected - 1)
    else if (event.key === 'Enter') {
      clearTimeout(this.timer)
      this.choose(this.selected)
    } else return
    event.preventDefault()
  }
}

/** The snippet with its matched ranges in `<mark>`, built from text nodes. */
function snippetNode(hit: SearchHit): HTMLElement {
  const node = h('div', { class: 'search__snippet' })
  let at = 0
  for (const [start, end] of hit.ranges) {
    if (start < at) continue
    node.append(document.createTextNode(hit.snippet.slice(at, start)))
    node.append(h('mark', { text: hit.snippet.slice(start, end) }))
    at = end
  }
  node.append(document.createTextNode(hit.snippet.slice(at)))
  return node
}
