import type { TimelineRow } from '../../src/index'
import { h, setAttrs } from './dom'
import { type RowActions, RowView } from './row'

/** How far below the viewport's top a jump lands its row. */
const LANDING_OFFSET = 12
/** Within this many px of the bottom, the transcript follows new content. */
const STICK_SLACK = 32
/** Closer than this to the top, an older page is asked for. */
const LOAD_OLDER_AT = 240
/** The row under this line (from the viewport's top) is the turn being read. */
const READING_LINE = 48

export interface TranscriptOptions extends RowActions {
  loadOlder(): void
  /** Called (at most once per frame) when the scroll position may have changed the turn being read. */
  onScroll(): void
}

/**
 * The transcript pane: keyed reconciliation of the snapshot's rows (one DOM node per key, updated
 * in place, moved only when the order changes), stick-to-bottom while following a stream, and a
 * scroll anchor so rows prepended above never move what the reader is looking at.
 */
export class Transcript {
  readonly scroller: HTMLElement
  private readonly list = h('div', { class: 'transcript__rows' })
  private readonly empty = h('p', {
    class: 'transcript__empty',
    text: 'No messages yet. Say something below.',
  })
  private readonly latest = h('button', {
    class: 'jump-latest',
    text: 'Jump to latest ↓',
    attrs: { type: 'button' },
  })
  private readonly views = new Map<string, RowView>()
  private rendered: readonly TimelineRow[] = []
  private stick = true
  private canLoadOlder = false
  private scrollQueued = false
  /** A pointer is down on the scroller (dragging its scrollbar). */
  private dragging = false
  /** Pages a gap in from the end the reader scrolls into it from. */
  private readonly gapWatch = new IntersectionObserver((entries) => this.onGapsSeen(entries))

  constructor(
    host: HTMLElement,
    private readonly options: TranscriptOptions,
  ) {
    this.scroller = h('div', {
      class: 'transcript',
      attrs: { role: 'log', 'aria-label': 'Transcript', tabindex: 0, 'aria-live': 'off' },
    })
    this.scroller.append(this.empty, this.list)
    this.latest.hidden = true
    this.latest.addEventListener('click', () => this.followTail())
    host.append(this.scroller, this.latest)
    this.scroller.addEventListener('scroll', () => this.onScroll(), { passive: true })
    // Only the reader lets go of the tail: rows growing, or getting their real height as they
    // come into view, move the scroll position too, and must not.
    this.scroller.addEventListener('wheel', (event) => event.deltaY < 0 && this.release(), { passive: true })
    this.scroller.addEventListener('touchmove', () => this.release(), { passive: true })
    this.scroller.addEventListener('keydown', (event) => {
      if (['ArrowUp', 'PageUp', 'Home'].includes(event.key) || (event.key === ' ' && event.shiftKey))
        this.release()
    })
    this.scroller.addEventListener('pointerdown', () => {
      this.dragging = true
    })
    window.addEventListener('pointerup', () => {
      this.dragging = false
    })
    new ResizeObserver(() => {
      if (this.stick) this.pinToBottom()
    }).observe(this.list)
  }

  get following(): boolean {
    return this.stick
  }

  /** Drops every row (switching sessions). */
  reset(): void {
    this.views.clear()
    this.list.replaceChildren()
    this.rendered = []
    this.stick = true
  }

  /** Whether older rows exist and are being loaded (busy while they are). */
  setWindow(state: { hasOlder: boolean; loadingOlder: boolean }): void {
    this.canLoadOlder = state.hasOlder && !state.loadingOlder
    setAttrs(this.scroller, { 'aria-busy': state.loadingOlder ? 'true' : undefined })
    this.empty.hidden = this.rendered.length > 0 || state.hasOlder
  }

  /** Reconciles the DOM with `rows`; call at most once per frame. */
  render(rows: readonly TimelineRow[]): void {
    if (rows === this.rendered) return
    const anchor = this.stick ? undefined : this.captureAnchor()
    this.reconcile(rows)
    this.rendered = rows
    // Following the tail, the ResizeObserver on the list pins it once layout has run anyway: reading
    // scrollHeight here would force a layout of the whole transcript on every streamed frame, which
    // was most of the page's blocking time while a long answer streamed (the main-thread bench).
    if (!this.stick && anchor?.node.isConnected)
      this.scroller.scrollTop = anchor.node.offsetTop - anchor.offset
  }

  /** Stops following the tail (a jump is about to move the viewport). */
  release(): void {
    this.stick = false
    this.latest.hidden = false
  }

  followTail(): void {
    this.stick = true
    this.latest.hidden = true
    this.pinToBottom()
  }

