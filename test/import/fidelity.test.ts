/**
 * One test (or a few) per import-fidelity rule, each on a real file where one shows the case
 * (test/import/fixtures/real, SOURCES.md) and on a minimal hand-written file only where none
 * does (said beside it). Numbers are read off the files; the comments say where.
 */
import { describe, expect, test } from 'vitest'
import {
  assembleSessionDetail,
  describeSkipped,
  parseTranscript,
  recordsToRows,
} from '../../src/import/index'
import type { MessageRecord } from '../../src/schema/records'
import { openPage, ready } from '../client/harness'
import { engineFactory, real, textOf, toolParts, written } from './fidelity-helpers'

const SHOWCASE = 'claude/claude-code-log__minimal_showcase/55550000-0000-4000-8000-000000000001'
const PARENT = '55550000-0000-4000-8000-000000000001'

const rowsOf = (text: string) => recordsToRows(parseTranscript(text).records).rows
const newEngine = engineFactory('fidelity')

describe('1. Claude Code sub-agents are sessions of their own, linked to the parent', () => {
  const parentText = real(`${SHOWCASE}.jsonl`)
  const agentText = (id: string) => real(`${SHOWCASE}/subagents/agent-${id}.jsonl`)

  test('a 2.1 sub-agent file (parent sessionId, isSidechain) imported alone or beside its parent never touches the parent', async () => {
    const engine = newEngine()
    const parent = await engine.importTranscript({ text: parentText })
    const before = await engine.page(parent.id, { limit: 100, includeInactive: true })
    const alone = await engine.importTranscript({ text: agentText('showcol1') })
    expect(alone.id).toBe(`claude:${PARENT}:agent-showcol1`)
    expect(alone.origin).toMatchObject({ parentSessionId: `claude:${PARENT}`, agentId: 'showcol1' })
    // the folder layout of 2.1: <session>.jsonl and <session>/subagents/agent-<id>.jsonl
    const folder = [
      { path: `.claude/projects/-w/${PARENT}.jsonl`, file: new Blob([parentText]) },
      {
        path: `.claude/projects/-w/${PARENT}/subagents/agent-showcol1.jsonl`,
        file: new Blob([agentText('showcol1')]),
      },
      {
        path: `.claude/projects/-w/${PARENT}/subagents/agent-showcol2.jsonl`,
        file: new Blob([agentText('showcol2')]),
      },
    ]
    const reports = await engine.importFiles(folder)
    expect(reports.map((r) => [r.status, r.sessionId])).toEqual([
      ['unchanged', `claude:${PARENT}`],
      ['unchanged', `claude:${PARENT}:agent-showcol1`],
      ['imported', `claude:${PARENT}:agent-showcol2`],
    ])
    expect(await engine.page(parent.id, { limit: 100, includeInactive: true })).toEqual(before)
    expect((await engine.listSessions()).map((s) => s.id).sort()).toEqual([
      `claude:${PARENT}`,
      `claude:${PARENT}:agent-showcol1`,
      `claude:${PARENT}:agent-showcol2`,
    ])
    // showcol2's own tool call and tokens (2 responses of 120 in / 40 out) are its session's
    expect(await engine.projection(`claude:${PARENT}:agent-showcol2`, 'usage')).toEqual({
      input: 240,
      output: 80,
      calls: 2,
    })
  })

  test("the parent's Agent calls name the sessions their results say ran them (toolUseResult.agentId)", async () => {
    const engine = newEngine()
    const parent = await engine.importTranscript({ text: parentText })
    const page = await engine.page(parent.id, { limit: 100 })
    const agentCalls = toolParts(page.messages).filter((p) => p.name === 'Agent')
    // line 8: toolu_sc_showcol1 and toolu_sc_showcol2; lines 9-10 name agents showcol1 and showcol2
    expect(agentCalls.map((p) => [p.callId, p.agentSessionId])).toEqual([
      ['toolu_sc_showcol1', `claude:${PARENT}:agent-showcol1`],
      ['toolu_sc_showcol2', `claude:${PARENT}:agent-showcol2`],
    ])
    // the other calls ran no agent
    expect(toolParts(page.messages).filter((p) => p.agentSessionId === undefined)).toHaveLength(3)
  })

  test('2.0 layout: agent-<id>.jsonl beside the parent imports as the same linked session', async () => {
    const engine = newEngine()
    // the same sub-agent file at the place Claude Code 2.0 wrote it
    const [report] = await engine.importFiles([
      { path: '.claude/projects/-w/agent-showcol1.jsonl', file: new Blob([agentText('showcol1')]) },
    ])
    expect(report).toMatchObject({ status: 'imported', sessionId: `claude:${PARENT}:agent-showcol1` })
  })

  test("2.0 parent with inline sidechain lines: they are hidden there, and the Task call names the agent's session", () => {
    const rows = rowsOf(real('claude/claude-code-log__sidechain_integrated.jsonl'))
    // lines 3-5 are isSidechain (two answers and a result whose call was trimmed): not part of
    // the main transcript
    expect(rows.filter((r) => r.visibility === 'hidden').map((r) => r.role)).toEqual([
      'assistant',
      'assistant',
      'assistant',
    ])
    expect(rows.filter((r) => r.visibility === 'visible')).toHaveLength(2)
    // line 2, the Task result, carries agentId e1c84ba5
    const task = toolParts(rows).find((p) => p.name === 'Task')
    expect(task?.agentSessionId).toBe('claude:88a8d761-7b9a-4bf1-a8ca-c1febe6bf358:agent-e1c84ba5')
  })
})

