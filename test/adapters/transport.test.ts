// SessionlineChatTransport against the real `ai` stream reader: what the transport streams, read
// back the way `useChat` reads it, must be the row's own conversion (differential: the streamed
// message vs `toUIMessage` of the settled row), over seeds and with tool steps.
import { readUIMessageStream, type UIMessageChunk } from 'ai'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { rowsToUIMessages, type SessionlineUIMessage, steerOf, toUIMessage } from '../../src/ai-sdk/messages'
import { SessionlineChatTransport } from '../../src/ai-sdk/transport'
import { chatRows, isTurnRunning } from '../../src/client/activity'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView } from '../../src/client/types'
import { isSessionlineError } from '../../src/schema/errors'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'

/** The chunk types ai 5.0.0, 6 and 7 all know (ai 5.0.0's `UIMessageChunk`, minus data parts). */
const SHARED_CHUNK_TYPES = new Set([
  'start',
  'finish',
  'abort',
  'error',
  'start-step',
  'finish-step',
  'text-start',
  'text-delta',
  'text-end',
  'reasoning-start',
  'reasoning-delta',
  'reasoning-end',
  'tool-input-start',
  'tool-input-delta',
  'tool-input-available',
  'tool-output-available',
  'tool-output-error',
  'message-metadata',
])

const open: TestEngine[] = []
const views: SessionView[] = []
afterEach(async () => {
  for (const view of views.splice(0)) view.dispose()
  for (const engine of open.splice(0)) await engine.close()
})

async function session(provider: { seed: number; toolRate: number; wordDelayMs: number }) {
  const made = await inProcessEngine({ provider: { kind: 'scripted', ...provider } })
  open.push(made)
  const { id } = await made.engine.createSession()
  const view = createSessionView(made.engine, id)
  views.push(view)
  await until(view, (s) => s.status === 'ready')
  return { ...made, view, transport: new SessionlineChatTransport({ view }) }
}

/** Reads a stream the way `useChat` does; also returns every chunk type it carried. */
async function read(stream: ReadableStream<UIMessageChunk>) {
  const types: string[] = []
  const first: UIMessageChunk[] = []
  const tapped = stream.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform(chunk, controller) {
        types.push(chunk.type)
        if (first.length < 3) first.push(chunk)
        controller.enqueue(chunk)
      },
    }),
  )
  let message: SessionlineUIMessage | undefined
  for await (const state of readUIMessageStream<SessionlineUIMessage>({ stream: tapped })) message = state
  return { message, types, first }
}

/**
 * JSON-equal form: the reader leaves `undefined` fields that a converted message omits, and
 * ai 7 keeps the stream's part id on reasoning parts (ai 5 has no such field).
 */
const plain = (value: unknown) =>
  JSON.parse(JSON.stringify(value, (key, field) => (key === 'id' && /:\d+$/.test(field) ? undefined : field)))

const userMessage = (id: string, text: string): SessionlineUIMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }],
})

