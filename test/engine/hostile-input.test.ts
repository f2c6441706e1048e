/**
 * Hostile input at the engine's door: every documented size limit refuses with invalid_input
 * and writes nothing, and prototype keys in payloads stay plain keys, stored and read back
 * as given, while Object.prototype stays untouched. In process and through Comlink.
 */
import { afterEach, describe, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import {
  MAX_APPEND_EVENTS,
  MAX_APPEND_SIZE,
  MAX_EVENT_TEXT,
  MAX_ID_LENGTH,
  MAX_IMPORT_FILE_BYTES,
  MAX_INPUT_TEXT,
  MAX_JSON_DEPTH,
  MAX_PATH_LENGTH,
  MAX_TITLE_LENGTH,
  MAX_TOOL_NAME,
  MAX_TOOL_PAYLOAD,
} from '../../src/schema/limits'
import { engineKinds, inProcessEngine } from '../support/engines'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

const codeOf = async (call: Promise<unknown>) =>
  call.then(
    () => 'accepted',
    (e: unknown) => (isSessionlineError(e) ? e.code : `not a SessionlineError: ${String(e)}`),
  )

/** Everything the engine holds of a session, to show a refused call changed none of it. */
async function state(engine: Engine, sessionId: string) {
  const [session, events, pending, page, sessions] = await Promise.all([
    engine.getSession(sessionId),
    engine.events(sessionId),
    engine.pending(sessionId),
    engine.page(sessionId, { includeInactive: true }),
    engine.listSessions(),
  ])
  return { session, events, pending, page, sessions }
}

/** A tool payload `depth` levels deep. */
const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { down: nested(depth - 1) })

const opened: SessionEvent[] = [
  { type: 'turn/start', data: { turn: 1 } },
  { type: 'step/start', data: { turn: 1, step: 1 } },
  { type: 'assistant/start', data: { messageId: 'm1', turn: 1, step: 1 } },
]
const toolCall = (input: unknown, name = 'read'): SessionEvent =>
  ({ type: 'tool/call', data: { messageId: 'm1', callId: 'c1', name, input } }) as SessionEvent

