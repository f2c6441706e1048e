import type {
  ApprovalAnswer,
  AttachmentUrls,
  FilePart,
  Json,
  MessagePart,
  SessionMessage,
  TimelineInput,
  TimelineRow,
} from '../../src/index'
import { h, setAttrs, setText, toggleClass } from './dom'
import { type HistoryActions, HistoryControls, replacedRegion } from './history-controls'
import { MarkdownView } from './markdown-view'

export interface RowActions {
  retry(input: TimelineInput): void
  /** Pages a gap in from one end (its buttons, or scrolling into it). */
  loadGap(key: string, end: 'older' | 'newer'): void
  /** How many turns a gap's seqs hold (from the outline), for its label. */
  turnsIn(fromSeq: number, toSeq: number): number
  /** Answers a tool call that waits for approval (its card's Approve, Deny and Always). */
  respond(callId: string, answer: ApprovalAnswer): void
  /** Edit, regenerate, rewind and the branch picker; without them a row shows none. */
  history?: HistoryActions
  /** Sends a pending steer to the queue instead (its own later turn); without it, no button. */
  queueInstead?(inputId: string): void
}

/** The approval card's buttons: a person's three answers, in reading (and tab) order. */
const APPROVAL_BUTTONS: readonly { label: string; answer: ApprovalAnswer }[] = [
  { label: 'Approve', answer: { approved: true } },
  { label: 'Deny', answer: { approved: false } },
  { label: 'Always', answer: { approved: true, remember: 'always' } },
]

const ROLE_LABEL: Record<SessionMessage['role'], string> = {
  user: 'You',
  assistant: 'Assistant',
  system: 'System',
  summary: 'Summary',
}
const MAX_JSON = 4000
/** Whose text is markdown: what models write. What people type shows exactly as typed. */
const MARKDOWN_ROLES: ReadonlySet<SessionMessage['role']> = new Set(['assistant', 'summary'])

/** How a part is drawn: its type, except that model text is markdown. */
type PartKind = MessagePart['type'] | 'markdown'

function formatJson(value: Json | undefined): string {
  if (value === undefined) return ''
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2)
  return text.length > MAX_JSON ? `${text.slice(0, MAX_JSON)}\n…` : text
}

/**
 * Where images of file parts get their URLs: the open session's `attachmentUrls`, which makes
 * them as rows enter the view's window and revokes them as they leave. Set by the app per view.
 */
let attachmentUrls: AttachmentUrls | undefined

export function setAttachmentUrls(urls: AttachmentUrls | undefined): void {
  attachmentUrls = urls
}

/** Points each file image under `root` at its current URL (called when one is made or revoked). */
export function refreshAttachmentImages(root: ParentNode): void {
  for (const image of root.querySelectorAll<HTMLImageElement>('img[data-attachment-image]'))
    showAttachmentImage(image, image.dataset.attachmentImage!)
}

function showAttachmentImage(image: HTMLImageElement, attachmentId: string): void {
  const url = attachmentUrls?.get(attachmentId)
  if (url === undefined) image.removeAttribute('src')
  else if (image.getAttribute('src') !== url) image.src = url
}

/** An inbox input's parts: its text, then the files the engine stored (those on their way have no id yet). */
function inputParts(input: TimelineInput): MessagePart[] {
  const files = (input.attachments ?? []).flatMap((file): FilePart[] =>
    file.attachmentId === undefined
      ? []
      : [
          {
            type: 'file',
            attachmentId: file.attachmentId,
            name: file.name,
            mediaType: file.mediaType,
            size: file.size,
          },
        ],
  )
  return input.text === '' && files.length > 0 ? files : [{ type: 'text', text: input.text }, ...files]
}

/** `data-state` of a row: where it is in its life, for styling and for tests. */
export function rowState(row: TimelineRow): string {
  return row.kind === 'input' ? row.input.state : row.kind === 'gap' ? 'gap' : row.message.status
}

/**
 * One transcript row's DOM node, updated in place for as long as its key lives: a pending steer
 * becomes its promoted user row, a streaming answer grows, and the node never moves out and back.
 */
export class RowView {
  readonly node: HTMLElement
  private readonly role = h('span', { class: 'row__role' })
  private readonly badge = h('span', { class: 'row__badge' })
  private readonly retry = h('button', { class: 'link-button', text: 'Retry', attrs: { type: 'button' } })
  private readonly toQueue = h('button', {
    class: 'link-button',
    text: 'Queue instead',
    attrs: { type: 'button', 'aria-label': 'Queue instead (a later turn of its own)' },
  })
  private readonly body = h('div', { class: 'row__body' })
  private current: TimelineRow | undefined
  private turnStart = false
  private readonly history: HistoryControls | undefined
  private replaced: HTMLElement | undefined