describe('SessionlineChatTransport', () => {
  it('a turn, streamed (send, then reconnects) and read by ai, is one assistant message equal to its converted steps, and only shared chunk types are sent', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1_000 }), fc.constantFrom(0, 1), async (seed, toolRate) => {
        const { view, transport } = await session({ seed, toolRate, wordDelayMs: 1 })
        const streamed: SessionlineUIMessage[] = []
        const types = new Set<string>()
        const sent = await read(
          await transport.sendMessages({
            chatId: view.sessionId,
            trigger: 'submit-message',
            messageId: undefined,
            messages: [userMessage('input-1', `what is 6 * 7, seed ${seed}?`)],
            abortSignal: undefined,
          }),
        )
        streamed.push(sent.message!)
        for (const type of sent.types) types.add(type)
        // Later steps of the turn (after tool results) come through reconnects, as the hook does.
        for (;;) {
          const next = await transport.reconnectToStream({ chatId: view.sessionId })
          if (next === null) {
            if (!isTurnRunning(view.getSnapshot().rows)) break
            await new Promise((resolve) => setTimeout(resolve, 5))
            continue
          }
          const resumed = await read(next)
          if (streamed.at(-1)?.id !== resumed.message!.id) streamed.push(resumed.message!)
          for (const type of resumed.types) types.add(type)
        }
        const rows = chatRows(view.getSnapshot().rows)
        expect(rows[0]!.key).toBe('input-1')
        const assistants = rows.filter((row) => row.kind === 'message' && row.message.role === 'assistant')
        // One message for the turn: the send's stream follows every step, so no reconnect adds one.
        expect(streamed).toHaveLength(1)
        expect(plain(streamed)).toEqual(plain(rowsToUIMessages(view.getSnapshot().rows).slice(1)))
        expect(streamed[0]!.id).toBe(assistants[0]!.key)
        // A step-start part per step (per assistant row): two when a tool was called first.
        const steps = streamed[0]!.parts.filter((part) => part.type === 'step-start').length
        expect(steps).toBe(assistants.length)
        if (toolRate === 1) {
          expect(assistants.length).toBeGreaterThanOrEqual(2)
          expect(types.has('tool-output-available')).toBe(true)
        }
        for (const type of types) expect(SHARED_CHUNK_TYPES.has(type), type).toBe(true)
        view.dispose()
      }),
      { numRuns: 8 },
    )
  })

  it('a reconnect mid-answer replays the running row from its start, under its stored id, and follows it to the end', async () => {
    const { view, transport } = await session({ seed: 3, toolRate: 0, wordDelayMs: 15 })
    await view.admit('tell me about the inbox, at length please')
    const partial = await until(view, (s) => {
      const row = s.rows.at(-1)
      return row?.kind === 'message' && row.message.role === 'assistant' && row.message.parts.length > 0
    })
    const running = partial.rows.at(-1)!
    const stream = await transport.reconnectToStream({ chatId: view.sessionId })
    const { message, first } = await read(stream!)
    expect(first[0]).toEqual({
      type: 'start',
      messageId: running.key,
      messageMetadata: expect.objectContaining({ status: 'streaming' }),
    })
    const settled = chatRows(view.getSnapshot().rows).find((row) => row.key === running.key)!
    expect(plain(message)).toEqual(plain(toUIMessage(settled)))
    expect(settled.kind === 'message' && settled.message.status).toBe('complete')
  })

  it('with steering, a steer taken into the turn streams as a steering-message part between its steps, equal to the conversion', async () => {
    const { view } = await session({ seed: 5, toolRate: 0, wordDelayMs: 15 })
    const transport = new SessionlineChatTransport({ view, steering: true })
    const reading = read(
      await transport.sendMessages({
        chatId: view.sessionId,
        trigger: 'submit-message',
        messageId: undefined,
        messages: [userMessage('input-s', 'a long answer please')],
        abortSignal: undefined,
      }),
    )
    await until(view, (s) =>
      s.rows.some(
        (row) => row.kind === 'message' && row.message.role === 'assistant' && row.message.parts.length > 0,
      ),
    )
    const steer = await view.admit('and mention the queue', { delivery: 'steer' })
    const { message, types } = await reading
    const rows = view.getSnapshot().rows
    expect(rows.map((row) => row.key)).toContain(steer.id)
    expect(types).toContain('steering-message')
    expect(plain(message)).toEqual(plain(rowsToUIMessages(rows, { steering: true }).slice(1)[0]))
    expect(rowsToUIMessages(rows, { steering: true })).toHaveLength(2)
    // steerOf reads it for rendering; any other part is not a steer.
    expect(message!.parts.map(steerOf).filter(Boolean)).toEqual([
      { id: steer.id, text: 'and mention the queue' },
    ])
    // Without it the steer is a user message between the turn's two assistant messages.
    expect(rowsToUIMessages(rows).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  })

  it('reconnecting while no assistant row runs returns null', async () => {
    const { view, transport } = await session({ seed: 1, toolRate: 0, wordDelayMs: 0 })
    expect(await transport.reconnectToStream({ chatId: view.sessionId })).toBeNull()
  })

  it("aborting a sent message's stream interrupts the turn and keeps the text streamed so far", async () => {
    const { view, transport } = await session({ seed: 5, toolRate: 0, wordDelayMs: 15 })
    const abort = new AbortController()
    const stream = await transport.sendMessages({
      chatId: view.sessionId,
      trigger: 'submit-message',
      messageId: undefined,
      messages: [userMessage('input-stop', 'a long answer, please, with many words')],
      abortSignal: abort.signal,
    })
    const reader = stream.getReader()
    for (;;) {
      const { value } = await reader.read()
      if (value?.type === 'text-delta') break
    }
    abort.abort()
    const stopped = await until(view, (s) => {
      const row = s.rows.at(-1)
      return row?.kind === 'message' && row.message.status === 'interrupted'
    })
    const row = stopped.rows.at(-1)!
    expect(
      row.kind === 'message' && row.message.parts[0]?.type === 'text' && row.message.parts[0].text.length,
    ).toBeGreaterThan(0)
    expect(isTurnRunning(stopped.rows)).toBe(false)
  })

  it('regenerating a message the session does not have is refused with not_found and writes nothing', async () => {
    const { view, transport } = await session({ seed: 1, toolRate: 0, wordDelayMs: 0 })
    const refused = await transport
      .sendMessages({
        chatId: view.sessionId,
        trigger: 'regenerate-message',
        messageId: 'whatever',
        messages: [userMessage('input-r', 'again')],
        abortSignal: undefined,
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      )
    expect(isSessionlineError(refused) && refused.code).toBe('not_found')
    expect(view.getSnapshot().rows).toEqual([])
  })
})

describe('rowsToUIMessages', () => {
  it('converts each row object once: an unchanged row keeps its message, a changed row gets a new one, ids are the row keys', async () => {
    const { view } = await session({ seed: 9, toolRate: 0, wordDelayMs: 5 })
    await view.admit('hello')
    const streaming = await until(view, (s) =>
      s.rows.some((row) => row.kind === 'message' && row.message.role === 'assistant'),
    )
    const before = rowsToUIMessages(streaming.rows)
    expect(before.map((message) => message.id)).toEqual(streaming.rows.map((row) => row.key))
    const done = await until(view, (s) => !isTurnRunning(s.rows))
    const after = rowsToUIMessages(done.rows)
    expect(after[0]).toBe(before[0]) // the user row did not change
    expect(after[1]).not.toBe(before[1]) // the answer grew
    expect(rowsToUIMessages(done.rows)).toEqual(after)
    expect(rowsToUIMessages(done.rows).every((message, i) => message === after[i])).toBe(true)
  })
})
