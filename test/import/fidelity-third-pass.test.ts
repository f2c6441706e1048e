/**
 * Import fidelity, third pass: slash commands that make the model work, API errors, chains
 * broken by a missing parent, CLI notices, a Codex tool output given as one content item. Each
 * case on a real file where a public one shows it (test/import/fixtures/real, SOURCES.md),
 * else on a minimal file written from the shapes real files carry (fixtures/written, said
 * beside it). Numbers are read off the files; the comments say where.
 */
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  assembleSessionDetail,
  describeSkipped,
  parseTranscript,
  recordsToRows,
} from '../../src/import/index'
import type { SessionMessage } from '../../src/schema/messages'
import { engineFactory, real, textOf, toolParts, written } from './fidelity-helpers'

const stored = (text: string) => recordsToRows(parseTranscript(text).records)
const newEngine = engineFactory('fidelity-third')

describe('1. A slash command that makes the model work opens a turn', () => {
  // spotter__subagent.jsonl (Claude Code 2.1.39): line 4 is the command echo
  // `<command-name>/handgemacht:create-beads</command-name>` with its args, line 5 its isMeta
  // expansion, lines 6-67 the model's work on it (assistant entries, 16 tool calls in all),
  // line 69 "[Request interrupted by user]", line 71 the typed prompt "create the beads", then
  // its work (72-92). The terminal capture beside the file in its repository shows
  // `❯ /handgemacht:create-beads websearch to learn how …` as the prompt.
  const text = real('claude/spotter__subagent.jsonl')
  const ARGS =
    'websearch to learn how to fastest setup credo, dialyzer, mix_audit (basically all supported by https://github.com/bradleygolden/claude-marketplace-elixir)\n\nMaybe there are igniter scripts?'

  test('the command is the first turn’s prompt, the typed prompt the second', () => {
    const { rows, outline } = stored(text)
    // before: one outline entry ("create the beads", turn 1); 22 of 29 rows in turn 0
    expect(outline.map((e) => [e.turn, e.prompt.slice(0, 26)])).toEqual([
      [1, '/handgemacht:create-beads '],
      [2, 'create the beads'],
    ])
    // 27 rows: 31 messages (28 assistant lines, lines 4, 5, 71) with the 4 thinking-only lines
    // (7, 17, 27, 31) joined to the answer after them; every result fills its call's part.
    // Turn 2 is line 71 and the assistant lines 72, 77, 81, 87, 92: 6 rows; turn 1 the other 21.
    expect(rows).toHaveLength(27)
    expect(rows.filter((r) => r.turn === 0)).toHaveLength(0)
    expect(rows.filter((r) => r.turn === 1)).toHaveLength(21)
    expect(rows.filter((r) => r.turn === 2)).toHaveLength(6)
    const command = rows[0]!
    expect(command).toMatchObject({
      role: 'user',
      source: 'user',
      turn: 1,
      command: { name: '/handgemacht:create-beads', args: ARGS },
    })
    expect(command.isMeta).toBeUndefined()
    expect(textOf(command)).toBe(`/handgemacht:create-beads ${ARGS}`)
    // the expansion Claude Code wrote for the model stays the tool's own text, inside the turn
    expect(rows[1]).toMatchObject({ role: 'user', source: 'synthetic', isMeta: true, turn: 1 })
    expect(textOf(rows[1]!)).toMatch(/^Create beads \(epic \+ tasks \+ dependencies\)/)
  })

  test('its title is the command, as the first prompt', () => {
    const session = parseTranscript(text).records[0]!
    expect(session.type === 'session' && session.title).toBe(
      '/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyzer, mix_audit (basic…',
    )
  })

  test('a hook’s text is no prompt and does not stand between a command and its answer', () => {
    // pc-style-tui__484a2c13-….jsonl (Claude Code 1.0.73): line 5 `<session-start-hook>…` (what
    // a SessionStart hook printed, as a user entry), line 6 the command
    // /orchestration:workflow-orchestrator, 7 its isMeta expansion, 8 a synthetic API error; line
    // 11 the same command again, 12 its expansion, 13 `<user-prompt-submit-hook>…`, 14 the error.
    const text = real('claude/pc-style-tui__484a2c13-7a65-44ec-b6e3-baf0ca3062c2.jsonl')
    const { rows, outline, session } = recordsToRows(parseTranscript(text).records)
    // before: the hook text was turn 1 and the title; the second command, followed by the
    // prompt hook's line, stayed meta inside turn 2: outline [hook, command]
    expect(outline.map((e) => [e.turn, e.prompt.slice(0, 36), e.response.slice(0, 14)])).toEqual([
      [1, '/orchestration:workflow-orchestrator', 'API Error: 400'],
      [2, '/orchestration:workflow-orchestrator', 'API Error: 400'],
    ])
    expect(session.title).toMatch(/^\/orchestration:workflow-orchestrator pararell create Settings Page/)
    const hooks = rows.filter((r) => /^<(session-start|user-prompt-submit)-hook>/.test(textOf(r)))
    expect(hooks.map((r) => [r.source, r.isMeta, r.turn])).toEqual([
      ['synthetic', true, 0], // line 5, before any prompt
      ['synthetic', true, 2], // line 13, inside the second command's turn
    ])
  })

  test('a command the CLI answered alone stays bookkeeping (no turn)', () => {
    // edge_cases.jsonl: line 7 `/test-command`, answered by line 8 <local-command-stdout>, no
    // assistant entry before the next prompt
    const { rows, outline } = stored(real('claude/claude-code-log__edge_cases.jsonl'))
    const command = rows.find((r) => r.command !== undefined)!
    expect(command).toMatchObject({ command: { name: '/test-command' }, isMeta: true, source: 'synthetic' })
    expect(outline.some((e) => e.prompt.startsWith('/test-command'))).toBe(false)
  })
})

