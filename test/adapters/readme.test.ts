// README's adapter and "In a Vite app" examples are the files the tests build and drive: these
// checks keep the quoted text and the tested files identical.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8')
const readme = read('../../README.md')

/** The code blocks of the README section under `heading` (up to the next heading of any level). */
function blocksUnder(heading: string): string[] {
  const start = readme.indexOf(`\n${heading}\n`)
  expect(start, `README has "${heading}"`).toBeGreaterThan(-1)
  const rest = readme.slice(start + heading.length + 2)
  const section = rest.slice(0, rest.search(/\n#{1,6} /))
  return [...section.matchAll(/```\w*\n([\s\S]*?)```/g)].map((match) => match[1]!)
}

/** The lines between `// #region name` and `// #endregion name`. */
function region(source: string, name: string): string {
  const open = `// #region ${name}\n`
  const from = source.indexOf(open)
  const to = source.indexOf(`// #endregion ${name}`)
  expect(from).toBeGreaterThan(-1)
  return source.slice(from + open.length, to)
}

describe('README examples', () => {
  it('the AI SDK example is test/adapters/ai-sdk-example.tsx, which the e2e page renders', () => {
    expect(blocksUnder('### AI SDK (`sessionline/ai-sdk`)')[0]).toBe(read('./ai-sdk-example.tsx'))
  })

  it('the assistant-ui example is test/adapters/assistant-ui-example.tsx, which the e2e page renders', () => {
    expect(blocksUnder('### assistant-ui (`sessionline/assistant-ui`)')[0]).toBe(
      read('./assistant-ui-example.tsx'),
    )
  })

  it('"In a Vite app" is the config and the start of the app that the package test installs the tarball into', () => {
    const [config, page] = blocksUnder('### In a Vite app')
    expect(config).toBe(`// vite.config.ts\n${read('../package/app/vite.config.ts')}`)
    expect(page).toBe(`// src/main.tsx\n${region(read('../package/app/src/main.tsx'), 'In a Vite app')}`)
  })
})
