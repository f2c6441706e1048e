/** `assembleSessionDetail` and `recordsToRows` on hand-made records: provider-blind rules. */
import { describe, expect, test } from 'vitest'
import { layoutFormat } from '../../src/import/folder'
import { assembleSessionDetail, recordsToRows } from '../../src/import/index'
import { isSessionlineError } from '../../src/schema/errors'
import type { TranscriptRecord } from '../../src/schema/records'

const session = (countMode: 'total' | 'delta' = 'total'): TranscriptRecord => ({
  type: 'session',
  id: 'f',
  provider: 'codex',
  title: 't',
  messageCount: 2,
  countMode,
})
const records: TranscriptRecord[] = [
  session(),
  {
    type: 'message',
    id: 'u',
    order: 0,
    role: 'user',
    text: 'hi',
    contentType: 'text',
    visibility: 'visible',
  },
  {
    type: 'message',
    id: 'r',
    order: 1,
    role: 'assistant',
    text: '',
    reasoning: 'think',
    contentType: 'reasoning',
    visibility: 'visible',
  },
  {
    type: 'message',
    id: 'a',
    order: 2,
    role: 'assistant',
    text: 'yes',
    contentType: 'text',
    visibility: 'visible',
    usage: { input: 3, output: 1 },
  },
  {
    type: 'message',
    id: 'h',
    order: 3,
    role: 'system',
    text: 'env',
    contentType: 'text',
    isMeta: true,
    visibility: 'hidden',
  },
  {
    type: 'message',
    id: 'old',
    order: 4,
    role: 'assistant',
    text: 'no',
    contentType: 'text',
    visibility: 'inactive',
    usage: { input: 2, output: 2 },
  },
  {
    type: 'tool_result',
    id: 'orphan',
    order: 5,
    callId: 'c9',
    output: 'out',
    isError: false,
    visibility: 'visible',
  },
]

describe('assembleSessionDetail', () => {
  test('groups reasoning with the next assistant message and labels every row', () => {
    const detail = assembleSessionDetail(records)
    expect(detail.messages.map((m) => [m.role, m.visibility, m.parts.map((p) => p.type).join('+')])).toEqual([
      ['user', 'visible', 'text'],
      ['assistant', 'visible', 'reasoning+text'],
      ['assistant', 'visible', 'tool'],
    ])
    expect(detail.usage).toEqual({ input: 5, output: 3, calls: 2 })
  })

  test('never returns hidden rows; inactive ones only when asked', () => {
    const all = assembleSessionDetail(records, { includeInactive: true })
    expect(all.messages.map((m) => m.visibility)).toEqual(['visible', 'visible', 'inactive', 'visible'])
    expect(recordsToRows(records).rows.map((r) => r.visibility)).toContain('hidden')
  })

  test('a result without its call stands as its own row', () => {
    const last = assembleSessionDetail(records).messages.at(-1)!
    expect(last.parts).toEqual([
      { type: 'tool', callId: 'c9', name: '', input: null, output: 'out', isError: false, state: 'done' },
    ])
  })

  test('refuses a delta record set and a mix of records and rows', () => {
    const delta = [session('delta'), ...records.slice(1)]
    expect(() => assembleSessionDetail(delta)).toThrow(/delta/)
    const rows = recordsToRows(records).rows
    const mixed = [...rows, ...records] as unknown as TranscriptRecord[]
    try {
      assembleSessionDetail(mixed)
      expect.unreachable()
    } catch (error) {
      expect(isSessionlineError(error) && error.code).toBe('invalid_input')
    }
  })

  test('an empty input is an empty detail', () => {
    expect(assembleSessionDetail([])).toEqual({
      messages: [],
      outline: [],
      usage: { input: 0, output: 0, calls: 0 },
    })
  })
})

describe('layoutFormat', () => {
  test.each([
    ['home/.pi/agent/sessions/--home-me-app--/2026-01-01T00-00-00_abc.jsonl', 'pi'],
    ['home/.claude/projects/-home-me-app/0b1c.jsonl', 'claude'],
    ['home/.claude/projects/-home-me-app/0b1c/subagents/agent-a1.jsonl', 'claude'],
    ['home/.claude/projects/-home-me-app/agent-a1.jsonl', 'claude'],
    ['home/.codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-uuid.jsonl', 'codex'],
    ['downloads/export.jsonl', undefined],
    ['downloads/readme.md', null],
  ])('%s → %s', (path, format) => {
    expect(layoutFormat(path)).toBe(format)
  })
})
