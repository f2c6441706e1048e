// @vitest-environment happy-dom
/**
 * The playground's turn rail over a real view: a Claude Code session whose prompts were all
 * compacted away has an outline of superseded (`inactive`) turns only, which the view hides, so
 * the rail has no mark and no placeholder.
 */
import { readFileSync } from 'node:fs'
import { expect, test } from 'vitest'
import { Rail } from '../../demo/ui/rail'
import { openPage, until } from '../client/harness'

const FIXTURE = 'test/import/fixtures/real/claude/agent-history__claude_session_with_compaction.jsonl'

test('a rail with no marks asks for no outline (every prompt of the import is inactive)', async () => {
  // Lines 1-10 of the vendored file: two prompts ('Start working…', 'Continue with session
  // management'), their answers, then the compact boundary and its summary; nothing after it.
  const text = readFileSync(FIXTURE, 'utf8').split('\n').slice(0, 10).join('\n')
  const page = await openPage()
  try {
    const { id } = await page.client.importTranscript({ text, name: 'compacted.jsonl' })
    // Both turns are in the outline, both superseded by the compaction.
    const whole = await page.client.outline(id)
    expect(whole.entries.map((e) => [e.turn, e.visibility])).toEqual([
      [1, 'inactive'],
      [2, 'inactive'],
    ])
    const view = page.client.open(id)
    const shown = await until(view, (s) => s.status !== 'loading')
    expect([shown.status, shown.outlineBefore, shown.rail.length]).toEqual(['ready', 0, 0])
    const asked: number[] = []
    const failures: unknown[] = []
    const root = document.createElement('div')
    document.body.append(root)
    const rail = new Rail(root, {
      activate: () => undefined,
      loadBefore: (position) => {
        asked.push(position)
        view.loadOutline(position).catch((error: unknown) => failures.push(error))
      },
    })
    rail.update({ items: shown.rail, before: shown.outlineBefore })
    await page.client.append(id, []).catch(() => undefined) // a round trip for any call it made
    // Before the fix: asked [-1], and loadOutline failed 'Invalid loadOutline from: … >=0'.
    expect(asked).toEqual([])
    expect(failures).toEqual([])
    expect(root.hidden).toBe(true)
    view.dispose()
  } finally {
    await page.close()
  }
})
