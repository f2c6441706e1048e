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
import type { SkippedLines } from '../../src/schema/session'
import { listJsonl, ownFixtures, sharedTranscripts } from './fixture-paths'

interface Expected {
  format: 'pi' | 'claude' | 'codex'
  sessionId: string
  title: string
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
  /** Lines left out, by reason, with the first line numbers (none when absent). */
  skipped?: SkippedLines[]
  /** Visible ordered record ids in order, where the order is the point of the fixture. */
  visibleIds?: string[]
  /** Outline entries: visible turns (human prompts on the current path) and superseded ones. */
  turns: number
  inactiveTurns?: number
  /** A sub-agent's file: the file session id of its parent. */
  parentSessionId?: string
}

const expected: Record<string, Expected> = {
  // 6 v1 entries (no ids): user, assistant (1 toolCall), toolResult, assistant, user, assistant;
  // all on the one path, so all visible. Usage input = input + cacheRead + cacheWrite:
  // (10+0+0) + (30+10+0) + (45+22+0) = 117; output 20 + 15 + 12 = 47; 3 calls. Title: line 2,
  // the first user message, as Pi lists it.
  'pi/pi__prompt-cache-replay-session.v1.jsonl': {
    format: 'pi',
    sessionId: 'replay-session-1',
    title:
      '<user_message_time>Monday, April 6, 2026 at 12:00 PM GMT+8</user_message_time> Review the parser be…',
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
  // 6 lines, a recorded v3 session: header, session_info (name: the title), model and thinking
  // changes (no records), user e2e044ff, assistant 65697c71 (433 in / 9 out), both on the path.
  'pi/agent-history__real_session-01.jsonl': {
    format: 'pi',
    sessionId: '019e963d-6bd6-7ade-8a49-256ac3391bdd',
    title: 'agent-history pi smoke',
    messages: 2,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 2,
    inactive: 0,
    hidden: 0,
    messageCount: 2,
    usage: { input: 433, output: 9, calls: 1 },
    rows: 2,
    turns: 1,
  },
  // 1003 lines of a real v1 session (counted with jq over the file, not with the adapter):
  // 990 message entries (484 assistant, 448 toolResult, 55 user, 3 bashExecution), 2
  // compactions (lines 360 and 629), 5 model and 5 thinking-level changes. The last compaction
  // (line 629, firstKeptEntryIndex 551) keeps entries 551..627, then everything after it:
  // 445 messages (219 assistant, 192 toolResult, 31 user, 3 bashExecution) + its summary = 446
  // visible; the other 990 + 2 - 446 = 546 are inactive (the first compaction among them).
  // 454 toolCall blocks, all 448 results answer one. Usage over the 469 assistant messages and 2
  // compactions with tokens: input + cacheRead + cacheWrite = 56382684, output 187895, 471
  // calls. Rows: 542 messages + 2 summaries (results fill their calls). Turns: 31 user
  // messages in the context, 24 before it. Title: line 2, the first user message.
  'pi/pi-mono__before-compaction.jsonl': {
    format: 'pi',
    sessionId: 'ffae836b-9420-4060-ac13-7745215f90ff',
    title:
      'alright, read @packages/coding-agent/src/main.ts @packages/coding-agent/src/tui/tui-renderer.ts in …',
    messages: 542,
    calls: 454,
    results: 448,
    paired: 448,
    summaries: 2,
    visible: 446,
    inactive: 546,
    hidden: 0,
    messageCount: 253,
    usage: { input: 56382684, output: 187895, calls: 471 },
    rows: 544,
    turns: 31,
    inactiveTurns: 24,
  },
  // 12 lines. The current chain from p1a: p1a p1u cs, then the compact_boundary (line 9, no
  // record), through logicalParentUuid to b2a2 b2u2 b2a b2u a1 u1, which the compaction
  // replaced (inactive); b1u/b1a (lines 3-4) are the rewound fork, off the chain (inactive).
  // Visible: the summary cs, p1u, p1a. 5 assistant lines with distinct ids, 10 in / 5 out each.
  // Turns: p1u visible; Start, First attempt, Second attempt, Keep going superseded.
  'claude/claude-code-log__dag_compact_after_rewind.jsonl': {
    format: 'claude',
    sessionId: 's1',
    title: 'Start',
    messages: 10,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 1,
    visible: 3,
    inactive: 8,
    hidden: 0,
    messageCount: 2,
    usage: { input: 50, output: 25, calls: 5 },
    rows: 11,
    visibleIds: ['cs', 'p1u', 'p1a'],
    turns: 1,
    inactiveTurns: 4,
  },
  // 10 user/assistant lines + 1 summary line whose leafUuid msg_011 is line 11 of this file
  // (the title). No parentUuid anywhere: the entries follow each other, all visible. msg_005 and
  // msg_009 only carry tool_result blocks: 2 results (paired with tool_001, tool_002), no
  // message of their own; 9 messages. Usage: 5 assistant lines, input 25+45+78+25+45 = 218,
  // output 120+85+95+35+110 = 445.
  'claude/claude-code-log__representative_messages.jsonl': {
    format: 'claude',
    sessionId: 'test_session',
    title:
      'User learned about Python decorators, including basic decorators and parameterized decorators. Crea…',
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
  // The sidechain lines 3-5 are the sub-agent's transcript (hidden here). Calls: Task (main),
  // Grep (sidechain). Results: the Task result pairs; the sidechain result answers toolu_011V…,
  // whose call was trimmed from the file. The two sidechain assistant lines share message.id
  // msg_017z… + requestId req_…51ytk… with equal counts: counted once.
  // input (3+141272+0) + (3+19830+0) + (3+2952+141272) = 305335; output 365+183+190 = 738.
  // No human prompt in the file: no turn, the default title. Lines 1 and 5 name parents the
  // trimmed file does not hold (8ae40e91…, 718670f5…): reported, and read in file order.
  'claude/claude-code-log__sidechain_integrated.jsonl': {
    format: 'claude',
    sessionId: '88a8d761-7b9a-4bf1-a8ca-c1febe6bf358',
    title: 'Claude Code session',
    messages: 4,
    calls: 2,
    results: 2,
    paired: 1,
    summaries: 0,
    visible: 3,
    inactive: 0,
    hidden: 3,
    messageCount: 2,
    usage: { input: 305335, output: 738, calls: 3 },
    rows: 5,
    skipped: [{ reason: 'missing_parent', count: 2, lines: [1, 5] }],
    turns: 0,
  },
  // summary line whose leafUuid "test-leaf-uuid" is no line of this file (not the title) + 7
  // lines without parentUuid (file order): msg-003 and msg-005 are tool results (paired), 5
  // messages; no usage in the file. Title: the first prompt, line 2.
  'claude/simonw-cct__sample_session.jsonl': {
    format: 'claude',
    sessionId: 'test-session-id',
    title: 'Create a hello world function',
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
  // 19 lines. Lines 13, 15, 16 are JSON but not objects; 14 has no type; 10 (no message) and 11
  // (message is a string) have nothing to show; 11's uuid comes back on line 12 with content,
  // which is read. Messages: lines 1 2 3 4 6 7 8 9 12 17 18 = 11; line 6 (caveat), 7 (slash
  // command /test-command) and 8 (command output) are not prompts. No parentUuid: each entry
  // follows the one before; the last entry, line 18, repeats uuid edge_010 of line 10, so the
  // chain runs 10 9 8 … 1 and leaves line 12 (edge_011) and line 17 off it: inactive. Line 17
  // names parent assistant_003, which the file does not hold: reported, and read after the
  // conversation entry before it (line 12), so still off the chain. Calls: lines 4, 9, 17; the one result (line 5, an error)
  // pairs. Usage: 35+200+85+168 = 488 in, 145+25+180+85 = 435 out. Turns: lines 1, 3, 18
  // visible, 12 superseded. Title: the summary, its leafUuid edge_011 being line 11.
  'claude/claude-code-log__edge_cases.jsonl': {
    format: 'claude',
    sessionId: 'edge_cases',
    title:
      'Tested various edge cases including markdown formatting, long text, tool errors, system messages, c…',
    messages: 11,
    calls: 3,
    results: 1,
    paired: 1,
    summaries: 0,
    visible: 10,
    inactive: 2,
    hidden: 0,
    messageCount: 9,
    usage: { input: 488, output: 435, calls: 4 },
    rows: 11,
    skipped: [
      { reason: 'not_an_object', count: 3, lines: [13, 15, 16] },
      { reason: 'missing_parent', count: 1, lines: [17] },
      { reason: 'empty_entry', count: 2, lines: [10, 11] },
      { reason: 'unknown_type', count: 1, lines: [14] },
    ],
    turns: 3,
    inactiveTurns: 1,
  },
  // A 2.1 parent (12 lines, no sidechain lines): user sc-u1, assistants sc-a1 (text + call),
  // sc-a2, sc-a3 (a call each), sc-a4 (text + two Agent calls), sc-a5; 5 user lines with one
  // tool_result each, all paired. Usage: 5 responses of 120 in / 40 out.
  'claude/claude-code-log__minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl': {
    format: 'claude',
    sessionId: '55550000-0000-4000-8000-000000000001',
    title:
      'Give me a tour of the repository: its structure, then compare the web and jobs modules side by side.',
    messages: 6,
    calls: 5,
    results: 5,
    paired: 5,
    summaries: 0,
    visible: 11,
    inactive: 0,
    hidden: 0,
    messageCount: 6,
    usage: { input: 600, output: 200, calls: 5 },
    rows: 6,
    turns: 1,
  },
  // Its sub-agent showcol1 (2 lines, isSidechain, the parent's sessionId): the agent's prompt
  // and its answer (120 in / 40 out); a session of its own.
  'claude/claude-code-log__minimal_showcase/55550000-0000-4000-8000-000000000001/subagents/agent-showcol1.jsonl':
    {
      format: 'claude',
      sessionId: '55550000-0000-4000-8000-000000000001:agent-showcol1',
      parentSessionId: '55550000-0000-4000-8000-000000000001',
      title: 'Survey src/web and report its layout, with a screenshot.',
      messages: 2,
      calls: 0,
      results: 0,
      paired: 0,
      summaries: 0,
      visible: 2,
      inactive: 0,
      hidden: 0,
      messageCount: 2,
      usage: { input: 120, output: 40, calls: 1 },
      rows: 2,
      turns: 1,
    },
  // Sub-agent showcol2 (4 lines): prompt, a Grep call, its result, the answer; 2 responses.
  'claude/claude-code-log__minimal_showcase/55550000-0000-4000-8000-000000000001/subagents/agent-showcol2.jsonl':
    {
      format: 'claude',
      sessionId: '55550000-0000-4000-8000-000000000001:agent-showcol2',
      parentSessionId: '55550000-0000-4000-8000-000000000001',
      title: 'Survey src/jobs and list its scheduled jobs.',
      messages: 3,
      calls: 1,
      results: 1,
      paired: 1,
      summaries: 0,
      visible: 4,
      inactive: 0,
      hidden: 0,
      messageCount: 3,
      usage: { input: 240, output: 80, calls: 2 },
      rows: 3,
      turns: 1,
    },
  // 5 lines: u1, a1, a queue-operation `remove` (line 3) whose text appears in no user line (a
  // steered user row in turn 1), u2, a2. Two responses of 1 in / 1 out. Turns: u1, u2.
  'claude/claude-code-log__session_id_steering_order.jsonl': {
    format: 'claude',
    sessionId: '00000000-0295-4000-8000-000000000001',
    title: 'Please start the migration.',
    messages: 5,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 5,
    inactive: 0,
    hidden: 0,
    messageCount: 5,
    usage: { input: 2, output: 2, calls: 2 },
    rows: 5,
    turns: 2,
  },
  // 5 lines of a recorded 2.1.152 session: enqueue + dequeue of the prompt that line 3 then
  // writes as a user entry (one row, not two), the answer (input 6 + 1045 cache creation + 3057
  // cache read = 4108, output 16), and a last-prompt line (bookkeeping).
  'claude/agent-history__real_session-01.jsonl': {
    format: 'claude',
    sessionId: '06090cb1-3e64-433a-bc7e-a621c0f596d2',
    title: '[REDACTED_PROMPT]',
    messages: 2,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 2,
    inactive: 0,
    hidden: 0,
    messageCount: 2,
    usage: { input: 4108, output: 16, calls: 1 },
    rows: 2,
    turns: 1,
  },
  // 14 lines. fa1-fork has two children: fu2a (line 3, the first try) and fu2b (line 7, after the
  // rewind). The chain from the last line fa5b runs through fu2b: fu2a, fa2a, fu3a (a result)
  // and fa3a are inactive. Messages: 14 lines - 3 result-only lines = 11; calls on lines 4, 8,
  // 12, each answered. Usage: 7 responses, 50+100+150+100+180+200+220 = 1000 in,
  // 80+120+50+180+45+70+35 = 580 out. Turns: fu1, fu2b, fu4b visible; fu2a superseded.
  'claude/agent-history__claude_forked_session.jsonl': {
    format: 'claude',
    sessionId: 'fork-session-001',
    title: 'Help me implement a sorting algorithm',
    messages: 11,
    calls: 3,
    results: 3,
    paired: 3,
    summaries: 0,
    visible: 10,
    inactive: 4,
    hidden: 0,
    messageCount: 8,
    usage: { input: 1000, output: 580, calls: 7 },
    rows: 11,
    turns: 3,
    inactiveTurns: 1,
  },
  // 14 lines. The boundary (line 9, parentUuid null, logicalParentUuid ca4-compact) splits the
  // chain from ca6: cu5 ca5 cu6 ca6 are current; lines 1-8 (6 messages, 2 results) are what
  // the compaction replaced. Line 10 is a `summary` entry with no summary text or leafUuid (no
  // record, no title). Usage: 50000+50200+50400+100000+2000+2200 = 254800 in,
  // 200+150+100+500+120+80 = 1150 out. Turns: cu5 visible; cu1, cu4 superseded.
  'claude/agent-history__claude_session_with_compaction.jsonl': {
    format: 'claude',
    sessionId: 'compact-session-001',
    title: 'Start working on the authentication module',
    messages: 9,
    calls: 3,
    results: 3,
    paired: 3,
    summaries: 0,
    visible: 4,
    inactive: 8,
    hidden: 0,
    messageCount: 3,
    usage: { input: 254800, output: 1150, calls: 6 },
    rows: 9,
    turns: 1,
    inactiveTurns: 2,
  },
  // 14 lines: the user and agent messages each appear as event_msg and response_item (kept
  // once); 1 reasoning item (summary text only); 3 tool calls (function, custom, mcp function),
  // each its own tool-use message, with 3 outputs paired by call_id; the future record type
  // (line 14) is skipped and reported. Messages: user, reasoning, 3 tool-use, agent = 6 (count
  // 5: reasoning has no content of its own). Rows: the reasoning joins the first tool-use
  // message: 5.
  'codex/claude-code-log__rollout-2026-01-02T03-04-05-11111111.jsonl': {
    format: 'codex',
    sessionId: '11111111-1111-4111-8111-111111111111',
    title: 'List the synthetic files.',
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
    skipped: [{ reason: 'unknown_type', count: 1, lines: [14] }],
    turns: 1,
  },
  // session_meta, user event, spawn_agent function_call (+ its output), collab_tool_call event
  // (not a record we read): user + tool-use message, 1 paired result.
  'codex/claude-code-log__rollout-2026-01-03T04-05-06-22222222.jsonl': {
    format: 'codex',
    sessionId: '22222222-2222-4222-8222-222222222222',
    title: 'Spawn a synthetic researcher.',
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
  // 5 lines: a spawned thread (session_meta.source.subagent.thread_spawn names parent
  // 22222222…), then the parent's history it was forked with (its prompt, the spawn_agent call,
  // no output here), its own prompt "Inspect fixtures." and answer. Messages: 2 users, 1
  // tool-use, 1 answer; turns: the two prompts.
  'codex/claude-code-log__rollout-2026-01-03T04-05-10-33333333.jsonl': {
    format: 'codex',
    sessionId: '33333333-3333-4333-8333-333333333333',
    parentSessionId: '22222222-2222-4222-8222-222222222222',
    title: 'Spawn a synthetic researcher.',
    messages: 4,
    calls: 1,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 4,
    inactive: 0,
    hidden: 0,
    messageCount: 4,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 4,
    turns: 2,
  },
  // session_meta carries instructions (a hidden system message), then a user message and an
  // assistant message holding reasoning + text.
  'codex/simonw-cct__sample_codex_session.sanitized.jsonl': {
    format: 'codex',
    sessionId: 'test-session',
    title: 'Write a hello world function',
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
  // 11 lines of a recorded 0.135 exec rollout: a developer message and the environment
  // envelope (hidden), the prompt and the answer each as a response item and an event (kept
  // once), one token count (last_token_usage 22539 in, cached included, 10 out).
  'codex/agent-history__real_session-01.jsonl': {
    format: 'codex',
    sessionId: '019e9625-802f-7e91-840a-cfe88d14117a',
    title: '[REDACTED_PROMPT]',
    messages: 4,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 2,
    inactive: 0,
    hidden: 2,
    messageCount: 2,
    usage: { input: 22539, output: 10, calls: 1 },
    rows: 4,
    turns: 1,
  },
  // 20 lines. Before the legacy `compacted` item (line 13, a message and no replacement
  // history): users on lines 3, 9, 11, reasoning 4, assistants 5, 8, 10, 12, a shell call 6 and
  // its output 7. Codex rebuilds such a context from the user's messages and the summary: the 3
  // users stay visible, the other 7 records are inactive; the summary is visible; after it a
  // user (14), reasoning (15), assistant (16), call (17) + output (18), assistant (19): 6 more
  // visible. Messages 4 users + 2 reasoning + 6 assistants + 2 tool-use = 14 (count 7: the 3
  // kept users and 4 after, reasoning aside). Rows: each reasoning joins the assistant after
  // it: 15 records - 2 = 13. One token count: last_token_usage 2000 in / 1000 out.
  'codex/agent-history__codex_session_with_compaction.jsonl': {
    format: 'codex',
    sessionId: 'compact-codex-001',
    title: 'Help me build the API endpoints',
    messages: 14,
    calls: 2,
    results: 2,
    paired: 2,
    summaries: 1,
    visible: 10,
    inactive: 7,
    hidden: 0,
    messageCount: 7,
    usage: { input: 2000, output: 1000, calls: 1 },
    rows: 13,
    turns: 4,
  },
  // 21 lines: 5 users (3, 9, 12, 14, 18), 4 answers (5, 8, 13, 17), 2 reasoning (4, 10), 4 shell
  // calls (6, 11, 15, 19) of which 2 got an output (7, 16); turn_aborted (20) ends the last
  // turn. Messages 15, count 13 (reasoning aside); rows 15 - 2 reasoning joined = 13. One token
  // count: 200 in / 100 out.
  'codex/agent-history__codex_with_escalation.jsonl': {
    format: 'codex',
    sessionId: 'rejection-codex-001',
    title: 'Create a test file',
    messages: 15,
    calls: 4,
    results: 2,
    paired: 2,
    summaries: 0,
    visible: 17,
    inactive: 0,
    hidden: 0,
    messageCount: 13,
    usage: { input: 200, output: 100, calls: 1 },
    rows: 13,
    turns: 5,
  },
  // Leaf (last line, durable) = d2. Path a1 a2 a3 b1 b2 b3 b4 c1 d1 d2; last compaction c1 keeps
  // from b2: context = c1, b2, b3, b4 (display:false: hidden), d1, d2. Inactive: the abandoned
  // a4/a5 attempt, the path before b2 (a1 a2 a3 b1) and the retry e1. Messages a1 a2 a4 b2 b4 d1
  // d2 e1 = 8; results a3 a5 b3 (b3 answers b2's call_2, not a4's reused call_2); summaries b1 c1.
  // Usage: a2 150/20, a4 300/30, b1 300/40, b2 600/50, c1 600/80, d2 700/60, e1 710/90.
  // Turns: d1 visible, a1 superseded. Title: a1, the first user message.
  'fixtures/pi/tree-v3-branch-compaction.jsonl': {
    format: 'pi',
    sessionId: 'fx-tree-v3',
    title: 'Rename the config loader',
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
    inactiveTurns: 1,
  },
  // Line 7 is cut off (skipped). Leaf = n2 (durable leaf line; the last entries o1/o2 hang
  // from a missing parent: an orphan root). Path m1 m2 m3 m4 h1 c1 n1 n2; c1 carries a
  // retainedTail (copies of m3, m4): context = c1, c1#tail0, c1#tail1, n1, n2. Inactive: m1-m4,
  // h1 (a v2 hookMessage), o1, o2: 11 messages with the two copies. Usage: m2 50/10, m4 100/15, c1 90/25, n2 190/20, o2 5/2; the
  // tail copy of m4 is not counted again. Turns: c1#tail0 (the copy of m3) and n1 visible; m1,
  // m3 and the orphan o1 superseded. Title: m1.
  'fixtures/pi/tree-v2-retained-tail.jsonl': {
    format: 'pi',
    sessionId: 'fx-tree-v2',
    title: 'Add a cache',
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
    skipped: [{ reason: 'malformed_json', count: 1, lines: [7] }],
    visibleIds: ['c1', 'c1#tail0', 'c1#tail1', 'n1', 'n2'],
    turns: 2,
    inactiveTurns: 3,
  },
  // A durable leaf line with targetId null: an empty context, everything inactive; the one
  // call still counts; its one prompt is a superseded turn.
  'fixtures/pi/null-leaf-v3.jsonl': {
    format: 'pi',
    sessionId: 'fx-null-leaf',
    title: 'Hello',
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
    inactiveTurns: 1,
  },
  // Written for these tests (no public file shows these cases; see SOURCES.md). 29 lines: the
  // prompt (3/4), shell call_1 whose wrapped output says exit_code 1 (an error), call_2 exit 0,
  // exec_command call_3 whose exit code 2 only the exec_command_end event gives, view_image
  // call_4 with an array output, a web_search_call settled by its status (5 tool-use messages,
  // 5 results), the answer (15/16), "Fix it" (18/19), its answer (20/21), then `compacted` with
  // a replacement history of the envelope, "Run the tests", "Fix it" and a summary message:
  // the two prompts stay visible, the 5 tool-use messages, 5 results and 2 answers become
  // inactive, the summary is visible, then "Now commit" and "Committed." Usage: two token
  // counts, last_token_usage 5000 + 6000 in, 300 + 200 out.
  'fixtures/written/codex-exit-codes-and-replacement-history.jsonl': {
    format: 'codex',
    sessionId: 'fx-codex-exit',
    title: 'Run the tests',
    messages: 11,
    calls: 5,
    results: 5,
    paired: 5,
    summaries: 1,
    visible: 5,
    inactive: 12,
    hidden: 0,
    messageCount: 4,
    usage: { input: 11000, output: 500, calls: 2 },
    rows: 12,
    turns: 3,
  },
  // Claude Code 2.1.39, 96 lines: 28 assistant lines (16 tool_use blocks), 20 user lines (16
  // tool results, line 4 the command echo /handgemacht:create-beads, 5 its isMeta expansion,
  // 69 "[Request interrupted by user]", 71 "create the beads"), 44 progress, 3 snapshots and
  // the stop_hook_summary on line 96 with nothing to show. Messages: 28 + 3 = 31 (the
  // interruption marks line 67's answer instead); all on the path once the parallel calls'
  // lines join it (lines 9-12 and 77/81 are one response each). messageCount: 31 less the
  // thinking-only lines 7, 17, 27, 31. Usage: 12 responses, largest counts per message.id +
  // requestId, 454704 in, 1586 out. Rows: 31 less the 4 thinking lines joined to their
  // answers. Turns: the command the model worked on (line 4) and line 71.
  'claude/spotter__subagent.jsonl': {
    format: 'claude',
    sessionId: '491e126e-1e71-469c-ade2-fcc8af567c74',
    title:
      '/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyzer, mix_audit (basic…',
    messages: 31,
    calls: 16,
    results: 16,
    paired: 16,
    summaries: 0,
    visible: 47,
    inactive: 0,
    hidden: 0,
    messageCount: 27,
    usage: { input: 454704, output: 1586, calls: 12 },
    rows: 27,
    skipped: [{ reason: 'empty_entry', count: 1, lines: [96] }],
    turns: 2,
  },
  // A 2.1 compaction sub-agent's file, 7 lines, all isSidechain with agentId acompact-f46190
  // and the parent's sessionId: 5 isMeta hook reminders, the summary request (line 6), the
  // summary (line 7, usage 3 + 2814 + 167093 = 169910 in, 6 out). Lines 1-6 name parents the
  // file does not hold: reported, and read in file order, so every line is on the path.
  'claude/spotter__agent-acompact-f46190.jsonl': {
    format: 'claude',
    sessionId: '8463c716-a2ea-4c14-9efa-87158ebd9f20:agent-acompact-f46190',
    parentSessionId: '8463c716-a2ea-4c14-9efa-87158ebd9f20',
    title:
      'Your task is to create a detailed summary of the conversation so far, paying close attention to the…',
    messages: 7,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 7,
    inactive: 0,
    hidden: 0,
    messageCount: 7,
    usage: { input: 169910, output: 6, calls: 1 },
    rows: 7,
    skipped: [{ reason: 'missing_parent', count: 6, lines: [1, 2, 3, 4, 5] }],
    turns: 1,
  },
  // Claude Code 1.0.73, 26 lines: SessionStart hook notices (system, lines 1-2), the hook's text
  // as a user entry (3, `<session-start-hook>`: the tool's), the custom command
  // /orchestration:workflow-orchestrator (4) with its isMeta expansion (5) answered by a
  // synthetic API error (6, `isApiErrorMessage`, model <synthetic>, all-zero usage), two Stop
  // hook notices (7-8), the caveat (9), `/model` (10) and its stdout (11), the command again
  // (12-13, error 14, notices 15-16) and again (17-18, error 19, notices 20-21), the prompt "a"
  // (22), one response (msg_01PceA3gz8NJ4wtbkg3kYiRP: text 23, TodoWrite 24; 45834 in, 385
  // out), its result (25) and "[Request interrupted by user]" (26, marks 24). Messages: 8
  // system + 11 user + 5 assistant = 24; the result makes 25 visible records. The errors carry
  // no usage: one call. Turns: the three commands (each answered, by an error) and "a".
  'claude/pc-style-tui__b4dd57f7-255b-49a5-8a92-962ad752c778.jsonl': {
    format: 'claude',
    sessionId: 'b4dd57f7-255b-49a5-8a92-962ad752c778',
    title:
      '/orchestration:workflow-orchestrator pararell create Settings Page - Comprehensive settings interfa…',
    messages: 24,
    calls: 1,
    results: 1,
    paired: 1,
    summaries: 0,
    visible: 25,
    inactive: 0,
    hidden: 0,
    messageCount: 24,
    usage: { input: 45834, output: 385, calls: 1 },
    rows: 24,
    turns: 4,
  },
  // Claude Code 1.0.73, 16 lines: two `summary` lines whose leafUuid is in another file (1-2),
  // SessionStart notices (3-4), the hook's text (5), the command (6-7) answered by a synthetic
  // API error (8), Stop notices (9-10), the command again (11-12), a `<user-prompt-submit-hook>`
  // entry (13), the error (14), Stop notices (15-16). Messages 6 system + 6 user + 2
  // assistant = 14; no usage. Turns: lines 6 and 11 (the hook at 13 rides with the command).
  'claude/pc-style-tui__484a2c13-7a65-44ec-b6e3-baf0ca3062c2.jsonl': {
    format: 'claude',
    sessionId: '484a2c13-7a65-44ec-b6e3-baf0ca3062c2',
    title:
      '/orchestration:workflow-orchestrator pararell create Settings Page - Comprehensive settings interfa…',
    messages: 14,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 14,
    inactive: 0,
    hidden: 0,
    messageCount: 14,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 14,
    turns: 2,
  },
  // Claude Code 1.0.59, 3 lines: a `summary` ("Invalid API key · Please run /login") whose
  // leafUuid is an entry of a sibling session's file, the prompt, and the synthetic error
  // answering it (isApiErrorMessage, all-zero usage). Title: the prompt.
  'claude/claude-mpm__9217ce88-3ece-41db-adc8-9fc8532c6314.jsonl': {
    format: 'claude',
    sessionId: '9217ce88-3ece-41db-adc8-9fc8532c6314',
    title:
      'You are the Project Manager. Please delegate these tasks: **poc-engineer**: Create a simple Python …',
    messages: 2,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 2,
    inactive: 0,
    hidden: 0,
    messageCount: 2,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 2,
    turns: 1,
  },
  // Written (shapes of Claude Code 2.1 files): a prompt, two api_error retries, an assistant
  // entry whose message is a proxy's error body (all three children of the prompt), "Try
  // again", the answer (120 in, 9 out). The retries join the path: all 6 visible.
  'fixtures/written/claude-api-errors.jsonl': {
    format: 'claude',
    sessionId: 'fx-claude-api-errors',
    title: 'Summarise the README',
    messages: 6,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 6,
    inactive: 0,
    hidden: 0,
    messageCount: 6,
    usage: { input: 120, output: 9, calls: 1 },
    rows: 6,
    turns: 2,
  },
  // Written (the shape of Claude Code 2.1.76 files that cannot be vendored, SOURCES.md): a
  // prompt, two api_error retries each the child of the one before (ConnectionRefused,
  // FailedToOpenSocket), the synthetic "Request timed out" under the last, "Try again", the
  // answer (3 + 200 + 15000 = 15203 in, 14 out). One chain: all 6 visible, 2 turns.
  'fixtures/written/claude-api-error-retries-chained.jsonl': {
    format: 'claude',
    sessionId: 'fx-claude-chained-retries',
    title: 'Link the themes folder',
    messages: 6,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 6,
    inactive: 0,
    hidden: 0,
    messageCount: 6,
    usage: { input: 15203, output: 14, calls: 1 },
    rows: 6,
    turns: 2,
  },
  // Written (shape of Claude Code 1.0 files): caveat, "Unknown slash command: exit", caveat,
  // "Unknown slash command: quit". No prompt: no turn, the default title.
  'fixtures/written/claude-unknown-command-notice.jsonl': {
    format: 'claude',
    sessionId: 'fx-claude-notice',
    title: 'Claude Code session',
    messages: 4,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 4,
    inactive: 0,
    hidden: 0,
    messageCount: 4,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 4,
    turns: 0,
  },
  // Written (shape of a Claude Code 2.1 file that cannot be vendored, SOURCES.md): the caveat in
  // `<local-command-caveat>`, "Unknown skill: usage", twice; bookkeeping lines around them.
  'fixtures/written/claude-unknown-skill-notice.jsonl': {
    format: 'claude',
    sessionId: 'fx-claude-skill-notice',
    title: 'Claude Code session',
    messages: 4,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 4,
    inactive: 0,
    hidden: 0,
    messageCount: 4,
    usage: { input: 0, output: 0, calls: 0 },
    rows: 4,
    turns: 0,
  },
  // Written: the prompt (3/4), an exec_command call whose output is one content item, a token
  // count (3000 in, 40 out), a `stream_error` retry notice, an `error` event: 4 messages, the
  // result fills the call's part.
  'fixtures/written/codex-error-event-and-item-output.jsonl': {
    format: 'codex',
    sessionId: 'fx-codex-error',
    title: 'List the files',
    messages: 4,
    calls: 1,
    results: 1,
    paired: 1,
    summaries: 0,
    visible: 5,
    inactive: 0,
    hidden: 0,
    messageCount: 4,
    usage: { input: 3000, output: 40, calls: 1 },
    rows: 4,
    turns: 1,
  },
  // Written for these tests: a prompt, a `!!` shell command (excludeFromContext: shown, not
  // sent), a `!` one, a display:false custom message (sent, not shown), the answer.
  'fixtures/written/pi-excluded-bash.jsonl': {
    format: 'pi',
    sessionId: 'fx-pi-excluded',
    title: 'Why does the build fail?',
    messages: 5,
    calls: 0,
    results: 0,
    paired: 0,
    summaries: 0,
    visible: 4,
    inactive: 0,
    hidden: 1,
    messageCount: 4,
    usage: { input: 100, output: 20, calls: 1 },
    rows: 5,
    turns: 1,
  },
}

const files = [
  ...listJsonl(sharedTranscripts).map((file) => ({ file, key: path.relative(sharedTranscripts, file) })),
  ...[...listJsonl(path.join(ownFixtures, 'pi')), ...listJsonl(path.join(ownFixtures, 'written'))].map(
    (file) => ({ file, key: path.relative(path.dirname(ownFixtures), file) }),
  ),
]

describe('fixtures', () => {
  test('the shared fixture folder is there and every file in it has expectations', () => {
    const shared = files.filter((f) => f.file.startsWith(sharedTranscripts))
    expect(shared.length).toBeGreaterThanOrEqual(22)
    for (const { key } of files) expect(Object.keys(expected), key).toContain(key)
  })

  test.each(files)('$key imports with the counts read off the file', ({ file, key }) => {
    const want = expected[key]!
    const { format, records, skippedLines, skipped } = parseTranscript(readFileSync(file, 'utf8'))
    for (const record of records) TranscriptRecord.parse(record) // every record fits the schema
    expect(format).toBe(want.format)
    expect(skipped).toEqual(want.skipped ?? [])
    // lines whose parent is missing are kept (joined in file order), so not counted as left out
    const leftOut = (want.skipped ?? []).filter((s) => s.reason !== 'missing_parent')
    expect(skippedLines).toBe(leftOut.reduce((n, s) => n + s.count, 0))
    const session = records[0]!
    expect(session.type).toBe('session')
    if (session.type !== 'session') return
    expect(session.id).toBe(want.sessionId)
    expect(session.title).toBe(want.title)
    expect(session.parentSessionId).toBe(want.parentSessionId)
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
    const superseded = stored.outline.filter((e) => e.visibility === 'inactive')
    expect({ turns: stored.outline.length - superseded.length, inactiveTurns: superseded.length }).toEqual({
      turns: want.turns,
      inactiveTurns: want.inactiveTurns ?? 0,
    })
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
    // turn 1 is a1's, superseded by the compaction: the current prompt keeps number 2
    expect(detail.outline).toEqual([
      { turn: 2, seq: 8, prompt: 'Now update the docs', response: 'Docs updated.' },
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
    // turns 1 and 2 are m1's and m3's own, before the compaction copied m3 into its tail
    expect(detail.outline.map((e) => [e.turn, e.prompt, e.response])).toEqual([
      [3, 'Make it configurable', 'Done: size is an option.'],
      [4, 'Add metrics', 'Metrics added.'],
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
