import type { RailItem } from '../../src/index'
import { h, setAttrs, toggleClass } from './dom'

/** Every turn gets one mark on a fixed pitch: the rail's height says how long the session is. */
export const MARK_PITCH = 10
/** Marks rendered beyond the visible part of the frame, each way. */
const OVERSCAN = 20

export interface RailOptions {
  activate(item: RailItem): void
  /** The rail shows marks above its items (`before`): load the outline from this position on. */
  loadBefore?(position: number): void
}

export interface RailState {
  items: readonly RailItem[]
  /** Turns above `items` whose outline is not loaded yet (`snapshot.outlineBefore`): placeholder marks. */
  before?: number
  /** Turn being read in the transcript. */
  current?: number
  /** Turn whose rows are being loaded by a jump. */
  busy?: number
}

/**
 * The turn rail: a column of marks, one per turn of the whole session (not only the loaded
 * window), virtualized on its fixed pitch so 10,000 turns cost a few dozen buttons. One mark is
 * in the tab order (roving focus); arrows, Page Up/Down, Home and End move between marks.
 * Marks are placed by position: the `before` turns whose outline is not loaded yet show as
 * placeholders, and scrolling (or moving focus) onto them asks for their outline (`loadBefore`).
 */
export class Rail {
  private readonly frame = h('div', { class: 'rail__frame' })
  private readonly track = h('div', {
    class: 'rail__track',
    attrs: { role: 'toolbar', 'aria-orientation': 'vertical', 'aria-label': 'Turns' },
  })
  private readonly preview = h('div', {
    class: 'rail__preview',
    attrs: { role: 'tooltip', id: 'rail-preview' },
  })
  private readonly marks = new Map<number, HTMLButtonElement>()
  private state: RailState = { items: [] }
  /** Index (into items) of the mark that takes Tab focus. */
  private focusIndex: number | undefined
  private framePending = false
  private followedCurrent: number | undefined
  /** Lowest position already asked of `loadBefore`. */
  private askedFrom: number | undefined

  constructor(
    private readonly root: HTMLElement,
    private readonly options: RailOptions,
  ) {
    this.frame.append(this.track)
    this.preview.hidden = true
    root.append(this.frame, this.preview)
    this.frame.addEventListener('scroll', () => this.schedule(), { passive: true })
    this.track.addEventListener('keydown', (event) => this.onKey(event))
    this.track.addEventListener('click', (event) => {
      const item = this.itemOf(event.target)
      if (item) this.options.activate(item)
    })
    this.track.addEventListener('focusin', (event) => {
      const mark = this.markOf(event.target)
      if (!mark) return
      this.focusIndex = Number(mark.dataset.index)
      this.showPreview(mark)
    })
    this.track.addEventListener('focusout', () => this.hidePreview())
    this.track.addEventListener('pointerover', (event) => {
      const mark = this.markOf(event.target)
      if (mark) this.showPreview(mark)
    })
    this.track.addEventListener('pointerleave', () => {
      if (!this.track.contains(document.activeElement)) this.hidePreview()
    })
    new ResizeObserver(() => this.schedule()).observe(this.frame)
  }

  update(state: RailState): void {
    const same =
      state.items === this.state.items &&
      state.current === this.state.current &&
      state.busy === this.state.busy &&
      (state.before ?? 0) === this.before
    if ((state.before ?? 0) !== this.before) this.askedFrom = undefined
    this.state = state
    if (this.focusIndex !== undefined && this.focusIndex >= this.count) this.focusIndex = undefined
    if (same) return
    // Size the frame before following the current mark, so the scroll is not clamped.
    this.root.hidden = this.count === 0
    this.track.style.height = `${this.count * MARK_PITCH}px`
    this.followCurrent()
    this.render()
  }

  private schedule(): void {
    if (this.framePending) return
    this.framePending = true
    requestAnimationFrame(() => {
      this.framePending = false
      this.render()
    })
  }

  private get before(): number {
    return this.state.before ?? 0
  }

  /** Marks in all: the placeholders, then the items. */
  private get count(): number {
    return this.before + this.state.items.length
  }

  /** The item at `position`, or undefined for a placeholder. */
  private itemAt(position: number): RailItem | undefined {
    return position < this.before ? undefined : this.state.items[position - this.before]
  }

  private indexOfTurn(turn: number | undefined): number | undefined {
    if (turn === undefined) return undefined
    const { items } = this.state
    let low = 0
    let high = items.length - 1
    while (low <= high) {
      const mid = (low + high) >> 1
      const t = items[mid]!.turn
      if (t === turn) return this.before + mid
      if (t < turn) low = mid + 1
      else high = mid - 1
    }
    return undefined
  }

  /** Keeps the mark of the turn being read inside the frame, unless the reader is on the rail. */
  private followCurrent(): void {
    const index = this.indexOfTurn(this.state.current)
    if (index === undefined || this.state.current === this.followedCurrent) return
    this.followedCurrent = this.state.current
    if (this.root.contains(document.activeElement) || this.root.matches(':hover')) return
    this.reveal(index, 'center')
  }