describe('1 (Codex). A spawned thread is linked both ways', () => {
  test("the child names its parent thread, and the parent's spawn_agent call names the child", async () => {
    const engine = newEngine()
    const parent = await engine.importTranscript({
      text: real('codex/claude-code-log__rollout-2026-01-03T04-05-06-22222222.jsonl'),
    })
    const child = await engine.importTranscript({
      text: real('codex/claude-code-log__rollout-2026-01-03T04-05-10-33333333.jsonl'),
    })
    // child line 1: source.subagent.thread_spawn.parent_thread_id; parent line 4: collab_tool_call new_thread_id
    expect(child.origin?.parentSessionId).toBe(parent.id)
    const spawn = toolParts((await engine.page(parent.id, { limit: 50 })).messages)[0]
    expect(spawn).toMatchObject({ name: 'spawn_agent', agentSessionId: child.id })
  })
})

describe('2. A streamed Claude response counts once, with its final counts', () => {
  test('the real sidechain lines sharing message.id + requestId count once', () => {
    // lines 3 and 4: msg_017z… + req_…, 3 + 19830 in / 183 out each
    const { usage } = recordsToRows(
      parseTranscript(real('claude/claude-code-log__sidechain_integrated.jsonl')).records,
    )
    expect(usage.calls).toBe(3)
  })

  test('the largest output_tokens of the lines of one response is kept, not the first (hand-written: no vendored file grows)', () => {
    const line = (uuid: string, parent: string | null, block: unknown, output: number) =>
      JSON.stringify({
        type: 'assistant',
        uuid,
        parentUuid: parent,
        sessionId: 'fx-stream',
        requestId: 'req_1',
        message: {
          id: 'msg_1',
          role: 'assistant',
          content: [block],
          usage: { input_tokens: 3, cache_read_input_tokens: 1000, output_tokens: output },
        },
      })
    const text = [
      JSON.stringify({
        type: 'user',
        uuid: 'u',
        parentUuid: null,
        sessionId: 'fx-stream',
        message: { role: 'user', content: 'go' },
      }),
      line('a1', 'u', { type: 'thinking', thinking: 'hm' }, 1),
      line('a2', 'a1', { type: 'text', text: 'done' }, 8),
      line('a3', 'a2', { type: 'tool_use', id: 't', name: 'Bash', input: {} }, 412),
    ].join('\n')
    expect(recordsToRows(parseTranscript(text).records).usage).toEqual({ input: 1003, output: 412, calls: 1 })
  })
})

