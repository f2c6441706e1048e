// @vitest-environment happy-dom
/**
 * Streaming markdown does work proportional to the text that arrives, not to the answer so far:
 * counted, never timed. For a long answer of the shapes models write (headings, paragraphs,
 * nested lists, fenced code, tables) streamed in small deltas, each update parses and replaces
 * only the open tail, whatever the length of the answer, and the view ends equal to the one-shot
 * render.
 */
import { describe, expect, test } from 'vitest'
import { renderMarkdown, StreamingMarkdown } from '../../demo/ui/markdown'
import { MarkdownView } from '../../demo/ui/markdown-view'

/** A long answer: `sections` sections of every block kind, each about 600 characters. */
function answer(sections: number): string {
  const out: string[] = []
  for (let i = 1; i <= sections; i++)
    out.push(
      `## Section ${i}\n\n`,
      `Step ${i} reads the **tail** and folds the new events (see \`step${i}\`).\n\n`,
      `- item ${i}.1 keeps the receipt\n- item ${i}.2 folds in order\n  - nested ${i}.2.1 with *emphasis*\n- item ${i}.3\n\n`,
      '```ts\n',
      `export function step${i}(events: readonly Event[]): number {\n  return events.length\n}\n`,
      '```\n\n',
      `| step | events |\n| ---- | -----: |\n| ${i} | ${i * 14} |\n| ${i + 1} | ${(i + 1) * 14} |\n\n`,
    )
  return out.join('')
}

/** The longest block of `answer`: the most any update should need to parse beyond its delta. */
const LONGEST_BLOCK = Math.max(
  ...answer(1)
    .split('\n\n')
    .map((b) => b.length + 2),
)

const DELTA = 37

/** Streams `text` in DELTA-character deltas; what each update parsed. */
function parsedPerUpdate(text: string): number[] {
  const stream = new StreamingMarkdown()
  const parsed: number[] = []
  for (let end = DELTA; end < text.length + DELTA; end += DELTA) {
    stream.update(text.slice(0, Math.min(end, text.length)))
    parsed.push(stream.lastParsedLength)
  }
  return parsed
}

describe('streaming markdown work', () => {
  test('each update parses at most its delta and the open blocks, however long the answer grows', () => {
    const text = answer(240)
    expect(text.length).toBeGreaterThan(80_000)
    const parsed = parsedPerUpdate(text)
    // The open tail is the last completed-looking block, the one being written and the delta.
    expect(Math.max(...parsed)).toBeLessThanOrEqual(DELTA + 3 * LONGEST_BLOCK)
    // The last hundred updates parse no more than the first hundred did, give or take a block.
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
    expect(sum(parsed.slice(-100))).toBeLessThan(sum(parsed.slice(0, 100)) + 100 * LONGEST_BLOCK)
  })

  test('the work of the whole stream doubles when the answer doubles (re-rendering it would quadruple)', () => {
    const total = (sections: number) => parsedPerUpdate(answer(sections)).reduce((a, b) => a + b, 0)
    const ratio = total(200) / total(100)
    expect(ratio).toBeGreaterThan(1.8)
    expect(ratio).toBeLessThan(2.2)
  })

  test("the view replaces only the nodes of the open tail and ends with the one-shot render's text", () => {
    const text = answer(60)
    const node = document.createElement('div')
    document.body.append(node)
    const view = new MarkdownView(node)
    let removed = 0
    let updates = 0
    let mostRemoved = 0
    const observer = new MutationObserver((records) => {
      let now = 0
      for (const record of records) now += record.removedNodes.length
      removed += now
      mostRemoved = Math.max(mostRemoved, now)
    })
    observer.observe(node, { childList: true })
    for (let end = DELTA; end < text.length + DELTA; end += DELTA) {
      view.update(text.slice(0, Math.min(end, text.length)))
      updates++
    }
    // Records are delivered in a microtask; take the rest now.
    const last = observer.takeRecords()
    for (const record of last) removed += record.removedNodes.length
    observer.disconnect()
    // Top-level nodes: a block and the whitespace between blocks. The tail holds a few of them;
    // re-rendering the answer would remove every earlier block on every update.
    expect(mostRemoved).toBeLessThanOrEqual(6)
    expect(removed).toBeLessThanOrEqual(6 * updates)
    // A long answer's finished blocks past the first 48 sit in chunks of 24 the browser can skip
    // laying out: 60 sections of 5 blocks leave about (300 - 48) / 24 = 10 chunks. A short
    // answer keeps its blocks as direct children. (Which elements survive the sanitizer is not
    // checked here: happy-dom's DOM under DOMPurify is not a browser's.)
    const chunks = node.querySelectorAll(':scope > .markdown-chunk').length
    expect(chunks).toBeGreaterThanOrEqual(9)
    expect(chunks).toBeLessThanOrEqual(11)
    const short = document.createElement('div')
    const shortView = new MarkdownView(short)
    const few = answer(2)
    for (let end = DELTA; end < few.length + DELTA; end += DELTA) shortView.update(few.slice(0, end))
    expect(short.querySelector('.markdown-chunk')).toBeNull()
    expect(short.textContent).toContain('Section 2')
    // Its text is the one-shot render's (the markup itself is the property test's, in
    // markdown.test.ts: happy-dom's DOM under the sanitizer is not Chromium's).
    const whole = document.createElement('div')
    whole.innerHTML = renderMarkdown(text)
    const words = (n: Element) => (n.textContent ?? '').replace(/\s+/g, '')
    expect(words(node)).toBe(words(whole))
    expect(whole.querySelectorAll('table')).toHaveLength(60)
  })
})
