// The layer rules of docs/architecture.md §2, checked on the sources instead of left to review:
// which folder of src/ may import which, where Dexie and Comlink may appear, and what the page's
// first read (store/first-screen.ts) may pull in. Imports are read with a real TypeScript parser
// (oxc's), so multi-line, re-exported and dynamic imports count, and a type-only import is told
// apart from one that loads code.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseSync } from 'oxc-parser'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))

interface Import {
  from: string
  /** The repo-relative file it resolves to (relative specifiers), else undefined (a package). */
  file?: string
  /** The package name (bare specifiers), else undefined. */
  pkg?: string
  typeOnly: boolean
}

const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return walk(path)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })

const sources = [...walk(join(root, 'src')), ...walk(join(root, 'worker'))].map((path) =>
  relative(root, path),
)

function resolveFile(fromFile: string, specifier: string): string {
  const base = resolve(root, dirname(fromFile), specifier)
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')])
    if (statSync(candidate, { throwIfNoEntry: false })?.isFile()) return relative(root, candidate)
  throw new Error(`${fromFile}: cannot resolve ${specifier}`)
}

const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/')

function importsOf(file: string): Import[] {
  const text = readFileSync(join(root, file), 'utf8')
  const { module, errors } = parseSync(file, text)
  if (errors.length > 0) throw new Error(`${file}: ${errors[0]!.message}`)
  const found: Import[] = []
  const add = (specifier: string, typeOnly: boolean) =>
    found.push(
      specifier.startsWith('.')
        ? { from: specifier, file: resolveFile(file, specifier), typeOnly }
        : { from: specifier, pkg: packageOf(specifier), typeOnly },
    )
  // A declaration whose every name is a type loads nothing (`import './x'` names none: it loads).
  const onlyTypes = (entries: readonly { isType: boolean }[]) =>
    entries.length > 0 && entries.every((entry) => entry.isType)
  for (const declaration of module.staticImports)
    add(declaration.moduleRequest.value, onlyTypes(declaration.entries))
  const exported = new Map<string, { isType: boolean }[]>()
  for (const declaration of module.staticExports)
    for (const entry of declaration.entries)
      if (entry.moduleRequest)
        exported.set(entry.moduleRequest.value, [...(exported.get(entry.moduleRequest.value) ?? []), entry])
  for (const [specifier, entries] of exported) add(specifier, onlyTypes(entries))
  for (const call of module.dynamicImports) {
    const argument = text.slice(call.moduleRequest.start, call.moduleRequest.end)
    const literal = /^(['"`])([^'"`]+)\1$/.exec(argument)
    if (!literal) throw new Error(`${file}: a dynamic import of a computed name (${argument})`)
    add(literal[2]!, false)
  }
  return found
}

const imports = new Map(sources.map((file) => [file, importsOf(file)]))

/** `src/core`, `src/store`, … (`worker` for worker/; `entry` for the files at src/'s top). */
function layerOf(file: string): string {
  const parts = file.split('/')
  if (parts[0] === 'worker') return 'worker'
  return parts.length === 2 ? 'entry' : parts[1]!
}

/** Every import from a layer to another, as `file → target` lines, for readable failures. */
function crossings(
  from: string,
  allowed: readonly string[],
  options: { valuesOnly?: boolean } = {},
): string[] {
  const out: string[] = []
  for (const [file, list] of imports) {
    if (layerOf(file) !== from) continue
    for (const entry of list) {
      if (entry.file === undefined) continue
      if (options.valuesOnly && entry.typeOnly) continue
      const target = layerOf(entry.file)
      if (target !== from && !allowed.includes(target)) out.push(`${file} → ${entry.file}`)
    }
  }
  return out
}

const packageUsers = (pkg: string) =>
  [...imports].filter(([, list]) => list.some((entry) => entry.pkg === pkg)).map(([file]) => file)

/** Every file `file` loads, following relative value imports (what a bundle of it would hold). */
function closure(file: string): Set<string> {
  const seen = new Set<string>()
  const visit = (at: string) => {
    if (seen.has(at)) return
    seen.add(at)
    for (const entry of imports.get(at) ?? []) if (entry.file && !entry.typeOnly) visit(entry.file)
  }
  visit(file)
  return seen
}

describe('the layers of docs/architecture.md §2', () => {
  it('reads the sources: every layer is seen', () => {
    expect(new Set(sources.map(layerOf))).toEqual(
      new Set([
        'entry',
        'schema',
        'core',
        'store',
        'engine',
        'wire',
        'client',
        'view',
        'import',
        'sync',
        'ai-sdk',
        'assistant-ui',
        'worker',
      ]),
    )
  })

  it('schema imports no other layer, and core only schema', () => {
    expect(crossings('schema', [])).toEqual([])
    expect(crossings('core', ['schema'])).toEqual([])
    // core is pure: no package but what schema already uses.
    const corePackages = [...imports]
      .filter(([file]) => layerOf(file) === 'core')
      .flatMap(([, list]) => list.flatMap((entry) => (entry.pkg ? [entry.pkg] : [])))
    expect(new Set(corePackages)).toEqual(new Set())
  })

  it('store, view and import build on schema and core only', () => {
    expect(crossings('store', ['schema', 'core'])).toEqual([])
    expect(crossings('view', ['schema', 'core'])).toEqual([])
    expect(crossings('import', ['schema', 'core'])).toEqual([])
  })

  it('the engine never imports the page, the wire, the worker or the sync', () => {
    expect(crossings('engine', ['schema', 'core', 'store', 'import'])).toEqual([])
  })

  it('the page (client) loads no engine or worker code, and from store only the first read', () => {
    expect(crossings('client', ['schema', 'core', 'view', 'wire', 'store'], { valuesOnly: true })).toEqual([])
    const storeFiles = [...imports]
      .filter(([file]) => layerOf(file) === 'client')
      .flatMap(([, list]) =>
        list.flatMap((entry) => (entry.file?.startsWith('src/store/') ? [entry.file] : [])),
      )
    expect(new Set(storeFiles)).toEqual(new Set(['src/store/first-screen.ts']))
  })

  it('the wire loads no engine code (its types only)', () => {
    expect(crossings('wire', ['schema'], { valuesOnly: true })).toEqual([])
  })

  it('only store imports Dexie, and the first read pulls in none of it', () => {
    expect(packageUsers('dexie').every((file) => file.startsWith('src/store/'))).toBe(true)
    expect(packageUsers('dexie').length).toBeGreaterThan(0)
    const firstRead = closure('src/store/first-screen.ts')
    const withDexie = [...firstRead].filter((file) =>
      (imports.get(file) ?? []).some((entry) => entry.pkg === 'dexie' && !entry.typeOnly),
    )
    expect(withDexie).toEqual([])
  })

  it('only wire, client and worker know Comlink', () => {
    const users = packageUsers('comlink').map(layerOf)
    expect(users.length).toBeGreaterThan(0)
    expect(users.filter((layer) => !['wire', 'client', 'worker'].includes(layer))).toEqual([])
  })

  it('the sync sits beside the engine: it may use the engine, the engine never uses it', () => {
    expect(crossings('sync', ['schema', 'core', 'store', 'engine'])).toEqual([])
    for (const [file, list] of imports)
      if (layerOf(file) === 'engine')
        expect(list.filter((entry) => entry.file?.startsWith('src/sync/'))).toEqual([])
  })

  it("the core entry's code reaches no adapter library", () => {
    const loaded = closure('src/index.ts')
    const adapters = [...loaded].flatMap((file) =>
      (imports.get(file) ?? [])
        .filter(
          (entry) =>
            !entry.typeOnly &&
            ['react', 'ai', '@ai-sdk/react', '@assistant-ui/react'].includes(entry.pkg ?? ''),
        )
        .map((entry) => `${file} → ${entry.pkg}`),
    )
    expect(adapters).toEqual([])
  })
})