describe('3. Claude titles', () => {
  test('a summary whose leafUuid is no entry of this file does not title it; the first prompt does', () => {
    // line 1: summary "Test session for JSONL parsing", leafUuid test-leaf-uuid (no such line)
    const [session] = parseTranscript(real('claude/simonw-cct__sample_session.jsonl')).records
    expect(session).toMatchObject({ title: 'Create a hello world function' })
  })

  test('a summary whose leafUuid is an entry of this file titles it', () => {
    // line 19's leafUuid edge_011 is line 11
    const [session] = parseTranscript(real('claude/claude-code-log__edge_cases.jsonl')).records
    expect(session).toMatchObject({ title: expect.stringMatching(/^Tested various edge cases/) })
  })

  test('never a raw command echo or a foreign summary (hand-written: a session opened with /clear)', () => {
    const text = [
      JSON.stringify({ type: 'summary', summary: 'Conversation Cleared', leafUuid: 'elsewhere' }),
      JSON.stringify({
        type: 'user',
        uuid: 'c',
        parentUuid: null,
        sessionId: 'fx-title',
        message: {
          role: 'user',
          content:
            '<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>',
        },
      }),
      JSON.stringify({
        type: 'user',
        uuid: 'p',
        parentUuid: 'c',
        sessionId: 'fx-title',
        message: { role: 'user', content: 'Fix the login bug<system-reminder>be brief</system-reminder>' },
      }),
    ].join('\n')
    const [session] = parseTranscript(text).records
    expect(session).toMatchObject({ title: 'Fix the login bug' })
  })
})

describe('4. What is a human prompt (Claude)', () => {
  const rows = rowsOf(real('claude/claude-code-log__edge_cases.jsonl'))
  const byId = (id: string) => rows.find((r) => r.id === `claude:edge_cases/${id}`)!

  test('a slash-command echo is a command row with its name and args, not a prompt', () => {
    // line 7: <command-name>test-command</command-name><command-args>--verbose --output /tmp/test.log</command-args>
    expect(byId('edge_007')).toMatchObject({
      role: 'user',
      source: 'synthetic',
      isMeta: true,
      command: { name: '/test-command', args: '--verbose --output /tmp/test.log' },
    })
  })

  test('command output and the local-command caveat are not prompts and open no turn', () => {
    // line 6: "Caveat: The messages below…", line 8: <local-command-stdout>
    for (const id of ['edge_006', 'edge_008'])
      expect(byId(id)).toMatchObject({ source: 'synthetic', isMeta: true })
    const outline = recordsToRows(
      parseTranscript(real('claude/claude-code-log__edge_cases.jsonl')).records,
    ).outline
    expect(outline.filter((e) => e.visibility === undefined).map((e) => e.prompt.slice(0, 20))).toEqual([
      "Here's a message wit", // line 1
      "Let's test a very lo", // line 3
      'wow error', // line 18
    ])
  })

  test('an interruption marker is the end state of the answer it cut off (hand-written: no vendored file has one)', () => {
    const entry = (uuid: string, parent: string | null, type: string, content: unknown) =>
      JSON.stringify({
        type,
        uuid,
        parentUuid: parent,
        sessionId: 'fx-int',
        message: { role: type, content },
      })
    const text = [
      entry('u', null, 'user', 'Refactor the parser'),
      entry('a', 'u', 'assistant', [{ type: 'text', text: 'Starting with the lexer' }]),
      entry('i', 'a', 'user', [{ type: 'text', text: '[Request interrupted by user]' }]),
      entry('u2', 'i', 'user', 'Only the lexer, please'),
    ].join('\n')
    const rows = rowsOf(text)
    expect(rows.map((r) => [r.role, r.status, r.turn])).toEqual([
      ['user', 'complete', 1],
      ['assistant', 'interrupted', 1],
      ['user', 'complete', 2],
    ])
    expect(rows[1]!.finish).toBe('aborted')
  })
})