  constructor(
    readonly key: string,
    private readonly actions: RowActions,
  ) {
    this.history = actions.history && new HistoryControls(actions.history, this.body)
    this.node = h('article', { class: 'row', attrs: { 'data-key': key } }, [
      h('header', { class: 'row__meta' }, [
        this.role,
        this.badge,
        this.retry,
        this.toQueue,
        ...(this.history ? [this.history.node] : []),
      ]),
      this.body,
    ])
    this.retry.hidden = true
    this.retry.addEventListener('click', () => {
      if (this.current?.kind === 'input') actions.retry(this.current.input)
    })
    this.toQueue.hidden = true
    this.toQueue.addEventListener('click', () => {
      if (this.current?.kind === 'input') actions.queueInstead?.(this.current.input.id)
    })
  }

  get row(): TimelineRow | undefined {
    return this.current
  }

  /** The turn this row belongs to; pending inputs have none yet. */
  get turn(): number | undefined {
    return this.current?.kind === 'message' ? this.current.message.turn : undefined
  }

  /** Marks the first row of a turn, which shows the turn's number above it. */
  setTurnStart(starts: boolean): void {
    if (starts === this.turnStart) return
    this.turnStart = starts
    toggleClass(this.node, 'row--turn-start', starts)
    setAttrs(this.node, { 'data-turn-label': starts ? `Turn ${this.turn}` : undefined })
  }

  update(row: TimelineRow): void {
    if (row === this.current) return
    this.current = row
    const state = rowState(row)
    if (row.kind === 'gap') {
      const turns = this.actions.turnsIn(row.fromSeq, row.toSeq)
      setAttrs(this.node, { 'data-role': 'gap', 'data-state': state, 'data-turn': undefined })
      toggleClass(this.node, 'row--gap', true)
      setText(this.role, '')
      setText(this.badge, '')
      this.retry.hidden = true
      this.toQueue.hidden = true
      const older = h('button', {
        class: 'link-button',
        text: 'Show more above',
        attrs: { type: 'button', 'data-gap-end': 'newer' },
      })
      const newer = h('button', {
        class: 'link-button',
        text: 'Show more below',
        attrs: { type: 'button', 'data-gap-end': 'older' },
      })
      older.addEventListener('click', () => this.actions.loadGap(row.key, 'newer'))
      newer.addEventListener('click', () => this.actions.loadGap(row.key, 'older'))
      const label = h('span', {
        class: 'gap__label',
        text: turns === 1 ? '1 earlier turn' : `${turns} earlier turns`,
      })
      this.body.replaceChildren(h('div', { class: 'gap' }, [older, label, newer]))
      return
    }
    toggleClass(this.node, 'row--gap', false)
    if (row.kind === 'input') {
      const { input } = row
      setAttrs(this.node, { 'data-role': 'user', 'data-state': state, 'data-turn': undefined })
      toggleClass(this.node, 'row--pending', true)
      toggleClass(this.node, 'row--superseded', false)
      setText(this.role, 'You')
      setText(
        this.badge,
        state === 'failed' ? 'not sent' : state === 'sending' ? 'sending' : `pending ${input.delivery}`,
      )
      this.retry.hidden = state !== 'failed'
      this.toQueue.hidden =
        this.actions.queueInstead === undefined || state !== 'pending' || input.delivery !== 'steer'
      this.renderParts(inputParts(input), false)
      return
    }
    const { message } = row
    setAttrs(this.node, { 'data-role': message.role, 'data-state': state, 'data-turn': message.turn })
    toggleClass(this.node, 'row--pending', false)
    toggleClass(this.node, 'row--superseded', message.visibility !== 'visible')
    setText(this.role, ROLE_LABEL[message.role])
    // What an imported file says of the row: a slash command, a prompt typed while the model
    // worked, a shell command the user kept out of the model's context.
    const badge =
      message.visibility !== 'visible'
        ? 'superseded'
        : state === 'streaming' || state === 'interrupted' || state === 'error'
          ? state
          : message.command
            ? 'command'
            : message.delivery === 'steer'
              ? 'typed while it worked'
              : message.excludedFromContext
                ? 'not sent to the model'
                : ''
    setText(this.badge, badge)
    this.retry.hidden = true
    this.toQueue.hidden = true
    this.history?.update(message)
    if (message.role === 'summary' && this.actions.history && !this.replaced) {
      this.replaced = replacedRegion(this.actions.history!, () =>
        this.current?.kind === 'message' ? this.current.message : undefined,
      )
      this.node.append(this.replaced)
    }
    if (!this.history?.editing) this.renderParts(message.parts, MARKDOWN_ROLES.has(message.role))
  }

