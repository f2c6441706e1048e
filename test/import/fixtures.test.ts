/**
 * Every real fixture (../shared/fixtures/transcripts) and every Pi tree written for these
 * tests imports, with its counts, usage totals and visible/inactive split checked against
 * figures read off the file by hand (each case says how).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { assembleSessionDetail, parseTranscript, recordsToRows } from '../../src/import/index'
import { SessionMessage } from '../../src/schema/messages'
import { isOrderedRecord, TranscriptRecord } from '../../src/schema/records'
import { listJsonl, ownFixtures, sharedTranscripts } from './fixture-paths'

interface Expected {
  format: 'pi' | 'claude' | 'codex'
  sessionId: string
  /** `message` records, `tool_call`, `tool_result` (and how many found their call), `summary`. */
  messages: number
  calls: number
  results: number
  paired: number
  summaries: number
  /** Ordered records (messages, results, summaries) by visibility. */
  visible: number
  inactive: number
  hidden: number
  /** The session record's count: visible messages with content of their own. */
  messageCount: number
  usage: { input: number; output: number; calls: number }
  rows: number
  skippedLines?: number
  /** Visible ordered record ids in order, where the order is the point of the fixture. */
  visibleIds?: string[]
  turns?: number
}

const expected: Record<string, Expected> = {
  // 6 v1 entries (no ids): user, assistant (1 toolCall), toolResult, assistant, user, assistant;
  // all on the one path, so all visible. Usage input = input + cacheRead + cacheWrite:
  // (10+0+0) + (30+10+0) + (45+22+0) = 117; output 20 + 15 + 12 = 47; 3 calls.
  'pi/pi__prompt-cache-replay-session.v1.jsonl': {
    format: 'pi',
    sessionId: 'replay-session-1',
    messages: 5,
    calls: 1,
    results: 1,
    paired: 1,
    summaries: 0,
    visible: 6,
    inactive: 0,
    hidden: 0,
    messageCount: 5,
    usage: { input: 117, output: 47, calls: 3 },
    rows: 5,
    visibleIds: ['v1-1', 'v1-2', 'v1-3', 'v1-4', 'v1-5', 'v1-6'],
    turns: 2,
  },
  // 12 lines. The compact_boundary line makes no record; the isCompactSummary line is a
  // summary; the other 10 are messages, all visible (the format does not say which branch of
  // the rewind fork is current). 5 assistant lines with distinct message ids, 10 in / 5 out each.
  'claude/claude-code-log__dag_compact_after_rewind.jsonl': {
    format: 'claude',
    sessionId: 's1',
    messages: 10,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 1,
    visible: 11,
    inactive: 0,
    hidden: 0,
    messageCount: 10,
    usage: { input: 50, output: 25, calls: 5 },
    rows: 11,
    turns: 5,
  },
  // 10 user/assistant lines + 1 summary line (the title). msg_005 and msg_009 only carry
  // tool_result blocks: 2 results (paired with tool_001, tool_002), no message of their own;
  // 9 messages. Usage: 5 assistant lines, input 25+45+78+25+45 = 218, output 120+85+95+35+110 = 445.
  'claude/claude-code-log__representative_messages.jsonl': {
    format: 'claude',
    sessionId: 'test_session',
    messages: 9,
    calls: 2,
    results: 2,
    paired: 2,
    summaries: 0,
    visible: 11,
    inactive: 0,
    hidden: 0,
    messageCount: 9,
    usage: { input: 218, output: 445, calls: 5 },
    rows: 9,
    turns: 4,
  },
  // 6 lines: 4 assistant lines (2 main, 2 sidechain), 2 user lines with only a tool_result.
  // Calls: Task (main), Grep (sidechain). Results: the Task result pairs; the sidechain result
  // answers toolu_011V…, whose call was trimmed from the file. The two sidechain assistant lines
  // share message.id msg_017z… + requestId req_…51ytk…: their usage counts once.
  // input (3+141272+0) + (3+19830+0) + (3+2952+141272) = 305335; output 365+183+190 = 738.
  'claude/claude-code-log__sidechain_integrated.jsonl': {
    format: 'claude',
    sessionId: '88a8d761-7b9a-4bf1-a8ca-c1febe6bf358',
    messages: 4,
    calls: 2,
    results: 2,
    paired: 1,
    summaries: 0,
    visible: 6,
    inactive: 0,
    hidden: 0,
    messageCount: 4,
    usage: { input: 305335, output: 738, calls: 3 },
    rows: 5,
    turns: 0,
  },
  // summary line (title) + 7 lines: msg-003 and msg-005 are tool results (paired), 5 messages;
  // no usage in the file.
  'claude/simonw-cct__sample_session.jsonl': {
    format: 'claude',
    sessionId: 'test-session-id',
    messages: 5,
    calls: 2,
    results: 2,
    paired: 2,
    summaries: 0,
    visible: 7,
    inactive: 0,
    hidden: 0,
    messageCount: 5,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 5,
    turns: 2,
  },
  // 14 lines: the user and agent messages each appear as event_msg and response_item (kept
  // once); 1 reasoning item (summary text only); 3 tool calls (function, custom, mcp function),
  // each its own tool-use message, with 3 outputs paired by call_id; the future record type is
  // skipped. Messages: user, reasoning, 3 tool-use, agent = 6 (count 5: reasoning has no
  // content of its own). Rows: the reasoning joins the first tool-use message: 5.
  'codex/claude-code-log__rollout-2026-01-02T03-04-05-11111111.jsonl': {
    format: 'codex',
    sessionId: '11111111-1111-4111-8111-111111111111',
    messages: 6,
    calls: 3,
    results: 3,
    paired: 3,
    summaries: 0,
    visible: 9,
    inactive: 0,
    hidden: 0,
    messageCount: 5,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 5,
    turns: 1,
  },
  // session_meta, user event, spawn_agent function_call (+ its output), collab_tool_call event
  // (not a record we read): user + tool-use message, 1 paired result.
  'codex/claude-code-log__rollout-2026-01-03T04-05-06-22222222.jsonl': {
    format: 'codex',
    sessionId: '22222222-2222-4222-8222-222222222222',
    messages: 2,
    calls: 1,
    results: 1,
    paired: 1,
    summaries: 0,
    visible: 3,
    inactive: 0,
    hidden: 0,
    messageCount: 2,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 2,
    turns: 1,
  },
  // session_meta carries instructions (a hidden system message), then a user message and an
  // assistant message holding reasoning + text.
  'codex/simonw-cct__sample_codex_session.sanitized.jsonl': {
    format: 'codex',
    sessionId: 'test-session',
    messages: 3,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 2,
    inactive: 0,
    hidden: 1,
    messageCount: 2,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 3,
    turns: 1,
  },
  // Leaf (last line, durable) = d2. Path a1 a2 a3 b1 b2 b3 b4 c1 d1 d2; last compaction c1 keeps
  // from b2: context = c1, b2, b3, b4 (display:false: hidden), d1, d2. Inactive: the abandoned
  // a4/a5 attempt, the path before b2 (a1 a2 a3 b1) and the retry e1. Messages a1 a2 a4 b2 b4 d1
  // d2 e1 = 8; results a3 a5 b3 (b3 answers b2's call_2, not a4's reused call_2); summaries b1 c1.
  // Usage: a2 150/20, a4 300/30, b1 300/40, b2 600/50, c1 600/80, d2 700/60, e1 710/90.
  'fixtures/pi/tree-v3-branch-compaction.jsonl': {
    format: 'pi',
    sessionId: 'fx-tree-v3',
    messages: 8,
    calls: 3,
    results: 3,
    paired: 3,
    summaries: 2,
    visible: 5,
    inactive: 7,
    hidden: 1,
    messageCount: 3,
    usage: { input: 3360, output: 370, calls: 7 },
    rows: 10,
    visibleIds: ['c1', 'b2', 'b3', 'd1', 'd2'],
    turns: 1,
  },
  // Line 7 is cut off (skipped). Leaf = n2 (durable leaf line; the last entries o1/o2 hang
  // from a missing parent: an orphan root). Path m1 m2 m3 m4 h1 c1 n1 n2; c1 carries a
  // retainedTail (copies of m3, m4): context = c1, c1#tail0, c1#tail1, n1, n2. Inactive: m1-m4,
  // h1 (a v2 hookMessage), o1, o2: 11 messages with the two copies. Usage: m2 50/10, m4 100/15, c1 90/25, n2 190/20, o2 5/2; the
  // tail copy of m4 is not counted again.
  'fixtures/pi/tree-v2-retained-tail.jsonl': {
    format: 'pi',
    sessionId: 'fx-tree-v2',
    messages: 11,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 1,
    visible: 5,
    inactive: 7,
    hidden: 0,
    messageCount: 4,
    usage: { input: 435, output: 72, calls: 5 },
    rows: 12,
    skippedLines: 1,
    visibleIds: ['c1', 'c1#tail0', 'c1#tail1', 'n1', 'n2'],
    turns: 2,
  },
  // A durable leaf line with targetId null: an empty context, everything inactive; the one
  // call still counts.
  'fixtures/pi/null-leaf-v3.jsonl': {
    format: 'pi',
    sessionId: 'fx-null-leaf',
    messages: 2,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 0,
    inactive: 2,
    hidden: 0,
    messageCount: 0,
    usage: { input: 10, output: 5, calls: 1 },
    rows: 2,
    turns: 0,
  },
}

