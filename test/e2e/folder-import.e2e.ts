import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { demoSuite, noticeText, screenshot } from './harness'

const { start, figures } = demoSuite()

const fixture = (path: string) => fileURLToPath(new URL(`../import/fixtures/${path}`, import.meta.url))

/**
 * A sessions folder laid out the way each tool writes its files (see src/import/folder.ts):
 * Pi `sessions/--<cwd>--/<time>_<id>.jsonl`, Claude Code `projects/<project>/<session>.jsonl`,
 * Codex `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`. Every session file has its own
 * session identity (checked by parsing them), so each is a session of its own.
 */
const LAYOUT: Record<string, string> = {
  'pi/agent/sessions/--home-me-parser--/2026-04-06T04-00-00-000Z_replay-session-1.jsonl':
    'real/pi/pi__prompt-cache-replay-session.v1.jsonl',
  'pi/agent/sessions/--home-me-docs--/2026-02-01T10-00-00-000Z_fx-tree-v3.jsonl':
    'pi/tree-v3-branch-compaction.jsonl',
  'pi/agent/sessions/--home-me-docs--/2026-02-02T10-00-00-000Z_fx-tree-v2.jsonl':
    'pi/tree-v2-retained-tail.jsonl',
  'pi/agent/sessions/--home-me-hello--/2026-02-03T10-00-00-000Z_fx-null-leaf.jsonl': 'pi/null-leaf-v3.jsonl',
  // A file of the newer Pi format, which the importer refuses: it must be reported failed, with why.
  'pi/agent/sessions/--home-me-hello--/2026-02-04T10-00-00-000Z_v4.jsonl': 'bad/pi-v4.jsonl',
  'claude/projects/-home-me-decorators/test_session.jsonl':
    'real/claude/claude-code-log__representative_messages.jsonl',
  'claude/projects/-home-me-decorators/test-session-id.jsonl': 'real/claude/simonw-cct__sample_session.jsonl',
  'claude/projects/-home-me-agents/88a8d761-7b9a-4bf1-a8ca-c1febe6bf358.jsonl':
    'real/claude/claude-code-log__sidechain_integrated.jsonl',
  'claude/projects/-home-me-agents/s1.jsonl': 'real/claude/claude-code-log__dag_compact_after_rewind.jsonl',
  'codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl':
    'real/codex/claude-code-log__rollout-2026-01-02T03-04-05-11111111.jsonl',
  'codex/sessions/2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl':
    'real/codex/claude-code-log__rollout-2026-01-03T04-05-06-22222222.jsonl',
  'codex/sessions/2025/09/01/rollout-2025-09-01T08-00-00-test-session.jsonl':
    'real/codex/simonw-cct__sample_codex_session.sanitized.jsonl',
}
const SESSION_FILES = Object.keys(LAYOUT).length - 1 // all but the refused one
const CHANGED =
  'codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl'

async function writeFolder(): Promise<{ root: string; folder: string }> {
  const root = await mkdtemp(join(tmpdir(), 'sessionline-folder-'))
  const folder = join(root, 'agent-sessions')
  for (const [path, source] of Object.entries(LAYOUT)) {
    await mkdir(dirname(join(folder, path)), { recursive: true })
    await copyFile(fixture(source), join(folder, path))
  }
  // Not session files: ignored, never reported.
  await writeFile(join(folder, 'README.md'), '# my agent sessions\n')
  await writeFile(join(folder, 'codex', 'config.toml'), 'model = "x"\n')
  return { root, folder }
}

interface FolderReport {
  state: string | undefined
  summary: string
  counts: Record<string, number>
  lines: { status: string; path: string; reason: string }[]
}

/** Chooses `folder` in the webkitdirectory input and waits for the finished report. */
async function importFolder(page: Page, folder: string): Promise<FolderReport> {
  await page.$eval('#folder-report', (report) => {
    delete (report as HTMLElement).dataset.state
  })
  await page.setInputFiles('#import-folder-input', folder)
  await page.waitForSelector('#folder-report[data-state="done"]', { timeout: 30_000 })
  return page.$eval('#folder-report', (report) => {
    const data = (report as HTMLElement).dataset
    const counts: Record<string, number> = {}
    for (const status of ['imported', 'updated', 'unchanged', 'failed']) counts[status] = Number(data[status])
    return {
      state: data.state,
      summary: report.querySelector('.folder-report__summary')?.textContent ?? '',
      counts,
      lines: [...report.querySelectorAll<HTMLElement>('.folder-report__item')].map((item) => ({
        status: item.dataset.status ?? '',
        path: item.dataset.path ?? '',
        reason: item.querySelector('.folder-report__reason')?.textContent ?? '',
      })),
    }
  })
}