describe.each(engineKinds)('engine %s', (_, makeEngine) => {
  async function fresh() {
    const made = await makeEngine()
    cleanups.push(() => made.close())
    const { id } = await made.engine.createSession({ id: 's' })
    await made.engine.append(id, opened)
    return { engine: made.engine, id }
  }

  test('each size limit refuses one past it with invalid_input and writes nothing, and takes the limit itself', async () => {
    const { engine, id } = await fresh()
    const before = await state(engine, id)
    const over: [string, () => Promise<unknown>][] = [
      ['an id', () => engine.admit(id, { id: 'i'.repeat(MAX_ID_LENGTH + 1), text: 'hi' })],
      ['a session id', () => engine.getSession('s'.repeat(MAX_ID_LENGTH + 1))],
      ['a title', () => engine.createSession({ title: 't'.repeat(MAX_TITLE_LENGTH + 1) })],
      ['an input text', () => engine.admit(id, { text: 'x'.repeat(MAX_INPUT_TEXT + 1) })],
      ['an edited text', () => engine.edit(id, 'nope', { text: 'x'.repeat(MAX_INPUT_TEXT + 1) })],
      [
        'an event text',
        () =>
          engine.append(id, [
            { type: 'assistant/delta', data: { messageId: 'm1', text: 'x'.repeat(MAX_EVENT_TEXT + 1) } },
          ]),
      ],
      ['a tool name', () => engine.append(id, [toolCall({}, 'n'.repeat(MAX_TOOL_NAME + 1))])],
      ['a tool payload', () => engine.append(id, [toolCall({ big: 'x'.repeat(MAX_TOOL_PAYLOAD) })])],
      ['a tool payload depth', () => engine.append(id, [toolCall(nested(MAX_JSON_DEPTH + 1))])],
      [
        'events per append',
        () =>
          engine.append(
            id,
            Array.from({ length: MAX_APPEND_EVENTS + 1 }, () => ({
              type: 'assistant/delta' as const,
              data: { messageId: 'm1', text: '.' },
            })),
          ),
      ],
      [
        'an append in all',
        () =>
          engine.append(
            id,
            Array.from({ length: Math.ceil(MAX_APPEND_SIZE / MAX_EVENT_TEXT) + 1 }, () => ({
              type: 'assistant/delta' as const,
              data: { messageId: 'm1', text: 'x'.repeat(MAX_EVENT_TEXT) },
            })),
          ),
      ],
      [
        'an import name',
        () => engine.importTranscript({ text: '{}', name: 'n'.repeat(MAX_PATH_LENGTH + 1) }),
      ],
    ]
    for (const [what, call] of over) expect(await codeOf(call()), what).toBe('invalid_input')
    expect(await state(engine, id)).toEqual(before)

    const at: [string, () => Promise<unknown>][] = [
      ['an id', () => engine.admit(id, { id: 'i'.repeat(MAX_ID_LENGTH), text: 'hi' })],
      ['a title', () => engine.createSession({ title: 't'.repeat(MAX_TITLE_LENGTH) })],
      ['an input text', () => engine.admit(id, { text: 'x'.repeat(MAX_INPUT_TEXT) })],
      ['a tool payload depth', () => engine.append(id, [toolCall(nested(MAX_JSON_DEPTH - 1))])],
    ]
    for (const [what, call] of at) expect(await codeOf(call()), what).toBe('accepted')
  })

  test('prototype keys in tool payloads are stored as plain keys, read back as given, and pollute nothing', async () => {
    const { engine, id } = await fresh()
    const input = JSON.parse(
      '{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}, "path": "a.ts"}',
    )
    const output = JSON.parse('[{"__proto__": {"isAdmin": true}}, {"toString": "not a function"}]')
    await engine.append(id, [
      toolCall(input),
      { type: 'tool/result', data: { callId: 'c1', output, isError: false } },
    ])
    const events = await engine.events(id)
    const call = events.find((e) => e.type === 'tool/call')
    const result = events.find((e) => e.type === 'tool/result')
    const storedInput = call?.type === 'tool/call' ? (call.data.input as Record<string, unknown>) : {}
    expect(Object.keys(storedInput)).toEqual(['__proto__', 'constructor', 'path'])
    expect(Object.getPrototypeOf(storedInput)).toBe(Object.prototype)
    expect(Object.getOwnPropertyDescriptor(storedInput, '__proto__')?.value).toEqual({ polluted: 'yes' })
    expect(result?.type === 'tool/result' && JSON.stringify(result.data.output)).toBe(JSON.stringify(output))
    const row = (await engine.page(id)).messages.find((m) => m.id === 'm1')
    const part = row?.parts.find((p) => p.type === 'tool')
    expect(part?.type === 'tool' && JSON.stringify(part.input)).toBe(JSON.stringify(input))
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined()
    expect(Object.keys(Object.prototype)).toEqual([])
  })

  test('a session and an input may be named __proto__ or constructor and behave like any other', async () => {
    const { engine } = await fresh()
    for (const name of ['__proto__', 'constructor', 'hasOwnProperty']) {
      const { id } = await engine.createSession({ id: name, title: name })
      await engine.admit(id, { id: `${name}`, text: 'hello' }).catch(() => undefined)
      expect((await engine.getSession(id))?.title).toBe(name)
    }
    expect((await engine.listSessions()).map((s) => s.id).sort()).toEqual([
      '__proto__',
      'constructor',
      'hasOwnProperty',
      's',
    ])
    expect(Object.keys(Object.prototype)).toEqual([])
  })

  test('non-JSON tool payloads are refused: class instances, Maps, non-finite numbers, undefined inside', async () => {
    const { engine, id } = await fresh()
    const before = await state(engine, id)
    for (const input of [
      new Date(0),
      new Map([[1, 2]]),
      [Number.NaN],
      { a: undefined },
      10n ** 3n,
      // biome-ignore lint/suspicious/noSparseArray: a hole is the hostile input under test
      [1, , 3],
    ]) {
      const code = await codeOf(engine.append(id, [toolCall(input)]))
      expect(code, String(input)).toBe('invalid_input')
    }
    expect(await state(engine, id)).toEqual(before)
  })
})

// In process only: a 256 MiB argument through a MessageChannel would only measure the copy.
describe('import size limits', () => {
  test('an import text over the limit is refused before it is parsed', async () => {
    const { engine, close } = await inProcessEngine()
    cleanups.push(close)
    const code = await codeOf(engine.importTranscript({ text: ' '.repeat(MAX_IMPORT_FILE_BYTES + 1) }))
    expect(code).toBe('invalid_input')
    expect(await engine.listSessions()).toEqual([])
  })

  test('a folder file over the limit fails in its own report, unread, while the next file imports', async () => {
    const { engine, close } = await inProcessEngine()
    cleanups.push(close)
    // A Blob that says it is huge; reading it would fail the test with a different error.
    const huge = new Blob(['x'])
    Object.defineProperty(huge, 'size', { value: MAX_IMPORT_FILE_BYTES + 1 })
    huge.arrayBuffer = () => Promise.reject(new Error('the huge file was read'))
    huge.stream = () => {
      throw new Error('the huge file was read')
    }
    const reports = await engine.importFiles([
      { file: huge, path: 'projects/p/a-huge.jsonl' },
      { file: new Blob(['not a session']), path: 'projects/p/b-small.jsonl' },
    ])
    expect(reports[0]).toMatchObject({
      path: 'projects/p/a-huge.jsonl',
      status: 'failed',
      error: { code: 'invalid_input' },
    })
    expect(reports[0]?.error?.message).toMatch(/larger than/)
    // The second file was read and judged on its own content: one file too large stops nothing.
    expect(reports).toHaveLength(2)
    expect(reports[1]?.path).toBe('projects/p/b-small.jsonl')
    expect(reports[1]?.fingerprint?.size).toBe('not a session'.length)
  })
})