const files = [
  ...listJsonl(sharedTranscripts).map((file) => ({ file, key: path.relative(sharedTranscripts, file) })),
  ...listJsonl(path.join(ownFixtures, 'pi')).map((file) => ({
    file,
    key: path.relative(path.dirname(ownFixtures), file),
  })),
]

describe('fixtures', () => {
  test('the shared fixture folder is there and every file in it has expectations', () => {
    const shared = files.filter((f) => f.file.startsWith(sharedTranscripts))
    expect(shared.length).toBeGreaterThanOrEqual(8)
    for (const { key } of files) expect(Object.keys(expected), key).toContain(key)
  })

  test.each(files)('$key imports with the counts read off the file', ({ file, key }) => {
    const want = expected[key]!
    const { format, records, skippedLines } = parseTranscript(readFileSync(file, 'utf8'))
    for (const record of records) TranscriptRecord.parse(record) // every record fits the schema
    expect(format).toBe(want.format)
    expect(skippedLines).toBe(want.skippedLines ?? 0)
    const session = records[0]!
    expect(session.type).toBe('session')
    if (session.type !== 'session') return
    expect(session.id).toBe(want.sessionId)
    expect(session.provider).toBe(want.format)
    expect(session.messageCount).toBe(want.messageCount)
    const of = (type: string) => records.filter((r) => r.type === type)
    expect(of('message')).toHaveLength(want.messages)
    expect(of('tool_call')).toHaveLength(want.calls)
    expect(of('tool_result')).toHaveLength(want.results)
    expect(of('tool_result').filter((r) => r.type === 'tool_result' && r.callRecordId)).toHaveLength(
      want.paired,
    )
    expect(of('summary')).toHaveLength(want.summaries)
    const ordered = records.filter(isOrderedRecord).sort((a, b) => a.order - b.order)
    const split = (v: string) => ordered.filter((r) => r.visibility === v).length
    expect({ visible: split('visible'), inactive: split('inactive'), hidden: split('hidden') }).toEqual({
      visible: want.visible,
      inactive: want.inactive,
      hidden: want.hidden,
    })
    if (want.visibleIds) {
      expect(ordered.filter((r) => r.visibility === 'visible').map((r) => r.id)).toEqual(want.visibleIds)
    }
    const stored = recordsToRows(records)
    for (const row of stored.rows) SessionMessage.parse(row) // rows fit the stored schema
    expect(stored.usage).toEqual(want.usage)
    expect(stored.rows).toHaveLength(want.rows)
    expect(stored.rows.map((r) => r.seq)).toEqual(stored.rows.map((_, i) => i + 1))
    if (want.turns !== undefined) expect(stored.outline).toHaveLength(want.turns)
    // records → rows → detail equals records → detail
    for (const includeInactive of [false, true]) {
      expect(assembleSessionDetail(stored.rows, { includeInactive })).toEqual(
        assembleSessionDetail(records, { includeInactive }),
      )
    }
  })
})