  private pinToBottom(): void {
    this.scroller.scrollTop = this.scroller.scrollHeight
  }

  /** Puts the row with `key` near the top of the viewport; false when it is not rendered. */
  land(key: string): boolean {
    const view = this.views.get(key)
    if (!view) return false
    this.release()
    this.scroller.scrollTop = view.node.offsetTop - LANDING_OFFSET
    // Rows above with `content-visibility: auto` get their real height once the landing shows a
    // sliver of them: put the row back where it landed once that layout is done.
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        if (!this.stick && view.node.isConnected)
          this.scroller.scrollTop = view.node.offsetTop - LANDING_OFFSET
      }),
    )
    return true
  }

  /** Marks the row with `key` as the one a search landed on, until another is. */
  highlight(key: string): void {
    for (const node of this.list.querySelectorAll('.row--hit')) node.classList.remove('row--hit')
    this.views.get(key)?.node.classList.add('row--hit')
  }

  private onGapsSeen(entries: IntersectionObserverEntry[]): void {
    for (const entry of entries) {
      const key = (entry.target as HTMLElement).dataset.key
      if (!entry.isIntersecting || !key || this.stick) continue
      const viewport = entry.rootBounds ?? this.scroller.getBoundingClientRect()
      // Seen near the top: the reader scrolls up into it, so the rows just above the newer
      // segment load; near the bottom, the rows just below the older segment.
      const fromAbove = entry.boundingClientRect.top < viewport.top + viewport.height / 2
      this.options.loadGap(key, fromAbove ? 'older' : 'newer')
    }
  }

  /** The turn of the row under the reading line (the last turn while following the tail). */
  readingTurn(): number | undefined {
    const rows = this.list.children
    if (rows.length === 0) return undefined
    if (this.stick) return this.turnAtOrBefore(rows.length - 1)
    const line = this.scroller.scrollTop + READING_LINE
    return this.turnAtOrBefore(Math.max(0, this.lastIndexAtOrAbove(line)))
  }

  private turnAtOrBefore(index: number): number | undefined {
    const rows = this.list.children
    for (let i = index; i >= 0; i--) {
      const turn = (rows[i] as HTMLElement).dataset.turn
      if (turn) return Number(turn)
    }
    return undefined
  }

  /** Binary search over the rendered rows (they are in document order, so their tops ascend). */
  private lastIndexAtOrAbove(y: number): number {
    const rows = this.list.children
    let low = 0
    let high = rows.length - 1
    let found = -1
    while (low <= high) {
      const mid = (low + high) >> 1
      if ((rows[mid] as HTMLElement).offsetTop <= y) {
        found = mid
        low = mid + 1
      } else high = mid - 1
    }
    return found
  }

  private captureAnchor(): { node: HTMLElement; offset: number } | undefined {
    const top = this.scroller.scrollTop
    const index = this.lastIndexAtOrAbove(top)
    const node = this.list.children[Math.max(0, index)] as HTMLElement | undefined
    return node ? { node, offset: node.offsetTop - top } : undefined
  }

  private reconcile(rows: readonly TimelineRow[]): void {
    const wanted = new Set<string>()
    for (const row of rows) wanted.add(row.key)
    for (const [key, view] of this.views) {
      if (!wanted.has(key)) {
        this.gapWatch.unobserve(view.node)
        view.node.remove()
        this.views.delete(key)
      }
    }
    let cursor = this.list.firstChild
    let previousTurn: number | undefined
    for (const row of rows) {
      let view = this.views.get(row.key)
      if (!view) {
        view = new RowView(row.key, this.options)
        this.views.set(row.key, view)
      }
      view.update(row)
      if (row.kind === 'gap') this.gapWatch.observe(view.node)
      const turn = view.turn
      view.setTurnStart(turn !== undefined && turn > 0 && turn !== previousTurn)
      if (turn !== undefined) previousTurn = turn
      if (view.node === cursor) cursor = cursor.nextSibling
      else this.list.insertBefore(view.node, cursor)
    }
  }

  private onScroll(): void {
    const { scrollTop, scrollHeight, clientHeight } = this.scroller
    if (scrollHeight - scrollTop - clientHeight < STICK_SLACK) {
      this.stick = true
      this.latest.hidden = true
    } else if (this.stick && this.dragging) this.release()
    else if (this.stick) this.pinToBottom()
    if (scrollTop < LOAD_OLDER_AT && this.canLoadOlder && !this.stick) {
      this.canLoadOlder = false
      this.options.loadOlder()
    }
    if (this.scrollQueued) return
    this.scrollQueued = true
    requestAnimationFrame(() => {
      this.scrollQueued = false
      this.options.onScroll()
    })
  }
}
