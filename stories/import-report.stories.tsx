import type { Meta, StoryObj } from '@storybook/react-vite'
import { h } from '../demo/ui/dom'
import { FolderImport } from '../demo/ui/folder-import'
import piFromTheFuture from '../test/import/fixtures/bad/pi-v4.jsonl?raw'
import claudeSession from '../test/import/fixtures/real/claude/simonw-cct__sample_session.jsonl?raw'
import codexSession from '../test/import/fixtures/real/codex/simonw-cct__sample_codex_session.sanitized.jsonl?raw'
import piSession from '../test/import/fixtures/real/pi/pi__prompt-cache-replay-session.v1.jsonl?raw'
import { sessionOf, storySession } from './support/story-session'
import { Vanilla } from './support/vanilla'

const meta = {
  title: 'Playground/Import report',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

/** A folder as the File System Access API hands it over, built from real session files. */
type Tree = { [name: string]: Tree | string }
type Handle =
  | { kind: 'directory'; name: string; values(): AsyncIterable<Handle> }
  | { kind: 'file'; name: string; getFile(): Promise<File> }

function handleOf(name: string, node: Tree | string): Handle {
  if (typeof node === 'string') {
    // A fixed time, so the report is the same on every run.
    const file = new File([node], name, { lastModified: Date.UTC(2026, 0, 2) })
    return { kind: 'file', name, getFile: async () => file }
  }
  return {
    kind: 'directory',
    name,
    async *values() {
      for (const [child, value] of Object.entries(node)) yield handleOf(child, value)
    },
  }
}

/** Real files (test/import/fixtures/real, see SOURCES.md) where each tool writes them, and one that fails. */
const FOLDER: Tree = {
  pi: {
    agent: {
      sessions: {
        '--home-me-cache--': {
          '2026-01-02T10-00-00-000Z_replay.jsonl': piSession,
          // A format version this importer does not know: refused, with the reason on its line.
          '2026-01-03T10-00-00-000Z_future.jsonl': piFromTheFuture,
        },
      },
    },
  },
  claude: { projects: { '-home-me-decorators': { 'test-session-id.jsonl': claudeSession } } },
  codex: {
    sessions: {
      '2025': {
        '09': { '01': { 'rollout-2025-09-01T08-00-00-test-session.jsonl': codexSession } },
      },
    },
  },
  notes: { 'README.md': '# not a session file, never read\n' },
}

/**
 * "Import a sessions folder" on a folder of Pi, Claude Code and Codex files: the progress
 * count, then one line per file (imported, or failed with its reason). The directory picker is
 * stood in for by an in-memory folder, restored when the story unmounts.
 */
export const FolderOfThreeTools: Story = {
  ...storySession(),
  render: (_args, context) => (
    <Vanilla
      className="sidebar"
      style={{ width: 360, minHeight: '100vh' }}
      mount={(host) => {
        const { client } = sessionOf(context)
        const titles = new Map<string, string>()
        const button = h('button', {
          class: 'button button--block',
          text: 'Import a sessions folder…',
          attrs: { type: 'button', id: 'import-folder' },
        })
        const input = h('input', { class: 'visually-hidden', attrs: { type: 'file', tabindex: -1 } })
        const report = h('div', { class: 'folder-report', attrs: { id: 'folder-report' } })
        host.append(button, input, report)
        new FolderImport(button, input, report, {
          importFiles: (files, onProgress) => client.importFiles(files, onProgress),
          open: () => undefined,
          done: async () => {
            for (const session of await client.listSessions()) titles.set(session.id, session.title)
          },
          titleOf: (id) => titles.get(id),
        })
        const picker = window as { showDirectoryPicker?: unknown }
        const original = Object.getOwnPropertyDescriptor(window, 'showDirectoryPicker')
        picker.showDirectoryPicker = async () => handleOf('agent-sessions', FOLDER)
        button.click()
        return () => {
          if (original) Object.defineProperty(window, 'showDirectoryPicker', original)
          else delete picker.showDirectoryPicker
        }
      }}
    />
  ),
}
