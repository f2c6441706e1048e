import type { TimelineInput } from '../../src/index'
import { h, setAttrs, setText } from './dom'

export interface QueueTrayOptions {
  cancel(id: string): void
  edit(id: string, text: string): void
}

interface Entry {
  node: HTMLLIElement
  text: HTMLElement
  state: HTMLElement
  input: TimelineInput
  editor?: HTMLTextAreaElement
}

/** "queued · N": inputs waiting for their own turn, oldest first, each cancellable and editable. */
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
    const node = h('li', { class: 'tray__item', attrs: { 'data-key': input.id } }, [
      text,
      state,
      h('span', { class: 'tray__actions' }, [edit, cancel]),
    ])
    const entry: Entry = { node, text, state, input }
    edit.addEventListener('click', () => this.toggleEditor(entry, edit))
    cancel.addEventListener('click', () => this.options.cancel(entry.input.id))
    this.entries.set(input.id, entry)
    return entry
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
