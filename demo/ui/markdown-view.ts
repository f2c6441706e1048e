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

/** A link in an answer opens beside the playground, and tells the target nothing about it. */
function openBeside(link: Element): void {
  link.setAttribute('target', '_blank')
  link.setAttribute('rel', 'noopener noreferrer nofollow')
}

function sanitizer(): DOMPurify {
  if (purifier) return purifier
  const instance = createDOMPurify(window)
  instance.addHook('uponSanitizeAttribute', (_node, data) => {
    if (data.attrName === 'style' && !ALIGNMENT.test(data.attrValue)) data.keepAttr = false
    if (data.attrName === 'class' && !/^language-[\w+#.-]+$/.test(data.attrValue)) data.keepAttr = false
  })
  instance.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.hasAttribute('href')) openBeside(node)
  })
  purifier = instance
  return instance
}

/**
 * Characters a source text needs before markdown-it's output can hold anything but its own tags,
 * escaped text and links it made itself (relative, or linkify's http and mailto): raw markup, a
 * URL scheme, an entity, a quote that could end an attribute. Answers free of them (plain prose
 * and lists) skip the sanitizer, whose cost (about 0.3 ms a call, per node beyond that) would
 * otherwise dominate paging in the rows of a 10,000-turn session.
 */
export const NEEDS_SANITIZER = /[<>&:"'=`\\]/

/** Sanitized DOM of rendered markdown (whitespace between blocks dropped). */
export function markdownFragment(html: string): DocumentFragment {
  return sanitizer().sanitize(html.trim(), { ...SANITIZE, RETURN_DOM_FRAGMENT: true })
}

/** DOM of markdown rendered from `source`: through the sanitizer unless `source` cannot need it. */
function fragmentOf(html: string, source: string): DocumentFragment {
  if (NEEDS_SANITIZER.test(source)) return markdownFragment(html)
  // A template's content is inert: nothing in it runs or loads.
  const template = document.createElement('template')
  template.innerHTML = html.trim()
  for (const link of template.content.querySelectorAll('a[href]')) openBeside(link)
  return template.content
}

/**
 * Shows a growing markdown text in `node`: the DOM of finished blocks is appended once and never
 * touched again, and only the nodes of the open tail are replaced on an update.
 */
export class MarkdownView {
  private readonly renderer = new StreamingMarkdown()
  private tail: ChildNode[] = []
  private tailHtml: string | undefined
  /** Finished blocks kept so far, and the chunk the next ones go into once there are many. */
  private keptBlocks = 0
  private chunk: HTMLElement | undefined
  private chunkBlocks = 0

  constructor(readonly node: HTMLElement) {}

  update(text: string): void {
    const { reset, completed, tail } = this.renderer.update(text)
    if (reset) {
      this.node.replaceChildren()
      this.tail = []
      this.tailHtml = undefined
      this.keptBlocks = 0
      this.chunk = undefined
    }
    if (completed.length === 0 && tail === this.tailHtml) return
    for (const node of this.tail) node.remove()
    // One parse for all the blocks finished by this update (a whole answer, when a row first
    // shows): parsing is most of what a row costs when thousands of turns are paged in.
    if (completed.length > 0)
      this.keep(fragmentOf(completed.map((html) => html.trim()).join(''), text), completed.length)
    const fragment = fragmentOf(tail, text)
    this.tail = [...fragment.childNodes]
    this.tailHtml = tail
    this.node.append(fragment)
  }

  /**
   * A short answer's finished blocks stay children of the part. Past `FLAT_BLOCKS`, they go into
   * chunks of `CHUNK_BLOCKS` that the browser skips laying out while off screen: the transcript
   * keeps to the bottom by reading its height after every update, and that layout otherwise
   * walks every block of a long answer (measured in the bench's main-thread-stream: 10–12 s of
   * blocking for a 200 KB answer without chunks, 1.6 s with them).
   */
  private keep(blocks: DocumentFragment, count: number): void {
    this.keptBlocks += count
    if (this.keptBlocks <= FLAT_BLOCKS) {
      this.node.append(blocks)
      return
    }
    if (!this.chunk || this.chunkBlocks >= CHUNK_BLOCKS) {
      const chunk = document.createElement('section')
      chunk.className = 'markdown-chunk'
      chunk.style.contentVisibility = 'auto'
      chunk.style.containIntrinsicSize = 'auto 320px'
      this.node.append(chunk)
      this.chunk = chunk
      this.chunkBlocks = 0
    }
    this.chunk.append(blocks)
    this.chunkBlocks += count
  }
}

/** Finished blocks kept as direct children before chunking starts: what most answers have. */
const FLAT_BLOCKS = 48
/** Finished blocks per chunk: few chunks to lay out, each small enough to skip off screen. */
const CHUNK_BLOCKS = 24

/**
 * An answer of every block kind the renderer meets (a heading, a list, emphasis, a link, a fenced
 * code block, a table, a quote), with characters that send it through the sanitizer.
 */
export const WARM_UP_SAMPLE = [
  '## Warm-up',
  '',
  'Some **strong**, *emphasis*, `code` and a [link](https://example.com/"a") with <markup>.',
  '',
  '- one',
  '  - nested',
  '1. two',
  '',
  '> a quote',
  '',
  '```ts',
  'const a = 1',
  '```',
  '',
  '| a | b |',
  '| - | -: |',
  '| 1 | 2 |',
  '',
].join('\n')

/**
 * Renders a sample answer once, off screen, while the page is idle: the first answer a page
 * streams otherwise pays for markdown-it's and DOMPurify's code running cold and for the
 * sanitizer's set-up in its first frame. Measured in the bench's main-thread-stream (a CPU
 * profile in Chromium on a quiet machine): that frame ran 22–26 ms of script, and it is the one
 * that broke 50 ms on a loaded machine; the frames after it ran 4–6 ms, and it runs 6–9 ms warm.
 */
export function warmUpMarkdown(): void {
  const view = new MarkdownView(document.createElement('div'))
  // Grown in steps, as a stream grows it: both the kept blocks and the open tail get rendered.
  for (let end = 0; end < WARM_UP_SAMPLE.length; end += 40) view.update(WARM_UP_SAMPLE.slice(0, end))
  view.update(WARM_UP_SAMPLE)
}