  private reveal(index: number, align: 'nearest' | 'center'): void {
    const top = index * MARK_PITCH
    const { scrollTop, clientHeight } = this.frame
    if (align === 'center' && (top < scrollTop || top + MARK_PITCH > scrollTop + clientHeight)) {
      this.frame.scrollTop = top - clientHeight / 2
    } else if (top < scrollTop) this.frame.scrollTop = top
    else if (top + MARK_PITCH > scrollTop + clientHeight)
      this.frame.scrollTop = top + MARK_PITCH - clientHeight
  }

  private render(): void {
    const { current, busy } = this.state
    const count = this.count
    const { scrollTop, clientHeight, scrollHeight } = this.frame
    toggleClass(this.root, 'rail--fade-top', scrollTop > 1)
    toggleClass(this.root, 'rail--fade-bottom', scrollTop + clientHeight < scrollHeight - 1)
    const first = Math.max(0, Math.floor(scrollTop / MARK_PITCH) - OVERSCAN)
    const last = Math.min(count - 1, Math.ceil((scrollTop + clientHeight) / MARK_PITCH) + OVERSCAN)
    const tabIndex = this.focusIndex ?? this.indexOfTurn(current) ?? count - 1
    const wanted = new Set<number>()
    for (let i = first; i <= last; i++) wanted.add(i)
    if (tabIndex >= 0 && tabIndex < count) wanted.add(tabIndex)
    // A rail with no marks has tabIndex -1: never ask for a position above the first.
    const lowest = Math.max(0, Math.min(first, tabIndex))
    if (lowest < this.before && (this.askedFrom === undefined || lowest < this.askedFrom)) {
      this.askedFrom = lowest
      this.options.loadBefore?.(lowest)
    }
    for (const [index, mark] of this.marks) {
      if (!wanted.has(index) && mark !== document.activeElement) {
        mark.remove()
        this.marks.delete(index)
      }
    }
    for (const index of wanted) {
      const item = this.itemAt(index)
      let mark = this.marks.get(index)
      if (!mark) {
        mark = h('button', { class: 'rail__mark', attrs: { type: 'button', 'data-index': index } })
        mark.style.top = `${index * MARK_PITCH}px`
        this.marks.set(index, mark)
        this.track.append(mark)
      }
      if (item === undefined) {
        setAttrs(mark, {
          'data-turn': undefined,
          'data-kind': 'placeholder',
          'aria-label': 'Turn not loaded yet',
          'aria-current': undefined,
          'aria-busy': 'true',
          'aria-describedby': 'rail-preview',
          tabindex: index === tabIndex ? 0 : -1,
        })
        continue
      }
      setAttrs(mark, {
        'data-turn': item.turn,
        'data-kind': item.kind,
        'aria-label':
          item.kind === 'loaded' ? `Jump to turn ${item.turn}` : `Load and jump to turn ${item.turn}`,
        'aria-current': item.turn === current ? 'true' : undefined,
        'aria-busy': item.turn === busy ? 'true' : undefined,
        'aria-describedby': 'rail-preview',
        tabindex: index === tabIndex ? 0 : -1,
      })
    }
    const shown = this.preview.hidden ? undefined : Number(this.preview.dataset.index)
    if (shown !== undefined) {
      const mark = this.marks.get(shown)
      if (mark) this.showPreview(mark)
    }
  }

  private markOf(target: EventTarget | null): HTMLButtonElement | undefined {
    return target instanceof HTMLButtonElement && target.classList.contains('rail__mark') ? target : undefined
  }

  private itemOf(target: EventTarget | null): RailItem | undefined {
    const mark = this.markOf(target)
    return mark ? this.itemAt(Number(mark.dataset.index)) : undefined
  }

  private onKey(event: KeyboardEvent): void {
    const mark = this.markOf(event.target)
    if (!mark) return
    const from = Number(mark.dataset.index)
    const count = this.count
    const moves: Record<string, number> = {
      ArrowUp: from - 1,
      ArrowDown: from + 1,
      PageUp: from - 10,
      PageDown: from + 10,
      Home: 0,
      End: count - 1,
    }
    const to = moves[event.key]
    if (to === undefined) return
    event.preventDefault()
    this.focusIndex = Math.min(count - 1, Math.max(0, to))
    this.reveal(this.focusIndex, 'nearest')
    this.render()
    this.marks.get(this.focusIndex)?.focus()
  }

  private showPreview(mark: HTMLButtonElement): void {
    const item = this.itemAt(Number(mark.dataset.index))
    if (!item) {
      this.preview.replaceChildren(h('div', { class: 'rail__preview-turn', text: 'Loading…' }))
      this.preview.dataset.index = mark.dataset.index
      this.preview.hidden = false
      return
    }
    const hint = item.kind === 'unloaded' ? ' · not loaded yet' : ''
    this.preview.replaceChildren(
      h('div', { class: 'rail__preview-turn', text: `Turn ${item.turn}${hint}` }),
      h('div', { class: 'rail__preview-prompt', text: item.prompt || '(no prompt)' }),
      h('div', { class: 'rail__preview-response', text: item.response || '…' }),
    )
    this.preview.dataset.index = mark.dataset.index
    this.preview.hidden = false
    const markBox = mark.getBoundingClientRect()
    const rootBox = this.root.getBoundingClientRect()
    const top = Math.max(
      0,
      Math.min(markBox.top - rootBox.top - 12, rootBox.height - this.preview.offsetHeight),
    )
    this.preview.style.top = `${top}px`
  }

  private hidePreview(): void {
    this.preview.hidden = true
  }
}
