// The README's TypeScript snippets a newcomer copies (the Vite app, the AI SDK and assistant-ui
// examples, the worker entries that bring a model) compile as written in a create-vite React + TypeScript app: each block is written to a
// file of its own and type-checked under create-vite's compiler options (noUnusedLocals,
// noUnusedParameters, verbatimModuleSyntax, …), with `sessionline` resolved to this repo's sources.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const readme = readFileSync(join(root, 'README.md'), 'utf8')

/** The sections whose snippets are whole files of an app. */
const SECTIONS = [
  '### In a Vite app',
  '### AI SDK (`sessionline/ai-sdk`)',
  '### assistant-ui (`sessionline/assistant-ui`)',
  // Worker entries with a model of the user's own, against the provider packages themselves.
  '### Bring your own model (AI SDK language models)',
]

interface Snippet {
  section: string
  /** The file it is written to: the path its first comment names, else one of its own. */
  file: string
  code: string
}

/** The `ts`/`tsx` blocks of the README section under `heading` (up to the next heading). */
function snippetsUnder(markdown: string, heading: string): Snippet[] {
  const start = markdown.indexOf(`\n${heading}\n`)
  if (start === -1) throw new Error(`README has no "${heading}"`)
  const rest = markdown.slice(start + heading.length + 2)
  const section = rest.slice(0, rest.search(/\n#{1,6} /))
  const slug = heading.replace(/\W+/g, '-').replace(/^-|-$/g, '').toLowerCase()
  return [...section.matchAll(/```(tsx?)\n([\s\S]*?)```/g)].map((match, i) => {
    const code = match[2]!
    const named = /^\/\/ ((?:src\/)?[\w.-]+\.tsx?)\b/.exec(code)?.[1]
    return { section: heading, file: named ?? `src/${slug}-${i + 1}.tsx`, code }
  })
}

// create-vite's react-ts template (tsconfig.app.json), minus its build-info file.
const CREATE_VITE = {
  target: 'ES2022',
  useDefineForClassFields: true,
  lib: ['ES2022', 'DOM', 'DOM.Iterable'],
  module: 'ESNext',
  types: ['vite/client'],
  skipLibCheck: true,
  moduleResolution: 'bundler',
  allowImportingTsExtensions: true,
  verbatimModuleSyntax: true,
  moduleDetection: 'force',
  noEmit: true,
  jsx: 'react-jsx',
  strict: true,
  noUnusedLocals: true,
  noUnusedParameters: true,
  erasableSyntaxOnly: true,
  noFallthroughCasesInSwitch: true,
  noUncheckedSideEffectImports: true,
}

const work = join(root, '.tmp', `readme-snippets-${process.pid}`)
afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('README snippets', () => {
  const snippets = SECTIONS.flatMap((heading) => snippetsUnder(readme, heading))

  it('are found: the Vite config, main.tsx, a worker entry and both adapter examples', () => {
    expect(snippets.map((snippet) => snippet.file)).toEqual(
      expect.arrayContaining(['vite.config.ts', 'src/main.tsx', 'src/sessionline.worker.ts']),
    )
    expect(snippets.length).toBeGreaterThanOrEqual(5)
  })

  it('type-check under create-vite’s tsconfig, each as a file of its own', () => {
    rmSync(work, { recursive: true, force: true })
    for (const snippet of snippets) {
      mkdirSync(dirname(join(work, snippet.file)), { recursive: true })
      writeFileSync(join(work, snippet.file), snippet.code)
    }
    // main.tsx renders the app's `App` (the package test's), beside it as in that app.
    copyFileSync(join(root, 'test/package/app/src/App.tsx'), join(work, 'src/App.tsx'))
    // The one import this repo does not install: the Vite React plugin's default export.
    writeFileSync(
      join(work, 'plugin-react.d.ts'),
      "declare module '@vitejs/plugin-react' {\n  const react: () => import('vite').PluginOption\n  export default react\n}\n",
    )
    const entry = (path: string) => [join(root, path)]
    writeFileSync(
      join(work, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          ...CREATE_VITE,
          paths: {
            sessionline: entry('src/index.ts'),
            'sessionline/react': entry('src/react.ts'),
            'sessionline/ai-sdk': entry('src/ai-sdk.ts'),
            'sessionline/assistant-ui': entry('src/assistant-ui.ts'),
            'sessionline/worker': entry('worker/index.ts'),
          },
        },
        include: ['**/*'],
      }),
    )
    let output = ''
    try {
      execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', join(work, 'tsconfig.json')], {
        cwd: work,
        encoding: 'utf8',
        stdio: 'pipe',
      })
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error)
    }
    // The library's own sources (paths outside the snippets' folder) are held to tsconfig.json,
    // not to the app's options: only the snippets' diagnostics count here.
    const ours = output.split('\n').filter((line) => /error TS\d+/.test(line) && !line.startsWith('..'))
    expect(ours).toEqual([])
  }, 120_000)
})
