// @vitest-environment happy-dom
/**
 * The playground's idle warm-up renders a sample answer so the first streamed answer's first
 * frame runs warm code: the sample has to reach every block kind the renderer meets and the
 * sanitizer's path, or the frame it is for still pays for the code it left out. It renders off
 * screen: the page is left as it was.
 */
import { expect, test } from 'vitest'
import { renderMarkdown } from '../../demo/ui/markdown'
import { NEEDS_SANITIZER, WARM_UP_SAMPLE, warmUpMarkdown } from '../../demo/ui/markdown-view'

test('the warm-up sample renders every block kind and goes through the sanitizer', () => {
  const html = renderMarkdown(WARM_UP_SAMPLE)
  for (const tag of [
    'h2',
    'p',
    'strong',
    'em',
    'code',
    'a',
    'ul',
    'ol',
    'li',
    'blockquote',
    'pre',
    'table',
    'th',
    'td',
  ])
    expect(html, tag).toContain(`<${tag}`)
  expect(NEEDS_SANITIZER.test(WARM_UP_SAMPLE)).toBe(true)
})

test('the warm-up leaves the page as it was', () => {
  document.body.innerHTML = '<main id="app"><p>shown</p></main>'
  const before = document.documentElement.outerHTML
  warmUpMarkdown()
  expect(document.documentElement.outerHTML).toBe(before)
})