describe('5. Prompts typed while the model worked (queue-operation)', () => {
  test('a removed queued prompt that appears nowhere else is a steered user row in the running turn', () => {
    // line 3: remove "actually — focus on the parser first", between a1 and u2
    const rows = rowsOf(real('claude/claude-code-log__session_id_steering_order.jsonl'))
    expect(rows.map((r) => [r.role, textOf(r), r.turn, r.delivery ?? 'prompt'])).toEqual([
      ['user', 'Please start the migration.', 1, 'prompt'],
      ['assistant', 'Starting the migration now.', 1, 'prompt'],
      ['user', 'actually \u2014 focus on the parser first', 1, 'steer'],
      ['user', 'Here is the extra context you asked for.', 2, 'prompt'],
      ['assistant', 'Understood \u2014 parser first, done.', 2, 'prompt'],
    ])
    expect(rows[2]!.source).toBe('user')
  })

  test('a dequeued prompt the file then writes as a user entry is one row, not two', () => {
    // lines 1-3 of a recorded 2.1.152 session: enqueue, dequeue, the user entry
    const rows = rowsOf(real('claude/agent-history__real_session-01.jsonl'))
    expect(rows.map((r) => [r.role, textOf(r)])).toEqual([
      ['user', '[REDACTED_PROMPT]'],
      ['assistant', '[REDACTED_ASSISTANT_TEXT]'],
    ])
  })
})

describe('5 (more). A dequeued prompt is the user entry after it, whatever that entry spells', () => {
  // hand-written in the shape 2.0.50 writes a queued slash command: enqueue "/mcp", dequeue,
  // then the command echo
  const line = (value: object) => JSON.stringify({ sessionId: 'fx-q', ...value })
  test('a queued slash command is its command row only, and a queued prompt typed twice is not lost', () => {
    const text = [
      line({ type: 'queue-operation', operation: 'enqueue', content: '/mcp' }),
      line({ type: 'queue-operation', operation: 'dequeue' }),
      line({
        type: 'user',
        uuid: 'c',
        parentUuid: null,
        message: {
          role: 'user',
          content: '<command-name>/mcp</command-name>\n<command-args></command-args>',
        },
      }),
      line({ type: 'user', uuid: 'u', parentUuid: 'c', message: { role: 'user', content: 'yes' } }),
      line({
        type: 'assistant',
        uuid: 'a',
        parentUuid: 'u',
        message: { id: 'm', role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
      }),
      // typed "yes" again while the model worked, folded into the running turn
      line({ type: 'queue-operation', operation: 'enqueue', content: 'yes' }),
      line({ type: 'queue-operation', operation: 'remove', content: 'yes' }),
    ].join('\n')
    expect(rowsOf(text).map((r) => [r.role, textOf(r), r.command?.name ?? r.delivery ?? ''])).toEqual([
      ['user', '/mcp', '/mcp'],
      ['user', 'yes', ''],
      ['assistant', 'ok', ''],
      ['user', 'yes', 'steer'],
    ])
  })
})

describe('6. Which Claude branch is current', () => {
  test('the rewound branch is inactive and the later one current', () => {
    // fa1-fork's children: fu2a (line 3, rewound) and fu2b (line 7); the last line descends from fu2b
    const text = real('claude/agent-history__claude_forked_session.jsonl')
    const shown = assembleSessionDetail(parseTranscript(text).records)
    expect(shown.outline.map((e) => e.prompt.slice(0, 30))).toEqual([
      'Help me implement a sorting al',
      "Actually, let's try MergeSort ",
      'Can you add type hints?',
    ])
    const all = assembleSessionDetail(parseTranscript(text).records, { includeInactive: true })
    expect(all.messages.filter((m) => m.visibility === 'inactive').map((m) => m.id)).toEqual([
      'claude:fork-session-001/fu2a-fork',
      'claude:fork-session-001/fa2a-fork',
      'claude:fork-session-001/fa3a-fork',
    ])
  })

  test('across a compaction boundary the chain continues through logicalParentUuid; what it replaced is inactive', () => {
    // line 9: compact_boundary, parentUuid null, logicalParentUuid ca4-compact
    const detail = assembleSessionDetail(
      parseTranscript(real('claude/agent-history__claude_session_with_compaction.jsonl')).records,
    )
    expect(detail.messages.map((m) => m.id.split('/')[1])).toEqual([
      'cu5-compact',
      'ca5-compact',
      'ca6-compact',
    ])
  })
})

describe('7. Codex tool output as the user saw it (hand-written: no public rollout shows a failed exit code)', () => {
  const rows = rowsOf(written('codex-exit-codes-and-replacement-history.jsonl'))
  const call = (id: string) => toolParts(rows).find((p) => p.callId === id)!

  test('a wrapped shell output is unwrapped and a non-zero exit code is an error', () => {
    expect(call('call_1')).toMatchObject({ output: '1 failing\n', isError: true, state: 'error' })
    expect(call('call_2')).toMatchObject({ output: 'a.txt\n', isError: false, state: 'done' })
  })

  test('an exit code only the exec_command_end event reports still makes an error', () => {
    expect(call('call_3')).toMatchObject({ isError: true, state: 'error' })
  })

  test('an output given as content items keeps its text; a web search is a settled card', () => {
    expect(call('call_4')).toMatchObject({ output: 'image attached', state: 'done' })
    const search = toolParts(rows).find((p) => p.name === 'web_search')
    expect(search).toMatchObject({ input: { type: 'search', query: 'vitest retry option' }, state: 'done' })
  })

  test('a real rollout whose last call got no output before turn_aborted shows the cut-off answer', () => {
    // agent-history escalation file: call_esc_004 (line 19) has no output; line 20 turn_aborted
    const escalation = rowsOf(real('codex/agent-history__codex_with_escalation.jsonl'))
    const last = escalation.at(-1)!
    expect(last.status).toBe('interrupted')
    expect(last.parts.at(-1)).toMatchObject({ type: 'tool', state: 'interrupted' })
  })
})

describe('8. Codex compaction', () => {
  test('with replacement_history, what it keeps stays visible and its summary message is the summary', () => {
    const detail = assembleSessionDetail(
      parseTranscript(written('codex-exit-codes-and-replacement-history.jsonl')).records,
    )
    expect(detail.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'Run the tests'],
      ['user', 'Fix it'],
      ['summary', 'Summary so far: the flaky test in a.test.ts was fixed by adding a retry.'],
      ['user', 'Now commit'],
      ['assistant', 'Committed.'],
    ])
  })

  test('without one (a real 0.77 rollout), the user messages stay and the rest before it is inactive', () => {
    const all = assembleSessionDetail(
      parseTranscript(real('codex/agent-history__codex_session_with_compaction.jsonl')).records,
      { includeInactive: true },
    )
    const before = all.messages.slice(
      0,
      all.messages.findIndex((m) => m.role === 'summary'),
    )
    // lines 3, 9, 11 are the user's; 4-8, 10, 12 the model's
    expect(before.map((m) => [m.role, m.visibility])).toEqual([
      ['user', 'visible'],
      ['assistant', 'inactive'],
      ['assistant', 'inactive'],
      ['assistant', 'inactive'],
      ['user', 'visible'],
      ['assistant', 'inactive'],
      ['user', 'visible'],
      ['assistant', 'inactive'],
    ])
  })
})