  private renderParts(parts: readonly MessagePart[], markdown: boolean): void {
    const nodes = this.body.children
    parts.forEach((part, index) => {
      const kind: PartKind = markdown && part.type === 'text' ? 'markdown' : part.type
      let node = nodes[index] as HTMLElement | undefined
      if (!node || node.dataset.part !== kind) {
        const fresh = createPart(kind, this.actions)
        if (node) node.replaceWith(fresh)
        else this.body.append(fresh)
        node = fresh
      }
      updatePart(node, part)
    })
    while (nodes.length > parts.length) nodes[nodes.length - 1]!.remove()
  }
}

/** The markdown renderer of each markdown part, kept with its node for as long as it lives. */
const markdownViews = new WeakMap<HTMLElement, MarkdownView>()

function createPart(kind: PartKind, actions: RowActions): HTMLElement {
  switch (kind) {
    case 'text':
      return h('div', { class: 'part part--text', attrs: { 'data-part': 'text' } })
    case 'markdown': {
      const node = h('div', { class: 'part part--text part--markdown', attrs: { 'data-part': 'markdown' } })
      markdownViews.set(node, new MarkdownView(node))
      return node
    }
    case 'reasoning':
      return h('details', { class: 'part part--reasoning', attrs: { 'data-part': 'reasoning' } }, [
        h('summary', { text: 'Thinking' }),
        h('div', { class: 'reasoning__text' }),
      ])
    case 'tool': {
      const card = h('div', { class: 'part tool-card', attrs: { 'data-part': 'tool' } }, [
        h('div', { class: 'tool-card__head' }, [
          h('span', { class: 'tool-card__name' }),
          h('span', { class: 'tool-card__state' }),
        ]),
        h('pre', { class: 'tool-card__io tool-card__input' }),
        h('pre', { class: 'tool-card__io tool-card__output' }),
      ])
      // Plain buttons: reachable with Tab and pressed with Enter or Space, like every control here.
      const approval = h(
        'div',
        {
          class: 'tool-card__approval',
          attrs: { role: 'group', 'aria-label': 'This tool call waits for you' },
        },
        APPROVAL_BUTTONS.map(({ label, answer }) => {
          const button = h('button', { class: 'link-button', text: label, attrs: { type: 'button' } })
          button.addEventListener('click', () => {
            const callId = card.dataset.callId
            if (callId !== undefined) actions.respond(callId, answer)
          })
          return button
        }),
      )
      approval.hidden = true
      card.append(approval)
      return card
    }
    case 'file':
      return h('div', { class: 'part file-card', attrs: { 'data-part': 'file' } }, [
        h('img', { class: 'file-card__image', attrs: { alt: '' } }),
        h('span', { class: 'file-card__name' }),
        h('span', { class: 'file-card__meta' }),
      ])
  }
}

function updatePart(node: HTMLElement, part: MessagePart): void {
  switch (part.type) {
    case 'text': {
      const view = markdownViews.get(node)
      if (view) view.update(part.text)
      else setText(node, part.text)
      return
    }
    case 'reasoning':
      setText(node.lastElementChild!, part.text)
      return
    case 'tool': {
      const [head, input, output, approval] = node.children as unknown as [
        HTMLElement,
        HTMLElement,
        HTMLElement,
        HTMLElement,
      ]
      setText(head.firstElementChild!, part.name)
      setText(head.lastElementChild!, part.state)
      setAttrs(node, { 'data-state': part.state, 'data-call-id': part.callId })
      approval.hidden = part.state !== 'awaiting-approval'
      setText(input, formatJson(part.input))
      setText(output, formatJson(part.output))
      output.hidden = part.output === undefined
      return
    }
    case 'file': {
      const [image, name, meta] = node.children as unknown as [HTMLImageElement, HTMLElement, HTMLElement]
      setText(name, part.name)
      setText(meta, `${part.mediaType} · ${formatBytes(part.size)}`)
      const isImage = part.mediaType.startsWith('image/')
      image.hidden = !isImage
      image.alt = isImage ? part.name : ''
      setAttrs(image, { 'data-attachment-image': isImage ? part.attachmentId : undefined })
      if (isImage) showAttachmentImage(image, part.attachmentId)
      else image.removeAttribute('src')
      setAttrs(node, { 'data-attachment': part.attachmentId })
      return
    }
  }
}

function formatBytes(size: number): string {
  if (size < 1024) return `${size} B`
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} KB`
  return `${(size / 1024 / 1024).toFixed(1)} MB`
}
