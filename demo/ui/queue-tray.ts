import type { TimelineInput } from '../../src/index'
import { h, setAttrs, setText } from './dom'

export interface QueueTrayOptions {
  cancel(id: string): void
  edit(id: string, text: string): void
  /** Moves input `id` to stand before input `before` (`null`: to the end). */
  reorder?(id: string, before: string | null): void
  /** Sends input `id` as a steer: it is answered inside the running turn instead of waiting. */
  steer?(id: string): void
}

interface Entry {
  node: HTMLLIElement
  text: HTMLElement
  state: HTMLElement
  input: TimelineInput
  editor?: HTMLTextAreaElement
}

/**
 * "queued · N": inputs waiting for their own turn, in the order they will run, each cancellable
 * and editable. With `reorder`, an item moves by dragging it or with its ↑ and ↓ buttons (or
 * Alt+ArrowUp / Alt+ArrowDown on the item); with `steer`, it can leave the queue as a steer.
 */
export class QueueTray {
  private readonly title = h('h2', { class: 'tray__title' })
  private readonly list = h('ol', { class: 'tray__list' })
  private readonly entries = new Map<string, Entry>()
  private rendered: readonly TimelineInput[] | undefined

  constructor(
    private readonly root: HTMLElement,
    private readonly options: QueueTrayOptions,
  ) {
    root.append(this.title, this.list)
    root.hidden = true
  }

  render(queued: readonly TimelineInput[]): void {
    if (queued === this.rendered) return
    this.rendered = queued
    this.root.hidden = queued.length === 0
    setText(this.title, `queued · ${queued.length}`)
    const wanted = new Set(queued.map((input) => input.id))
    for (const [id, entry] of this.entries) {
      if (!wanted.has(id)) {
        entry.node.remove()
        this.entries.delete(id)
      }
    }
    let cursor = this.list.firstChild
    for (const input of queued) {
      const entry = this.entries.get(input.id) ?? this.create(input)
      entry.input = input
      if (!entry.editor) setText(entry.text, input.text)
      setText(entry.state, input.state === 'pending' ? '' : input.state === 'failed' ? 'not sent' : 'sending')
      setAttrs(entry.node, { 'data-state': input.state })
      if (entry.node === cursor) cursor = cursor.nextSibling
      else this.list.insertBefore(entry.node, cursor)
    }
  }

  private create(input: TimelineInput): Entry {
    const text = h('span', { class: 'tray__text' })
    const state = h('span', { class: 'tray__state' })
    const edit = h('button', { class: 'link-button', text: 'Edit', attrs: { type: 'button' } })
    const cancel = h('button', { class: 'link-button', text: 'Cancel', attrs: { type: 'button' } })
    const actions: HTMLElement[] = [edit, cancel]
    const { reorder, steer } = this.options
    if (steer) {
      const toSteer = h('button', {
        class: 'link-button',
        text: 'Steer',
        attrs: { type: 'button', 'aria-label': 'Send as a steer (answered in the running turn)' },
      })
      toSteer.addEventListener('click', () => steer(entry.input.id))
      actions.unshift(toSteer)
    }
    if (reorder) {
      const up = h('button', {
        class: 'link-button',
        text: '↑',
        attrs: { type: 'button', 'aria-label': 'Move up' },
      })
      const down = h('button', {
        class: 'link-button',
        text: '↓',
        attrs: { type: 'button', 'aria-label': 'Move down' },
      })
      up.addEventListener('click', () => this.move(entry.input.id, -1))
      down.addEventListener('click', () => this.move(entry.input.id, 1))
      actions.unshift(up, down)
    }
    const node = h('li', { class: 'tray__item', attrs: { 'data-key': input.id } }, [
      text,
      state,
      h('span', { class: 'tray__actions' }, actions),
    ])
    const entry: Entry = { node, text, state, input }
    edit.addEventListener('click', () => this.toggleEditor(entry, edit))
    cancel.addEventListener('click', () => this.options.cancel(entry.input.id))
    if (reorder) this.makeDraggable(entry)
    this.entries.set(input.id, entry)
    return entry
  }

  /** The ids in the order shown. */
  private order(): string[] {
    return (this.rendered ?? []).map((input) => input.id)
  }

  /** Moves input `id` one place up (-1) or down (1), as one `reorder`. */
  private move(id: string, step: -1 | 1): void {
    const order = this.order()
    const at = order.indexOf(id)
    const to = at + step
    if (at < 0 || to < 0 || to >= order.length) return
    // Up: before the one above; down: before the one after the one below (null: the end).
    const before = step < 0 ? order[to]! : (order[to + 1] ?? null)
    this.options.reorder?.(id, before)
  }

  private makeDraggable(entry: Entry): void {
    const { node } = entry
    node.draggable = true
    node.addEventListener('dragstart', (event) => {
      event.dataTransfer?.setData('text/x-sessionline-input', entry.input.id)
      if (event.dataTransfer) event.dataTransfer.effectAllowed = 'move'
      node.classList.add('tray__item--dragging')
    })
    node.addEventListener('dragend', () => node.classList.remove('tray__item--dragging'))
    node.addEventListener('dragover', (event) => {
      if (event.dataTransfer?.types.includes('text/x-sessionline-input')) event.preventDefault()
    })
    node.addEventListener('drop', (event) => {
      const id = event.dataTransfer?.getData('text/x-sessionline-input')
      if (!id || id === entry.input.id) return
      event.preventDefault()
      // Dropped on the lower half of an item: it goes after it, else before it.
      const box = node.getBoundingClientRect()
      const after = event.clientY > box.top + box.height / 2
      const order = this.order().filter((other) => other !== id)
      const at = order.indexOf(entry.input.id)
      this.options.reorder?.(id, after ? (order[at + 1] ?? null) : entry.input.id)
    })
    node.addEventListener('keydown', (event) => {
      if (!event.altKey || (event.key !== 'ArrowUp' && event.key !== 'ArrowDown')) return
      event.preventDefault()
      this.move(entry.input.id, event.key === 'ArrowUp' ? -1 : 1)
    })
  }

  private toggleEditor(entry: Entry, button: HTMLButtonElement): void {
    if (entry.editor) {
      const text = entry.editor.value
      entry.editor = undefined
      setText(button, 'Edit')
      entry.text.replaceChildren()
      setText(entry.text, entry.input.text)
      if (text.trim() !== '' && text !== entry.input.text) this.options.edit(entry.input.id, text)
      return
    }
    const editor = h('textarea', {
      class: 'tray__editor',
      attrs: { rows: 2, 'aria-label': 'Edit queued input' },
    })
    editor.value = entry.input.text
    editor.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault()
        this.toggleEditor(entry, button)
      } else if (event.key === 'Escape') {
        editor.value = entry.input.text
        this.toggleEditor(entry, button)
      }
    })
    entry.editor = editor
    setText(button, 'Save')
    entry.text.replaceChildren(editor)
    editor.focus()
  }
}
