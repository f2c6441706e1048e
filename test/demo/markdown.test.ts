/**
 * The playground's streaming markdown renderer against the one-shot render it must equal: for
 * any text streamed in any chunk split, after every chunk, completed blocks + tail ==
 * `renderMarkdown(text so far)`, and finished blocks are not parsed again.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { renderMarkdown, StreamingMarkdown } from '../../demo/ui/markdown'

/** Lines chosen to hit the constructs whose block boundaries move as text arrives. */
const LINES = [
  '',
  '',
  'Plain words and `code`.',
  'more text',
  '# Heading',
  '#',
  '## Second *level*',
  '- item',
  '- item with **bold**',
  '  - nested item',
  '  continued',
  '1. first',
  '2) second',
  '    indented code',
  '```',
  '```ts',
  '~~~',
  '> quoted',
  '> > deeper',
  'a | b',
  '--|--',
  '| x | y |',
  '---',
  '===',
  '***',
  '[a link](https://example.com/x)',
  '[bad](javascript:alert(1))',
  '<img src=x onerror=alert(1)>',
  '<div><a href="javascript:alert(1)">nested</a></div>',
  '![pic](https://example.com/p.png)',
  'see https://example.com/bare',
  '[ref]: https://example.com/ref',
  'use [ref] and [x][ref]',
  'line\r',
  'tab\there',
  '* star item',
  '+ plus item',
  '\\- escaped',
  '<https://example.com/auto>',
  '~~struck~~',
]

const document = fc
  .array(fc.constantFrom(...LINES), { minLength: 1, maxLength: 30 })
  .map((lines) => lines.join('\n'))

/** `text` cut at sorted random offsets (duplicates allowed: an empty delta is a delta too). */
const streamed = document.chain((text) =>
  fc
    .array(fc.integer({ min: 0, max: text.length }), { maxLength: 25 })
    .map((cuts) => ({ text, cuts: [...cuts.sort((a, b) => a - b), text.length] })),
)

function render(stream: StreamingMarkdown, text: string, blocks: string[]): string {
  const update = stream.update(text)
  if (update.reset) blocks.length = 0
  blocks.push(...update.completed)
  return blocks.join('') + update.tail
}

describe('StreamingMarkdown', () => {
  test('after every chunk of any split, completed blocks + tail equal the one-shot render of the text so far', () => {
    let kept = 0
    fc.assert(
      fc.property(streamed, ({ text, cuts }) => {
        const stream = new StreamingMarkdown()
        const blocks: string[] = []
        for (const cut of cuts) {
          const prefix = text.slice(0, cut)
          expect(render(stream, prefix, blocks)).toBe(renderMarkdown(prefix))
        }
        if (stream.completedBlocks > 0) kept++
      }),
      { seed: 20261201, numRuns: 400 },
    )
    // The property is about kept blocks: most generated streams must have had some.
    expect(kept).toBeGreaterThan(200)
  })

  test('a text that is not a continuation of the previous one starts over and still equals the one-shot render', () => {
    fc.assert(
      fc.property(document, document, (first, second) => {
        const stream = new StreamingMarkdown()
        const blocks: string[] = []
        render(stream, first, blocks)
        expect(render(stream, second, blocks)).toBe(renderMarkdown(second))
      }),
      { seed: 20261202, numRuns: 200 },
    )
  })

  test('a changed tail drops the blocks it completed: a paragraph before a fence is a heading before ---', () => {
    // Found by the property above (random seed): the paragraph was kept as finished because the
    // line after it was complete, though the next text replaced that line.
    const stream = new StreamingMarkdown()
    const blocks: string[] = []
    render(stream, 'more text\n```ts\n', blocks)
    expect(render(stream, 'more text\n---\n', blocks)).toBe(renderMarkdown('more text\n---\n'))
  })

  test('a streamed answer of many paragraphs parses only its open tail on each delta', () => {
    const paragraphs = Array.from({ length: 200 }, (_, i) => `Paragraph ${i} with *some* words.`)
    const text = paragraphs.join('\n\n')
    const stream = new StreamingMarkdown()
    let parsed = 0
    let longest = 0
    for (let end = 1; end <= text.length; end += 7) {
      stream.update(text.slice(0, end))
      parsed += stream.lastParsedLength
      longest = Math.max(longest, stream.lastParsedLength)
    }
    stream.update(text)
    // The open tail holds at most the last finished-looking paragraph, the one after it and a
    // few characters of the next: never the answer from its start.
    expect(longest).toBeLessThan(3 * paragraphs[199]!.length)
    // Re-parsing from the start each time would cost about text.length² / 14 characters.
    expect(parsed).toBeLessThan(text.length * 10)
    // The last paragraph ends with no line break, so the one before it is still open.
    expect(stream.completedBlocks).toBe(198)
  })

  test('a reference definition arriving late links the earlier use, as the one-shot render does', () => {
    const stream = new StreamingMarkdown()
    const blocks: string[] = []
    const start = 'See [the docs][d].\n\nMore text.\n\n'
    render(stream, start, blocks)
    expect(stream.completedBlocks).toBe(1)
    const full = `${start}[d]: https://example.com/docs\n`
    const html = render(stream, full, blocks)
    expect(html).toBe(renderMarkdown(full))
    expect(html).toContain('<a href="https://example.com/docs">the docs</a>')
  })

  test('raw HTML, javascript: links and images from the model never become markup', () => {
    const html = renderMarkdown(
      [
        '<img src=x onerror=alert(1)>',
        '',
        '[click](javascript:alert(1)) [v](vbscript:msgbox) [d](data:text/html;base64,PHNjcmlwdD4=)',
        '',
        '<div><a href="javascript:alert(1)">nested</a><script>alert(2)</script></div>',
        '',
        '![tracker](https://example.com/leak?q=secret)',
      ].join('\n'),
    )
    expect(html).not.toMatch(/<img|<div|<script|<a href="(javascript|vbscript|data):/)
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;')
    expect(html).toContain('<a href="https://example.com/leak?q=secret">tracker</a>')
  })
})
