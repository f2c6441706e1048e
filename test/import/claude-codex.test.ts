/** Rules of the Claude Code and Codex adapters, on small files written line by line. */
import { describe, expect, test } from 'vitest'
import { assembleSessionDetail, detectFormat, parseTranscript, recordsToRows } from '../../src/import/index'
import type { MessageRecord } from '../../src/schema/records'

const jsonl = (...lines: object[]) => lines.map((l) => JSON.stringify(l)).join('\n')
const messages = (text: string) =>
  parseTranscript(text).records.filter((r): r is MessageRecord => r.type === 'message')

describe('Claude Code', () => {
  const base = { sessionId: 'c1', cwd: '/p', isSidechain: false, timestamp: '2026-01-01T00:00:00Z' }
  const assistant = (uuid: string, id: string, requestId: string, content: object[]) => ({
    ...base,
    type: 'assistant',
    uuid,
    requestId,
    message: {
      id,
      role: 'assistant',
      model: 'm',
      content,
      usage: {
        input_tokens: 5,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 10,
        output_tokens: 7,
      },
    },
  })

  test('usage repeated on the lines of one response counts once, input including cache', () => {
    const text = jsonl(
      { ...base, type: 'user', uuid: 'u1', message: { role: 'user', content: 'go' } },
      assistant('a1', 'msg_1', 'req_1', [{ type: 'thinking', thinking: 'plan' }]),
      assistant('a2', 'msg_1', 'req_1', [{ type: 'text', text: 'done' }]),
      assistant('a3', 'msg_2', 'req_2', [{ type: 'text', text: 'more' }]),
    )
    expect(recordsToRows(parseTranscript(text).records).usage).toEqual({ input: 230, output: 14, calls: 2 })
    // the thinking-only line joins the text line of the same visibility as one row
    const detail = assembleSessionDetail(parseTranscript(text).records)
    expect(detail.messages.map((m) => m.parts.map((p) => p.type).join('+'))).toEqual([
      'text',
      'reasoning+text',
      'text',
    ])
  })

  test('a repeated uuid is one message; meta and sidechain lines do not open turns', () => {
    const text = jsonl(
      { ...base, type: 'user', uuid: 'u1', isMeta: true, message: { role: 'user', content: '<caveat>' } },
      { ...base, type: 'user', uuid: 'u2', message: { role: 'user', content: 'real prompt' } },
      { ...base, type: 'user', uuid: 'u2', message: { role: 'user', content: 'real prompt' } },
      {
        ...base,
        type: 'user',
        uuid: 'u3',
        isSidechain: true,
        agentId: 'ag1',
        message: { role: 'user', content: 'sub task' },
      },
    )
    expect(messages(text).map((m) => m.id)).toEqual(['u1', 'u2', 'u3'])
    const { rows, outline } = recordsToRows(parseTranscript(text).records)
    expect(rows.map((r) => [r.turn, r.source, r.agentId])).toEqual([
      [0, 'synthetic', undefined],
      [1, 'user', undefined],
      [1, 'synthetic', 'ag1'],
    ])
    expect(outline).toHaveLength(1)
  })
})

describe('Codex', () => {
  const line = (type: string, payload: object, second = 0) => ({
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
    type,
    payload,
  })
  const meta = line('session_meta', { id: 'cx', cwd: '/p' })

  test('envelopes are hidden; the user message seen twice is one message, in either order', () => {
    const text = jsonl(
      meta,
      line('response_item', {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }],
      }),
      line(
        'response_item',
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'first' }] },
        1,
      ),
      line('event_msg', { type: 'user_message', message: 'first' }, 1),
      line('event_msg', { type: 'agent_message', message: 'ok' }, 2),
      line(
        'response_item',
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
        2,
      ),
      line(
        'response_item',
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] },
        3,
      ),
    )
    expect(messages(text).map((m) => [m.role, m.text, m.visibility])).toEqual([
      ['user', '<environment_context>cwd</environment_context>', 'hidden'],
      ['user', 'first', 'visible'],
      ['assistant', 'ok', 'visible'],
      ['system', 'rules', 'hidden'],
    ])
  })

  test('usage comes from last_token_usage, a repeated total is not counted again, else from deltas', () => {
    const count = (total: number, last?: number) =>
      line('event_msg', {
        type: 'token_count',
        info: {
          total_token_usage: { input_tokens: total, cached_input_tokens: 0, output_tokens: total / 10 },
          ...(last === undefined
            ? {}
            : { last_token_usage: { input_tokens: last, output_tokens: last / 10 } }),
        },
      })
    const text = jsonl(
      meta,
      line('event_msg', { type: 'user_message', message: 'go' }),
      line('event_msg', { type: 'agent_message', message: 'a' }),
      count(100, 100),
      count(100, 100), // the same count again
      line('event_msg', { type: 'agent_message', message: 'b' }),
      count(300), // no last_token_usage: the growth of the total, 200
    )
    const { records } = parseTranscript(text)
    expect(recordsToRows(records).usage).toEqual({ input: 300, output: 30, calls: 2 })
    expect(messages(text).map((m) => m.usage?.input)).toEqual([undefined, 100, 200])
  })

  test('a compaction without replacement history keeps the user messages, supersedes the rest and shows its summary', () => {
    // Codex rebuilds such a context from the user's messages and the summary.
    const text = jsonl(
      meta,
      line('event_msg', { type: 'user_message', message: 'old' }),
      line('event_msg', { type: 'agent_message', message: 'old answer' }),
      line('compacted', { message: 'summary of old' }, 1),
      line('event_msg', { type: 'user_message', message: 'new' }, 2),
    )
    const detail = assembleSessionDetail(parseTranscript(text).records, { includeInactive: true })
    expect(detail.messages.map((m) => [m.role, m.visibility])).toEqual([
      ['user', 'visible'],
      ['assistant', 'inactive'],
      ['summary', 'visible'],
      ['user', 'visible'],
    ])
  })

  test('a compaction with an empty message writes no summary row', () => {
    const text = jsonl(
      meta,
      line('event_msg', { type: 'user_message', message: 'old' }),
      line('compacted', { message: '', replacement_history: [] }, 1),
    )
    const detail = assembleSessionDetail(parseTranscript(text).records, { includeInactive: true })
    expect(detail.messages.map((m) => [m.role, m.visibility])).toEqual([['user', 'inactive']])
  })

  test('reasoning keeps its summary, never the encrypted content', () => {
    const text = jsonl(
      meta,
      line('response_item', {
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: 'thinking' }],
        encrypted_content: 'SECRET',
      }),
    )
    expect(JSON.stringify(parseTranscript(text).records)).not.toContain('SECRET')
  })
})

describe('detectFormat', () => {
  test('recognizes each format by its first lines and nothing else', () => {
    expect(detectFormat('{"type":"session","version":3,"id":"x","cwd":"/"}')).toBe('pi')
    expect(detectFormat('{"type":"session_meta","payload":{"id":"x"}}')).toBe('codex')
    expect(detectFormat('{"type":"summary","summary":"t","leafUuid":"u"}')).toBe('claude')
    expect(detectFormat('{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}')).toBe('claude')
    expect(detectFormat('not json\n{"hello":"world"}')).toBeUndefined()
    expect(detectFormat('')).toBeUndefined()
  })
})
