import type { SessionMessage } from '../../src/index'
import { h, setText } from './dom'

/** What a transcript row's history controls do (docs/decisions/0033); the app calls the engine. */
export interface HistoryActions {
  /** Whether the open session takes history verbs (an imported one is read-only until forked). */
  editable(): boolean
  /** The prompt, edited: a new branch whose turn runs. */
  resend(messageId: string, text: string): void
  /** A new answer to the same prompt, on a new branch. */
  regenerate(messageId: string): void
  /** Back to before the prompt; its text returns to the composer. */
  rewind(messageId: string): void
  /** The sibling `step` places away becomes the shown branch. */
  switchBranch(messageId: string, step: -1 | 1): void
  /** The rows a summary replaced, oldest first. */
  replaced(summary: SessionMessage): Promise<readonly SessionMessage[]>
}

const button = (text: string, label?: string) =>
  h('button', {
    class: 'link-button',
    text,
    attrs: { type: 'button', ...(label ? { 'aria-label': label } : {}) },
  })

/** What the controls of a row depend on: they are rebuilt only when it changes. */
function signature(message: SessionMessage, editable: boolean): string {
  const branch = message.branch ? `${message.branch.index}/${message.branch.count}` : ''
  return [message.id, message.role, message.visibility ?? 'visible', message.status, branch, editable].join(
    '|',
  )
}

/**
 * A message row's history controls, in its header: the "‹ 2 / 3 ›" branch picker, Edit and
 * Rewind on a prompt, Regenerate on an answer. Plain buttons, so Tab reaches them and Enter or
 * Space presses them. Edit swaps the row's text for a textarea: Enter resends, Escape cancels.
 */
export class HistoryControls {
  readonly node = h('span', { class: 'row__history' })
  private built = ''
  private editor: HTMLTextAreaElement | undefined

  constructor(
    private readonly actions: HistoryActions,
    /** Where the editor goes while the row's text is edited (the row's body is hidden meanwhile). */
    private readonly body: HTMLElement,
  ) {}

  /** Whether the row's text is being edited (its parts must not be redrawn under the editor). */
  get editing(): boolean {
    return this.editor !== undefined
  }

  update(message: SessionMessage): void {
    const editable = this.actions.editable()
    const built = signature(message, editable)
    if (built === this.built) return
    this.built = built
    this.closeEditor()
    const controls: HTMLElement[] = []
    if (message.branch) controls.push(this.picker(message.id, message.branch))
    // Only the shown path takes verbs, and only once the row is finished.
    const settled = message.visibility !== 'inactive' && message.status !== 'streaming'
    if (editable && settled && message.role === 'user') {
      const edit = button('Edit', 'Edit this prompt')
      edit.addEventListener('click', () => this.openEditor(message))
      const rewind = button('Rewind', 'Rewind to before this prompt')
      rewind.addEventListener('click', () => this.actions.rewind(message.id))
      controls.push(edit, rewind)
    }
    if (editable && settled && message.role === 'assistant') {
      const again = button('Regenerate', 'Regenerate this answer')
      again.addEventListener('click', () => this.actions.regenerate(message.id))
      controls.push(again)
    }
    this.node.replaceChildren(...controls)
  }

  private picker(messageId: string, branch: { index: number; count: number }): HTMLElement {
    const previous = button('‹', 'Previous branch')
    const next = button('›', 'Next branch')
    previous.disabled = branch.index === 0
    next.disabled = branch.index === branch.count - 1
    previous.addEventListener('click', () => this.actions.switchBranch(messageId, -1))
    next.addEventListener('click', () => this.actions.switchBranch(messageId, 1))
    return h('span', { class: 'branch-picker', attrs: { role: 'group', 'aria-label': 'Branches' } }, [
      previous,
      h('span', { class: 'branch-picker__label', text: `${branch.index + 1} / ${branch.count}` }),
      next,
    ])
  }

  private openEditor(message: SessionMessage): void {
    const text = message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
    const editor = h('textarea', {
      class: 'row__editor',
      attrs: { rows: 3, 'aria-label': 'Edit prompt (Enter resends, Escape cancels)' },
    })
    editor.value = text
    editor.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault()
        const edited = editor.value
        this.closeEditor()
        if (edited.trim() !== '') this.actions.resend(message.id, edited)
      } else if (event.key === 'Escape') {
        event.preventDefault()
        this.closeEditor()
      }
    })
    this.closeEditor()
    this.editor = editor
    this.body.hidden = true
    this.body.after(editor)
    editor.focus()
  }

  private closeEditor(): void {
    if (!this.editor) return
    this.editor.remove()
    this.editor = undefined
    this.body.hidden = false
  }
}

/**
 * A summary row's "what it replaced": a disclosure that reads the replaced rows when opened
 * (they are `inactive`, so no page of the transcript holds them).
 */
export function replacedRegion(
  actions: HistoryActions,
  summary: () => SessionMessage | undefined,
): HTMLElement {
  const list = h('ol', { class: 'replaced__rows' })
  const region = h('details', { class: 'replaced' }, [h('summary', { text: 'What it replaced' }), list])
  let loaded = ''
  region.addEventListener('toggle', () => {
    const row = summary()
    if (!(region as HTMLDetailsElement).open || !row || loaded === row.id) return
    loaded = row.id
    setText(list, 'Loading…')
    actions.replaced(row).then(
      (rows) => {
        list.replaceChildren(
          ...rows.map((replaced) =>
            h('li', { class: 'replaced__row', attrs: { 'data-role': replaced.role } }, [
              h('span', { class: 'row__role', text: replaced.role === 'user' ? 'You' : replaced.role }),
              h('span', {
                class: 'replaced__text',
                text: replaced.parts
                  .map((part) => (part.type === 'text' ? part.text : `[${part.type}]`))
                  .join(' '),
              }),
            ]),
          ),
        )
        if (rows.length === 0) setText(list, 'Nothing: this summary started the session.')
      },
      (error: unknown) => {
        loaded = ''
        setText(list, `Could not read it: ${error instanceof Error ? error.message : String(error)}`)
      },
    )
  })
  return region
}