describe('details of the Pi tree fixtures', () => {
  const read = (name: string) =>
    parseTranscript(readFileSync(path.join(ownFixtures, 'pi', name), 'utf8')).records

  test('the legacy compaction summary comes first, then the kept entries, then the rest', () => {
    const detail = assembleSessionDetail(read('tree-v3-branch-compaction.jsonl'))
    expect(detail.messages.map((m) => [m.role, m.parts.map((p) => p.type).join('+')])).toEqual([
      ['summary', 'text'],
      ['assistant', 'reasoning+text+tool'],
      ['user', 'text'],
      ['assistant', 'text'],
    ])
    const tool = detail.messages[1]!.parts[2]!
    expect(tool).toMatchObject({
      type: 'tool',
      callId: 'call_2',
      name: 'bash',
      output: '3 files changed',
      state: 'done',
    })
    expect(detail.outline).toEqual([
      { turn: 1, seq: 8, prompt: 'Now update the docs', response: 'Docs updated.' },
    ])
  })

  test('includeInactive adds superseded history, labelled, and never the hidden message', () => {
    const all = assembleSessionDetail(read('tree-v3-branch-compaction.jsonl'), { includeInactive: true })
    expect(all.messages.map((m) => m.visibility)).toEqual([
      'inactive', // a1
      'inactive', // a2 (+ a3 attached)
      'inactive', // a4 (+ a5 attached, an error)
      'inactive', // b1 branch summary
      'visible', // c1
      'visible', // b2 (+ b3)
      'visible', // d1
      'visible', // d2
      'inactive', // e1
    ])
    expect(all.messages[2]!.parts[1]).toMatchObject({ isError: true, state: 'error' })
  })

  test('retained-tail copies are visible, carry no usage, and keep turn order', () => {
    const detail = assembleSessionDetail(read('tree-v2-retained-tail.jsonl'))
    expect(detail.messages.map((m) => [m.role, m.usage?.input ?? 0])).toEqual([
      ['summary', 90],
      ['user', 0],
      ['assistant', 0],
      ['user', 0],
      ['assistant', 190],
    ])
    expect(detail.outline.map((e) => [e.turn, e.prompt, e.response])).toEqual([
      [1, 'Make it configurable', 'Done: size is an option.'],
      [2, 'Add metrics', 'Metrics added.'],
    ])
  })

  test('v1 ids are derived from positions, so importing twice gives the same ids', () => {
    const text = readFileSync(
      path.join(sharedTranscripts, 'pi/pi__prompt-cache-replay-session.v1.jsonl'),
      'utf8',
    )
    expect(parseTranscript(text).records).toEqual(parseTranscript(text).records)
  })
})