describe('2. API errors show as error rows and count in no usage', () => {
  test('Claude Code: a synthetic API-error entry answering a command is the turn’s error, with no usage', () => {
    // pc-style-tui__b4dd57f7-….jsonl (Claude Code 1.0.73): the command
    // /orchestration:workflow-orchestrator three times (lines 4, 12, 17, each with its isMeta
    // expansion), each answered by an assistant entry Claude Code wrote in the model's place
    // (lines 6, 14, 19: `isApiErrorMessage: true`, model <synthetic>, usage all 0, text
    // "API Error: 400 {…model_not_supported…}"); then the prompt "a" (22) and one real response
    // (lines 23-24, message msg_01PceA3gz8NJ4wtbkg3kYiRP: 45834 in, 385 out), interrupted (26).
    const { rows, outline, usage } = stored(
      real('claude/pc-style-tui__b4dd57f7-255b-49a5-8a92-962ad752c778.jsonl'),
    )
    // before: the errors were already error rows without usage, but the SessionStart hook's
    // text (line 3) was a turn of its own, so the commands were turns 2-4 and "a" turn 5
    const failed = rows.filter((r) => r.status === 'error')
    expect(failed.map((r) => [r.role, r.turn, r.finish, r.usage, r.model])).toEqual([
      ['assistant', 1, 'error', undefined, '<synthetic>'],
      ['assistant', 2, 'error', undefined, '<synthetic>'],
      ['assistant', 3, 'error', undefined, '<synthetic>'],
    ])
    expect(failed.every((r) => textOf(r).startsWith('API Error: 400 {"error"'))).toBe(true)
    // each command's turn answers with the error, as Claude Code prints it; "a" with the text
    expect(outline.map((e) => [e.turn, e.response.slice(0, 14)])).toEqual([
      [1, 'API Error: 400'],
      [2, 'API Error: 400'],
      [3, 'API Error: 400'],
      [4, "I'll orchestra"],
    ])
    // the one real response is the one call counted
    expect(usage).toEqual({ input: 45834, output: 385, calls: 1 })
  })

  test('Claude Code: a prompt answered only by the synthetic error', () => {
    // claude-mpm__9217ce88-….jsonl (Claude Code 1.0.59): line 1 a `summary` whose leaf is in a
    // sibling session's file, line 2 the prompt, line 3 the synthetic "Invalid API key · Please
    // run /login" (isApiErrorMessage, usage all 0).
    const { rows, outline, usage } = stored(
      real('claude/claude-mpm__9217ce88-3ece-41db-adc8-9fc8532c6314.jsonl'),
    )
    expect(rows.map((r) => [r.role, r.status, r.turn, r.usage])).toEqual([
      ['user', 'complete', 1, undefined],
      ['assistant', 'error', 1, undefined],
    ])
    expect(outline).toMatchObject([{ turn: 1, response: 'Invalid API key · Please run /login' }])
    expect(usage).toEqual({ input: 0, output: 0, calls: 0 })
  })

  // Written: no public file we may vendor shows a `system/api_error` line or a provider's error
  // body as `message`. Real `api_error` lines were found only in repositories without a licence
  // (SOURCES.md names them); the importer was run on them here, not committed, and the second
  // written file below copies their shape. This one: line 1 a prompt; lines 2 and 3
  // `system/api_error` retries (status 403, retryAttempt 1 and 2 of 10); line 4 an assistant
  // entry whose `message` is a proxy's error body
  // `{"Output":{"__type":"com.amazon.coral.service#UnknownOperationException"},…,"content":[]}`;
  // line 5 "Try again", line 6 the answer (usage 120 in, 9 out). Lines 2, 3 and 4 all name the
  // prompt as parent: the retries are childless side branches, the chain runs 6 5 4 1.
  test('Claude Code: each retry and the error body are error rows of the turn', () => {
    const { records, skipped } = parseTranscript(written('claude-api-errors.jsonl'))
    const { rows, outline, usage } = recordsToRows(records)
    // before: lines 2, 3, 4 skipped as empty entries, 3 rows, turn 1 unanswered
    expect(skipped).toEqual([])
    expect(rows.map((r) => [r.role, r.status, r.turn, textOf(r)])).toEqual([
      ['user', 'complete', 1, 'Summarise the README'],
      ['system', 'error', 1, 'API Error: 403 Forbidden (attempt 1 of 10)'],
      ['system', 'error', 1, 'API Error: 403 Forbidden (attempt 2 of 10)'],
      ['assistant', 'error', 1, 'API Error: UnknownOperationException'],
      ['user', 'complete', 2, 'Try again'],
      ['assistant', 'complete', 2, 'The README describes the app.'],
    ])
    // notices that no turn continues from supersede nothing: before, lines 2 and 3 were inactive
    expect(rows.every((r) => r.visibility === 'visible')).toBe(true)
    expect(rows.filter((r) => r.status === 'error').every((r) => r.usage === undefined)).toBe(true)
    expect(usage).toEqual({ input: 120, output: 9, calls: 1 })
    expect(outline[0]).toMatchObject({ turn: 1, response: 'API Error: UnknownOperationException' })
  })

  test('Claude Code: retries chained one under the other, as 2.1 writes them, then the synthetic error', () => {
    // Written from the shape of the real 2.1.76 and 2.1.91 files (not vendorable, SOURCES.md):
    // each retry is the child of the one before and the synthetic error the child of the last;
    // the retry's `error` holds only a `cause` code. Line 1 the prompt, 2-3 the retries
    // (ConnectionRefused, FailedToOpenSocket), 4 the synthetic "Request timed out", 5 "Try
    // again", 6 the answer (3 + 200 + 15000 in, 14 out).
    const { rows, outline, usage } = stored(written('claude-api-error-retries-chained.jsonl'))
    expect(rows.map((r) => [r.role, r.status, r.turn, r.visibility, textOf(r)])).toEqual([
      ['user', 'complete', 1, 'visible', 'Link the themes folder'],
      ['system', 'error', 1, 'visible', 'API Error: ConnectionRefused (attempt 1 of 10)'],
      ['system', 'error', 1, 'visible', 'API Error: FailedToOpenSocket (attempt 2 of 10)'],
      ['assistant', 'error', 1, 'visible', 'Request timed out'],
      ['user', 'complete', 2, 'visible', 'Try again'],
      ['assistant', 'complete', 2, 'visible', 'Linked themes/ to the landing pages.'],
    ])
    expect(outline[0]).toMatchObject({ turn: 1, response: 'Request timed out' })
    expect(usage).toEqual({ input: 15203, output: 14, calls: 1 })
  })

  test('Codex: a `stream_error` retry and the `error` event are error rows; the usage stays on the call', () => {
    // Written: no public rollout we may vendor holds either event. Codex persists `error` only
    // in its extended persistence mode and never `stream_error` (codex-rs/rollout/src/policy.rs
    // in openai/codex); the one public rollout line seen with an `error` event
    // (jazzyalex/agent-sessions, a format baseline) has its values replaced by its author. A
    // prompt, an exec_command call and its output, a token count (3000 in, 40 out), a
    // stream_error retry notice, then the error.
    const { rows, usage } = stored(written('codex-error-event-and-item-output.jsonl'))
    // before: both events were dropped: 2 rows, the turn ending on the tool call
    expect(rows.map((r) => [r.role, r.status, r.turn, textOf(r)])).toEqual([
      ['user', 'complete', 1, 'List the files'],
      ['assistant', 'complete', 1, ''],
      ['system', 'error', 1, 'Reconnecting... 1/5'],
      [
        'assistant',
        'error',
        1,
        'unexpected status 403 Forbidden: Your account is not allowed to use this model',
      ],
    ])
    expect(rows[2]!.isMeta).toBe(true)
    expect(rows.slice(2).every((r) => r.usage === undefined)).toBe(true)
    expect(rows[1]!.usage).toEqual({ input: 3000, output: 40 })
    expect(usage).toEqual({ input: 3000, output: 40, calls: 1 })
  })

  test('Pi: the real `stopReason: "error"` message is an error row with its message and no usage', () => {
    // pi-mono__before-compaction.jsonl line 848: content [], all-zero usage, errorMessage
    // "400 {…invalid_request_error…}"
    const { rows } = stored(real('pi/pi-mono__before-compaction.jsonl'))
    const failed = rows.filter((r) => r.status === 'error')
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatchObject({ role: 'assistant', finish: 'error' })
    expect(failed[0]!.usage).toBeUndefined()
    expect(textOf(failed[0]!)).toMatch(/^400 .*invalid_request_error/)
  })
})

