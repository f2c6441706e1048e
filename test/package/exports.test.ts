/**
 * The package's public surface, pinned. Each entry names what it exports (no `export *`), and
 * this test compares the names to test/package/exports.json: a name that appears or disappears
 * is a change of the public API, made on purpose by editing that list in the same commit.
 *
 * Values are read from the loaded module; type-only names from the entry's source, which the
 * typecheck already proves resolve.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import pinned from './exports.json'

const entries = {
  sessionline: { file: 'src/index.ts', load: () => import('../../src/index') },
  'sessionline/react': { file: 'src/react.ts', load: () => import('../../src/react') },
  'sessionline/ai-sdk': { file: 'src/ai-sdk.ts', load: () => import('../../src/ai-sdk') },
  'sessionline/assistant-ui': { file: 'src/assistant-ui.ts', load: () => import('../../src/assistant-ui') },
  'sessionline/worker': { file: 'worker/index.ts', load: () => import('../../worker/index') },
  'sessionline/sync': { file: 'src/sync.ts', load: () => import('../../src/sync') },
} as const

type EntryName = keyof typeof entries

const source = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')

/** The names an entry's source exports with `export type {…}`, `type` inside `export {…}`, or a local type. */
function typeNames(text: string): string[] {
  const names = new Set<string>()
  const exported = (item: string) =>
    item
      .trim()
      .split(/\s+as\s+/)
      .at(-1)
      ?.trim() ?? ''
  for (const [, typeOnly, list = ''] of text.matchAll(/^export (type )?\{([^}]*)\}/gm)) {
    for (const raw of list.split(',')) {
      const item = raw.trim()
      if (item === '') continue
      if (typeOnly !== undefined) names.add(exported(item))
      else if (item.startsWith('type ')) names.add(exported(item.slice(5)))
    }
  }
  for (const [, name = ''] of text.matchAll(/^export (?:interface|type) (\w+)/gm)) names.add(name)
  return [...names].sort()
}

const sorted = (names: Iterable<string>) => [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))

describe.each(Object.keys(entries) as EntryName[])('%s', (name) => {
  const entry = entries[name]
  const expected = pinned[name]

  test('names every export: no wholesale re-export', () => {
    expect(source(entry.file)).not.toMatch(/^export (type )?\*/m)
  })

  test('exports exactly the pinned values', async () => {
    const module = await entry.load()
    expect(sorted(Object.keys(module))).toEqual(sorted(expected.values))
  })

  test('exports exactly the pinned type-only names', () => {
    expect(typeNames(source(entry.file))).toEqual(sorted(expected.types))
  })
})

test('the demo-only tools are not public', async () => {
  const module: Record<string, unknown> = await entries.sessionline.load()
  expect(module.createDemoTools).toBeUndefined()
})
