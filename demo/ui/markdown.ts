import MarkdownIt, { type Env, type Token } from 'markdown-it'

/**
 * The one markdown dialect of the playground: CommonMark plus GitHub's tables and strikethrough,
 * bare URLs turned into links. `html: false` makes raw HTML in model output show as the text it
 * is; markdown-it's own link check refuses `javascript:`, `vbscript:`, `file:` and non-image
 * `data:` targets. The sanitizer in markdown-view.ts is the second wall, not the first.
 */
export const markdown = new MarkdownIt({ html: false, linkify: true, typographer: false })

// A model's `![alt](url)` would make the browser fetch `url` the moment the answer renders,
// which is how a prompt-injected answer leaks a conversation to a server. Shown as a link, it
// fetches nothing until the reader chooses to follow it.
markdown.renderer.rules.image = (tokens, index, options, env, self) => {
  const token = tokens[index]!
  const src = token.attrGet('src') ?? ''
  const alt = self.renderInlineAsText(token.children ?? [], options, env) || String(src)
  const title = token.attrGet('title')
  const escaped = (value: string | number) => markdown.utils.escapeHtml(String(value))
  return `<a href="${escaped(src)}"${title ? ` title="${escaped(title)}"` : ''}>${escaped(alt)}</a>`
}

/** The whole of `text` rendered at once: what the streaming renderer must always agree with. */
export function renderMarkdown(text: string): string {
  return markdown.render(text)
}

/** What changed since the previous `update`, for a view that keeps the nodes of finished blocks. */
export interface MarkdownUpdate {
  /** The earlier blocks are gone (the text is not a continuation of the previous one). */
  reset: boolean
  /** Blocks that are finished as of this update: their HTML never changes again. */
  completed: readonly string[]
  /** The HTML of the blocks still open, which the next update may change. */
  tail: string
}

/**
 * Renders a text that grows at its end (a streaming answer) without re-parsing it from the
 * start on every delta. The text is split at top-level block boundaries: a block followed by
 * another block that starts on a complete line can no longer change (no later line reaches back
 * into it), so its HTML is kept and only the open tail is parsed again.
 *
 * Link reference definitions are the one construct that reaches backwards (a definition at the
 * end turns `[x][ref]` at the start into a link). A text that has one is rendered whole on every
 * update, which is correct and only slower, for the rare answer that uses them.
 *
 * At every step, the completed blocks followed by the tail are exactly `renderMarkdown(text)`.
 */
export class StreamingMarkdown {
  private text = ''
  /** Offset in `text` where the open tail starts; everything before it is completed blocks. */
  private tailStart = 0
  private completedCount = 0
  private tailHtml = ''
  /** The text has a reference definition: render it whole from now on. */
  private whole = false

  /** Number of blocks completed so far (kept, never re-rendered). */
  get completedBlocks(): number {
    return this.completedCount
  }

  /** Characters parsed by the last update: the open tail, not the whole text. */
  lastParsedLength = 0

  update(text: string): MarkdownUpdate {
    if (text === this.text) return { reset: false, completed: [], tail: this.tailHtml }
    let reset = false
    // Kept blocks hold only while the text grows at its end: a completed block is final because
    // the lines after it stay (a paragraph before "```" would be a heading before "---").
    if (!text.startsWith(this.text)) {
      reset = this.completedCount > 0
      this.tailStart = 0
      this.completedCount = 0
      this.whole = false
    }
    this.text = text
    if (this.whole) return this.renderWhole(reset)

    const tail = text.slice(this.tailStart)
    const env: Env = {}
    const tokens = markdown.parse(tail, env)
    this.lastParsedLength = tail.length
    if (env.references && Object.keys(env.references).length > 0) {
      this.whole = true
      return this.renderWhole(reset || this.completedCount > 0)
    }

    const blocks = topLevelBlocks(tokens)
    const completeLines = countNewlines(tail)
    // Every block but the last is finished once the block after it starts on a complete line:
    // a line still being typed may yet turn out to continue the block before it.
    let finished = 0
    while (finished + 1 < blocks.length && blocks[finished + 1]!.line < completeLines) finished++
    const completed: string[] = []
    for (let i = 0; i < finished; i++)
      completed.push(renderTokens(tokens.slice(blocks[i]!.from, blocks[i]!.to)))
    if (finished > 0) {
      this.tailStart += rawOffsetOfLine(tail, blocks[finished]!.line)
      this.completedCount += finished
    }
    this.tailHtml = renderTokens(
      tokens.slice(finished < blocks.length ? blocks[finished]!.from : tokens.length),
    )
    return { reset, completed, tail: this.tailHtml }
  }

  private renderWhole(reset: boolean): MarkdownUpdate {
    this.tailStart = 0
    this.completedCount = 0
    this.lastParsedLength = this.text.length
    this.tailHtml = renderMarkdown(this.text)
    return { reset, completed: [], tail: this.tailHtml }
  }
}

interface Block {
  /** Token range [from, to). */
  from: number
  to: number
  /** First line of the block in the parsed source. */
  line: number
}

function topLevelBlocks(tokens: readonly Token[]): Block[] {
  const blocks: Block[] = []
  let depth = 0
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    if (depth === 0) blocks.push({ from: i, to: i + 1, line: token.map?.[0] ?? 0 })
    depth += token.nesting
    blocks[blocks.length - 1]!.to = i + 1
  }
  return blocks
}

function renderTokens(tokens: Token[]): string {
  return markdown.renderer.render(tokens, markdown.options, {})
}

/** Line breaks as markdown-it counts them (`\r\n`, `\r` and `\n` are one each). */
function countNewlines(text: string): number {
  return text.match(/\r\n?|\n/g)?.length ?? 0
}

/** Where line `line` (0-based, counted as markdown-it does) starts in `text`. */
function rawOffsetOfLine(text: string, line: number): number {
  const breaks = /\r\n?|\n/g
  for (let seen = 0; seen < line; seen++) {
    if (!breaks.exec(text)) return text.length
  }
  return line === 0 ? 0 : breaks.lastIndex
}