describe('3. A parent missing from the file supersedes nothing', () => {
  // spotter__agent-acompact-f46190.jsonl: a 2.1 compaction sub-agent's file, 7 lines. Lines 1-6
  // (user entries; 1-5 isMeta hook reminders, 6 the summary request) each name a parentUuid the
  // file does not hold; line 7, the assistant's summary, names line 6. No entry has two
  // children and nothing was rewound.
  const text = real('claude/spotter__agent-acompact-f46190.jsonl')

  test('the pieces are read in file order, all visible, and the break is reported', () => {
    const { records, skipped, skippedLines } = parseTranscript(text)
    const { rows } = recordsToRows(records)
    // before: lines 1-5 inactive (off the chain 7 → 6 → missing), 2 visible, nothing reported
    expect(rows.map((r) => r.visibility)).toEqual(Array(7).fill('visible'))
    expect(skipped).toEqual([{ reason: 'missing_parent', count: 6, lines: [1, 2, 3, 4, 5] }])
    expect(skippedLines).toBe(0) // kept, not left out
    expect(describeSkipped(skipped)).toBe('6 lines kept whose parent is missing (lines 1, 2, 3, 4, 5, …)')
  })

  test('the report reaches the session origin and the folder report', async () => {
    const engine = newEngine()
    const info = await engine.importTranscript({ text })
    expect(info.origin?.skipped).toEqual([{ reason: 'missing_parent', count: 6, lines: [1, 2, 3, 4, 5] }])
    const [report] = await newEngine().importFiles([
      { path: 'agent-acompact-f46190.jsonl', file: new Blob([text]) },
    ])
    expect(report).toMatchObject({ skippedLines: 0, skipped: info.origin?.skipped })
  })

  test('parallel tool calls branch the chain without superseding anything', () => {
    // spotter__subagent.jsonl lines 9-12: one response (msg_01LvWnndr3…) written as four
    // tool_use lines in a chain; each result (13-16) is a child of its own call's line and the
    // work goes on from line 16. Claude Code shows all four calls with their results.
    const { rows } = stored(real('claude/spotter__subagent.jsonl'))
    // before: lines 11, 12 and the results 13, 14, 15 (and 82, beside 81) were inactive: 4 rows
    expect(rows.filter((r) => r.visibility !== 'visible')).toHaveLength(0)
    const searches = toolParts(rows).filter((p) => p.name === 'WebSearch')
    expect(searches).toHaveLength(5) // lines 10, 11, 12, 22, 29
    expect(searches.every((p) => p.state === 'done' && typeof p.output === 'string' && p.output !== '')).toBe(
      true,
    )
  })

  test('property: breaking any links of a linear file changes nothing but the report', () => {
    // A linear Claude Code file (prompts and answers, each linked to the line before); some
    // lines then name parents that are not in the file. Differential: the damaged file imports
    // to the same rows as the intact one, and exactly the damaged lines are reported.
    const entry = (i: number, parent: string | null) =>
      JSON.stringify({
        type: i % 2 === 0 ? 'user' : 'assistant',
        uuid: `e${i}`,
        parentUuid: parent,
        sessionId: 'prop',
        timestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
        message:
          i % 2 === 0
            ? { role: 'user', content: `prompt ${i}` }
            : { role: 'assistant', id: `m${i}`, content: [{ type: 'text', text: `answer ${i}` }] },
      })
    const shape = (rows: readonly SessionMessage[]) =>
      rows.map((r) => [r.id, r.visibility, r.turn, r.role, textOf(r)])
    fc.assert(
      fc.property(
        fc
          .integer({ min: 2, max: 24 })
          .chain((n) =>
            fc.tuple(
              fc.constant(n),
              fc.uniqueArray(fc.integer({ min: 1, max: n - 1 }), { maxLength: n - 1 }),
            ),
          ),
        ([n, broken]) => {
          const lines = (damaged: ReadonlySet<number>) =>
            Array.from({ length: n }, (_, i) =>
              entry(i, i === 0 ? null : damaged.has(i) ? `gone-${i}` : `e${i - 1}`),
            ).join('\n')
          const intact = parseTranscript(lines(new Set()))
          const damaged = parseTranscript(lines(new Set(broken)))
          expect(shape(recordsToRows(damaged.records).rows)).toEqual(
            shape(recordsToRows(intact.records).rows),
          )
          expect(recordsToRows(damaged.records).rows.every((r) => r.visibility === 'visible')).toBe(true)
          const lineNumbers = [...broken].sort((a, b) => a - b).map((i) => i + 1)
          expect(damaged.skipped).toEqual(
            broken.length === 0
              ? []
              : [{ reason: 'missing_parent', count: broken.length, lines: lineNumbers.slice(0, 5) }],
          )
          expect(damaged.skippedLines).toBe(0)
        },
      ),
      { numRuns: 200 },
    )
  })

  test('a real rewind keeps its abandoned branch inactive', () => {
    // agent-history__claude_forked_session.jsonl: two children of fa1-fork, the later current
    const detail = assembleSessionDetail(
      parseTranscript(real('claude/agent-history__claude_forked_session.jsonl')).records,
      {
        includeInactive: true,
      },
    )
    expect(detail.messages.some((m) => m.visibility === 'inactive')).toBe(true)
  })
})

