import createDOMPurify, { type Config, type DOMPurify } from 'dompurify'
import { StreamingMarkdown } from './markdown'

/**
 * Only what the markdown renderer emits survives; anything else (a renderer bug, a future
 * option turned on by mistake) is dropped rather than trusted.
 */
const SANITIZE: Config = {
  ALLOWED_TAGS: [
    'a',
    'blockquote',
    'br',
    'code',
    'del',
    'em',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'hr',
    'li',
    'ol',
    'p',
    'pre',
    's',
    'strong',
    'table',
    'tbody',
    'td',
    'th',
    'thead',
    'tr',
    'ul',
  ],
  ALLOWED_ATTR: ['href', 'title', 'class', 'start', 'style'],
  ALLOW_DATA_ATTR: false,
}
/** The one inline style markdown emits: a table column's alignment. */
const ALIGNMENT = /^text-align:(left|right|center)$/

let purifier: DOMPurify | undefined

function sanitizer(): DOMPurify {
  if (purifier) return purifier
  const instance = createDOMPurify(window)
  instance.addHook('uponSanitizeAttribute', (_node, data) => {
    if (data.attrName === 'style' && !ALIGNMENT.test(data.attrValue)) data.keepAttr = false
    if (data.attrName === 'class' && !/^language-[\w+#.-]+$/.test(data.attrValue)) data.keepAttr = false
  })
  instance.addHook('afterSanitizeAttributes', (node) => {
    // A link in an answer opens beside the playground, and tells the target nothing about it.
    if (node.tagName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank')
      node.setAttribute('rel', 'noopener noreferrer nofollow')
    }
  })
  purifier = instance
  return instance
}

/** Sanitized DOM of rendered markdown (whitespace between blocks dropped). */
export function markdownFragment(html: string): DocumentFragment {
  return sanitizer().sanitize(html.trim(), { ...SANITIZE, RETURN_DOM_FRAGMENT: true })
}

/**
 * Shows a growing markdown text in `node`: the DOM of finished blocks is appended once and never
 * touched again, and only the nodes of the open tail are replaced on an update.
 */
export class MarkdownView {
  private readonly renderer = new StreamingMarkdown()
  private tail: ChildNode[] = []
  private tailHtml: string | undefined

  constructor(readonly node: HTMLElement) {}

  update(text: string): void {
    const { reset, completed, tail } = this.renderer.update(text)
    if (reset) {
      this.node.replaceChildren()
      this.tail = []
      this.tailHtml = undefined
    }
    if (completed.length === 0 && tail === this.tailHtml) return
    for (const node of this.tail) node.remove()
    for (const html of completed) this.node.append(markdownFragment(html))
    const fragment = markdownFragment(tail)
    this.tail = [...fragment.childNodes]
    this.tailHtml = tail
    this.node.append(fragment)
  }
}