describe('9-10. Pi failed calls and titles (a real 1003-line session)', () => {
  const text = real('pi/pi-mono__before-compaction.jsonl')
  const { records } = parseTranscript(text)
  const rows = recordsToRows(records).rows

  test('aborted and failed calls keep their error text and status; only complete messages are complete', () => {
    const assistant = rows.filter((r) => r.role === 'assistant')
    // 18 stopReason "aborted" (errorMessage "Request was aborted."), 1 "error" (line 848)
    expect(assistant.filter((r) => r.status === 'interrupted')).toHaveLength(18)
    expect(assistant.filter((r) => r.status === 'error')).toHaveLength(1)
    for (const r of assistant.filter((r) => r.status === 'interrupted')) {
      expect(textOf(r)).toMatch(/Request was aborted\.$/)
      expect(r.finish).toBe('aborted')
    }
    const failed = assistant.find((r) => r.status === 'error')!
    expect(textOf(failed)).toMatch(/^400 \{"type":"error","error":\{"type":"invalid_request_error"/)
    expect(failed.id).toBe('pi:ffae836b-9420-4060-ac13-7745215f90ff/v1-847')
    expect(assistant.filter((r) => r.status === 'complete')).toHaveLength(484 - 19)
  })

  test("the title is the file's first user message, not the first one after a compaction", () => {
    const first = records.find(
      (r): r is MessageRecord => r.type === 'message' && r.visibility === 'visible' && r.role === 'user',
    )!
    expect(first.id).not.toBe('v1-1') // the context starts after the compaction
    expect(records[0]).toMatchObject({
      title: expect.stringMatching(/^alright, read @packages\/coding-agent\/src\/main\.ts/),
    })
  })
})

describe('11. Pi context vs display (hand-written: no public file has excludeFromContext)', () => {
  const { records } = parseTranscript(written('pi-excluded-bash.jsonl'))
  const message = (id: string) =>
    records.find((r): r is MessageRecord => r.type === 'message' && r.id === id)!

  test('a !! shell command is shown but not context; a display:false message is context but not shown', () => {
    expect(message('x1')).toMatchObject({ visibility: 'visible', excludedFromContext: true })
    expect(message('b1').excludedFromContext).toBeUndefined()
    expect(message('c1')).toMatchObject({ visibility: 'hidden' })
    expect(message('c1').excludedFromContext).toBeUndefined()
    const rows = recordsToRows(records).rows
    expect(rows.find((r) => r.id.endsWith('/x1'))?.excludedFromContext).toBe(true)
    expect(assembleSessionDetail(records).messages.map((m) => m.id.split('/')[1])).toEqual([
      'u1',
      'x1',
      'b1',
      'a1',
    ])
  })
})

describe('12. Nothing skipped silently', () => {
  test('importTranscript reports the skipped lines of a real file by reason, in the session origin', async () => {
    const engine = newEngine()
    const info = await engine.importTranscript({ text: real('claude/claude-code-log__edge_cases.jsonl') })
    // lines 13, 15, 16: "massive error", 42, [1]; 10 and 11: nothing to show; 14: no type;
    // 17 is kept, but its parentUuid assistant_003 is no entry of the file
    expect(info.origin?.skipped).toEqual([
      { reason: 'not_an_object', count: 3, lines: [13, 15, 16] },
      { reason: 'missing_parent', count: 1, lines: [17] },
      { reason: 'empty_entry', count: 2, lines: [10, 11] },
      { reason: 'unknown_type', count: 1, lines: [14] },
    ])
    expect(describeSkipped(info.origin!.skipped!)).toBe(
      '6 lines skipped: 3 not a JSON object (lines 13, 15, 16); 2 empty entries (lines 10, 11); 1 of an unknown type (line 14). 1 line kept whose parent is missing (line 17)',
    )
    expect((await engine.getSession(info.id))?.origin?.skipped).toEqual(info.origin?.skipped)
  })

  test('a file with nothing skipped says nothing', async () => {
    const engine = newEngine()
    const info = await engine.importTranscript({ text: real('claude/agent-history__real_session-01.jsonl') })
    expect(info.origin?.skipped).toBeUndefined()
  })
})

describe('13. History before a compaction stays navigable', () => {
  const text = real('pi/pi-mono__before-compaction.jsonl')

  test('superseded turns keep their numbers and outline entries, marked inactive', () => {
    const { records } = parseTranscript(text)
    const all = assembleSessionDetail(records, { includeInactive: true }).outline
    // 55 user messages in the file: 24 before the context, 31 in it
    expect(all.map((e) => e.turn)).toEqual(Array.from({ length: 55 }, (_, i) => i + 1))
    expect(all.filter((e) => e.visibility === 'inactive')).toHaveLength(24)
    expect(all[0]).toMatchObject({
      turn: 1,
      visibility: 'inactive',
      prompt: expect.stringMatching(/^alright, read/),
    })
    expect(assembleSessionDetail(records).outline).toHaveLength(31)
    const rows = recordsToRows(records).rows
    const inactiveTurns = new Set(rows.filter((r) => r.visibility === 'inactive').map((r) => r.turn))
    expect(inactiveTurns.has(0)).toBe(false) // nothing collapses into turn 0
  })

  test('the rail reaches them only with includeInactive', async () => {
    const page = await openPage()
    try {
      const info = await page.engine.importTranscript({ text })
      const plain = page.client.open(info.id)
      const everything = page.client.open(info.id, { includeInactive: true })
      const [a, b] = await Promise.all([ready(plain), ready(everything)])
      expect(a.rail).toHaveLength(31)
      expect(b.rail).toHaveLength(55)
      expect(b.rail[0]).toMatchObject({ turn: 1, prompt: expect.stringMatching(/^alright, read/) })
      plain.dispose()
      everything.dispose()
    } finally {
      await page.close()
    }
  })
})