/** `count` distinct Codex sessions (the real rollout, each with its own id and first prompt), a few per day. */
async function writeLargeFolder(count: number): Promise<{ root: string; folder: string }> {
  const root = await mkdtemp(join(tmpdir(), 'sessionline-folder-'))
  const folder = join(root, 'codex-home')
  const text = await readFile(
    fixture('real/codex/claude-code-log__rollout-2026-01-02T03-04-05-11111111.jsonl'),
    'utf8',
  )
  for (let n = 0; n < count; n++) {
    const id = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
    const day = String(1 + (n % 28)).padStart(2, '0')
    const path = join(folder, 'sessions', '2026', '02', day, `rollout-2026-02-${day}T10-00-00-${id}.jsonl`)
    await mkdir(dirname(path), { recursive: true })
    await writeFile(
      path,
      text
        .replaceAll('11111111-1111-4111-8111-111111111111', id)
        .replaceAll('List the synthetic files.', `Session ${n}: list the synthetic files.`),
    )
  }
  return { root, folder }
}

describe('importing a sessions folder in Chromium', () => {
  test('folder: imports each session file once, skips unchanged files, updates a changed one', async () => {
    const { root, folder } = await writeFolder()
    try {
      const { page } = await start()
      const before = await page.$$eval('.sessions__item', (items) => items.length)
      // Every progress text the report shows, to see it count up while the worker works.
      await page.evaluate(() => {
        const seen: string[] = []
        ;(window as unknown as { progressSeen: string[] }).progressSeen = seen
        const report = document.querySelector('#folder-report')!
        new MutationObserver(() => {
          const text = report.querySelector('.folder-report__summary')?.textContent ?? ''
          if (text.startsWith('Importing') && seen.at(-1) !== text) seen.push(text)
        }).observe(report, { subtree: true, childList: true, characterData: true })
      })

      const started = Date.now()
      const first = await importFolder(page, folder)
      figures[`import a folder of ${SESSION_FILES + 1} session files`] = `${Date.now() - started} ms`
      expect(first.counts).toEqual({ imported: SESSION_FILES, updated: 0, unchanged: 0, failed: 1 })
      expect(first.summary).toBe(`${SESSION_FILES + 1} session files · ${SESSION_FILES} imported · 1 failed`)
      // One line per session file, the failure first and with its reason; nothing else reported.
      expect(first.lines.map((line) => line.path).sort()).toEqual(
        Object.keys(LAYOUT)
          .map((path) => `agent-sessions/${path}`)
          .sort(),
      )
      expect(first.lines[0]).toMatchObject({ status: 'failed', path: expect.stringContaining('_v4.jsonl') })
      // nothing skipped silently: the rollout's unknown line 14 is in its report line
      expect(first.lines.find((line) => line.path === `agent-sessions/${CHANGED}`)?.reason).toBe(
        '1 line skipped: 1 of an unknown type (line 14)',
      )
      expect(first.lines[0]!.reason.length).toBeGreaterThan(10)
      const progress = await page.evaluate(
        () => (window as unknown as { progressSeen: string[] }).progressSeen,
      )
      expect(progress[0]).toBe(`Importing 0 / ${SESSION_FILES + 1}…`)

      // The sessions are in the list, one each.
      await expect
        .poll(() => page.$$eval('.sessions__item', (items) => items.length))
        .toBe(before + SESSION_FILES)
      for (const title of [
        'Write a hello world function',
        'List the synthetic files.',
        'Rename the config loader', // the tree's first user message, as Pi's session list shows it
      ]) {
        expect(await page.locator('.sessions__title', { hasText: title }).count()).toBe(1)
      }
      await screenshot(page, 'folder-report')

      // A report line opens its session.
      await page.click('.folder-report__item[data-path$="fx-tree-v3.jsonl"] .folder-report__main')
      await page.waitForSelector('.sessions__open[aria-current] >> text=Rename the config loader')
      await page.waitForSelector('.transcript__rows > .row')

      // The same folder again: nothing to do.
      const second = await importFolder(page, folder)
      expect(second.counts).toEqual({ imported: 0, updated: 0, unchanged: SESSION_FILES, failed: 1 })
      expect(await page.$$eval('.sessions__item', (items) => items.length)).toBe(before + SESSION_FILES)

      // One file changes (its first prompt is edited): only that one is updated, in place.
      const changed = join(folder, CHANGED)
      const text = await readFile(changed, 'utf8')
      expect(text).toContain('List the synthetic files.')
      await writeFile(
        changed,
        text.replaceAll('List the synthetic files.', 'List the synthetic files, please.'),
      )
      const third = await importFolder(page, folder)
      expect(third.counts).toEqual({ imported: 0, updated: 1, unchanged: SESSION_FILES - 1, failed: 1 })
      expect(third.lines.find((line) => line.status === 'updated')?.path).toBe(`agent-sessions/${CHANGED}`)
      await expect
        .poll(() =>
          page.locator('.sessions__title', { hasText: 'List the synthetic files, please.' }).count(),
        )
        .toBe(1)
      expect(await page.$$eval('.sessions__item', (items) => items.length)).toBe(before + SESSION_FILES)

      // Where the browser has a directory picker the button uses it and walks the folder itself.
      // The native picker cannot be driven here, so a stand-in hands over the same kind of handles.
      const codex =
        'codex/sessions/2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl'
      await page.evaluate(
        ({ path, text }) => {
          type Entry = { kind: 'file'; name: string; getFile(): Promise<File> } | Directory
          type Directory = { kind: 'directory'; name: string; values(): AsyncIterable<Entry> }
          const file = (name: string, body: string): Entry => ({
            kind: 'file',
            name,
            getFile: async () => new File([body], name),
          })
          const directory = (name: string, entries: Entry[]): Directory => ({
            kind: 'directory',
            name,
            async *values() {
              yield* entries
            },
          })
          const parts = path.split('/')
          let tree: Entry = file(parts.at(-1)!, text)
          for (const name of parts.slice(0, -1).reverse()) tree = directory(name, [tree])
          const root = directory('picked', [
            tree,
            directory('node_modules', [file('never-read.jsonl', 'not a session')]),
            file('notes.txt', 'not a session either'),
          ])
          ;(window as unknown as { showDirectoryPicker: () => Promise<Directory> }).showDirectoryPicker =
            async () => root
        },
        { path: codex, text: await readFile(join(folder, codex), 'utf8') },
      )
      await page.$eval('#folder-report', (report) => {
        delete (report as HTMLElement).dataset.state
      })
      await page.click('#import-folder')
      await page.waitForSelector('#folder-report[data-state="done"]')
      expect(
        await page.$$eval('.folder-report__item', (items) =>
          items.map(
            (item) => `${(item as HTMLElement).dataset.status} ${(item as HTMLElement).dataset.path}`,
          ),
        ),
      ).toEqual([`unchanged picked/${codex}`])
      expect(await noticeText(page)).toBe('')
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  test('folder: a large folder shows its progress counting up, then imports every file', async () => {
    const count = 400
    const { root, folder } = await writeLargeFolder(count)
    try {
      const { page } = await start()
      await page.evaluate(() => {
        const seen: number[] = []
        ;(window as unknown as { progressSeen: number[] }).progressSeen = seen
        const report = document.querySelector('#folder-report')!
        new MutationObserver(() => {
          const done = /^Importing (\d+) \//.exec(
            report.querySelector('.folder-report__summary')?.textContent ?? '',
          )
          if (done && seen.at(-1) !== Number(done[1])) seen.push(Number(done[1]))
        }).observe(report, { subtree: true, childList: true, characterData: true })
      })
      let started = Date.now()
      const first = await importFolder(page, folder)
      const ms = Date.now() - started
      expect(first.counts).toEqual({ imported: count, updated: 0, unchanged: 0, failed: 0 })
      const seen = await page.evaluate(() => (window as unknown as { progressSeen: number[] }).progressSeen)
      // It counted up, in order, from 0, showing several values on the way.
      expect(seen[0]).toBe(0)
      expect(seen).toEqual([...seen].sort((a, b) => a - b))
      expect(seen.length).toBeGreaterThanOrEqual(3)
      expect(seen.at(-1)).toBeLessThanOrEqual(count)
      await expect.poll(() => page.$$eval('.sessions__item', (items) => items.length)).toBe(count + 1)
      started = Date.now()
      const again = await importFolder(page, folder)
      figures[`folder of ${count} files: import / re-import (all unchanged)`] =
        `${ms} ms / ${Date.now() - started} ms`
      figures[`folder of ${count} files: progress values shown`] = String(seen.length)
      expect(again.counts).toEqual({ imported: 0, updated: 0, unchanged: count, failed: 0 })
      expect(await noticeText(page)).toBe('')
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})