describe('4. CLI notices are not prompts', () => {
  // Written (the shape of Claude Code 1.0 files: the isMeta local-command caveat, then the CLI's
  // own "Unknown slash command: exit" as a plain user line), twice: /exit, then /quit. No public
  // file shows "Unknown slash command"; see the 2.1 form below.
  test('a file of only caveats and notices has no prompt, no turn and no title of its own', () => {
    const { records } = parseTranscript(written('claude-unknown-command-notice.jsonl'))
    const { rows, outline, session } = recordsToRows(records)
    // before: 2 turns, title "Unknown slash command: exit"
    expect(session.title).toBe('Claude Code session')
    expect(outline).toEqual([])
    expect(rows.map((r) => [r.source, r.isMeta, r.turn])).toEqual(Array(4).fill(['synthetic', true, 0]))
    expect(textOf(rows[1]!)).toBe('Unknown slash command: exit')
  })

  test('2.1 wraps the caveat in a tag; the notice after it is still the CLI’s', () => {
    // Written from a real Claude Code 2.1 file that cannot be vendored (no licence;
    // SOURCES.md): the caveat inside `<local-command-caveat>…</local-command-caveat>`, then
    // "Unknown skill: usage" as a plain user line, twice; bookkeeping lines around them.
    const { rows, outline, session } = recordsToRows(
      parseTranscript(written('claude-unknown-skill-notice.jsonl')).records,
    )
    // before: the wrapped caveat was not seen as one: 2 turns, title "Unknown skill: usage"
    expect(session.title).toBe('Claude Code session')
    expect(outline).toEqual([])
    expect(rows.map((r) => [r.source, r.isMeta, r.turn])).toEqual(Array(4).fill(['synthetic', true, 0]))
  })
})

describe('5. Codex: a tool output given as one content item', () => {
  // Written: line 6 `function_call_output` with `"output":{"type":"input_text","text":"a.txt\n"}`
  // (an object, not a list, not a string), the shape the last pass met. No real file can show
  // it: Codex writes `output` as a string or a list of content items (an untagged enum of the
  // two, FunctionCallOutputBody in openai/codex); the one public occurrence is in the hand-made
  // head of jazzyalex/agent-sessions' Codex format baseline. The rule stays as tolerance.
  test('its text is the output', () => {
    const { rows } = stored(written('codex-error-event-and-item-output.jsonl'))
    // before: output ''
    expect(toolParts(rows)).toMatchObject([{ name: 'exec_command', output: 'a.txt\n', state: 'done' }])
  })
})
