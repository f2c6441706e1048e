/**
 * `useSessionlineChat` rendered for real (react-dom in happy-dom) over an in-process engine with
 * the scripted provider, asserted through the hook's result. The same cases run against the
 * pinned ai 7 and against ai 5.0.0 / @ai-sdk/react 2.0.0 (use-sessionline-chat-ai5.test.ts
 * swaps the modules in), the oldest releases the adapter claims.
 */
import { act, createElement } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { isSessionlineError } from '../../src'
import { type SessionlineChat, type UseSessionlineChatOptions, useSessionlineChat } from '../../src/ai-sdk'
import { chatRows, isTurnRunning } from '../../src/client/activity'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import type { EngineOptions } from '../../src/engine/engine'
import type { ModelProvider, Tools } from '../../src/engine/provider'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'

interface Mounted {
  view: SessionView
  /** The hook's result at each render. */
  renders: SessionlineChat[]
  latest(): SessionlineChat
}

const textOf = (message: SessionlineChat['messages'][number]) =>
  message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')

/** Renders nothing; records what the hook returned at each render. */
function Probe({
  view,
  renders,
  options,
}: {
  view: SessionView
  renders: SessionlineChat[]
  options?: UseSessionlineChatOptions
}) {
  renders.push(useSessionlineChat(view, options))
  return null
}

/** Lets React and the stream catch up with the view (real timers, small steps). */
async function settle(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 10))
    })
    if (ok()) return
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** The settled transcript: no open row, nothing pending or queued. */
const idle = (s: TimelineSnapshot) => s.status === 'ready' && !isTurnRunning(s.rows) && s.queued.length === 0

export function defineChatCases(
  release: string,
  options: { resumesThroughStream: boolean; steersAsParts: boolean },
): void {
  let engine: TestEngine | undefined
  let root: Root | undefined
  let view: SessionView | undefined

  beforeAll(() => {
    ;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true
  })
  afterEach(async () => {
    if (root) act(() => root?.unmount())
    root = undefined
    view?.dispose()
    view = undefined
    await engine?.close()
    engine = undefined
  })

  async function open(
    wordDelayMs: number,
    custom?: Pick<EngineOptions, 'provider' | 'tools'>,
  ): Promise<{ view: SessionView; sessionId: string }> {
    engine = await inProcessEngine(
      custom ?? { provider: { kind: 'scripted', seed: 11, toolRate: 0, wordDelayMs } },
    )
    const { id } = await engine.engine.createSession()
    view = createSessionView(engine.engine, id)
    await until(view, (s) => s.status === 'ready')
    return { view, sessionId: id }
  }

  function mount(target: SessionView, options?: UseSessionlineChatOptions): Mounted {
    const renders: SessionlineChat[] = []
    const container = document.createElement('div')
    document.body.append(container)
    root = createRoot(container)
    act(() => root?.render(createElement(Probe, { view: target, renders, ...(options ? { options } : {}) })))
    return { view: target, renders, latest: () => renders.at(-1)! }
  }

  /** Messages equal the view's rows: same ids in the same order, same text. */
  function expectMessagesEqualRows(mounted: Mounted) {
    const rows = chatRows(mounted.view.getSnapshot().rows)
    const { messages } = mounted.latest()
    expect(messages.map((message) => message.id)).toEqual(rows.map((row) => row.key))
    expect(messages.map(textOf)).toEqual(
      rows.map((row) =>
        row.kind === 'message'
          ? row.message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
          : row.input.text,
      ),
    )
  }

  describe(`useSessionlineChat with ${release}`, () => {
    it(`${release}: addToolApprovalResponse answers a call that waits for approval, and the turn goes on`, async () => {
      const runs: unknown[] = []
      const provider: ModelProvider = (request) =>
        (async function* () {
          const answered = request.context.some((row) => row.parts.some((part) => part.type === 'tool'))
          if (answered) yield { type: 'text' as const, text: 'Deployed.' }
          else yield { type: 'tool-call' as const, callId: 'call_deploy', name: 'deploy', input: {} }
          yield { type: 'finish' as const, finish: answered ? ('stop' as const) : ('tool-calls' as const) }
        })()
      const tools: Tools = {
        deploy: {
          needsApproval: true,
          async run(input) {
            runs.push(input)
            return { ok: true }
          },
        },
      }
      const { view } = await open(0, { provider, tools })
      const chat = mount(view)
      await act(async () => {
        void chat.latest().sendMessage({ text: 'deploy' })
      })
      const waiting = () =>
        chatRows(view.getSnapshot().rows).some(
          (row) =>
            row.kind === 'message' &&
            row.message.parts.some((part) => part.type === 'tool' && part.state === 'awaiting-approval'),
        )
      await settle(waiting, 'the call to wait for approval')
      expect(runs).toEqual([])
      await act(async () => {
        await chat.latest().addToolApprovalResponse({ id: 'call_deploy', approved: true })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().status === 'ready', 'the answer')
      expect(runs).toEqual([{}])
      await settle(() => chat.latest().messages.some((m) => textOf(m) === 'Deployed.'), 'the last step')
    })

    it(`${release}: a sent message streams its answer live, status goes submitted → streaming → ready, and ids equal the row ids`, async () => {
      const { view } = await open(3)
      const chat = mount(view)
      await act(async () => {
        await chat.latest().sendMessage({ text: 'hello there' })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().status === 'ready', 'the answer')
      const statuses = chat.renders.map((render) => render.status).filter((s, i, all) => s !== all[i - 1])
      expect(statuses).toEqual(['ready', 'submitted', 'streaming', 'ready'])
      const lengths = new Set(
        chat.renders.flatMap((render) =>
          render.messages.filter((message) => message.role === 'assistant').map((m) => textOf(m).length),
        ),
      )
      expect(lengths.size).toBeGreaterThan(2) // it grew in steps, not all at once
      await settle(() => chat.latest().messages.length === 2, 'the messages')
      expectMessagesEqualRows(chat)
    })

    it(`${release}: a message sent while a turn runs waits in queued, not in messages, then runs as its own turn in the view order`, async () => {
      const { view } = await open(3)
      const chat = mount(view)
      await act(async () => {
        void chat.latest().sendMessage({ text: 'first' })
      })
      await settle(() => chat.latest().isRunning, 'the first turn')
      await act(async () => {
        await chat.latest().sendMessage({ text: 'second' })
      })
      await settle(() => chat.latest().queued.length === 1, 'the queued input')
      const queued = chat.latest().queued[0]!
      expect(chat.latest().messages.some((message) => message.id === queued.id)).toBe(false)
      if ('experimental_queuedMessages' in chat.latest())
        expect(chat.latest().experimental_queuedMessages.map((message) => message.id)).toEqual([queued.id])
      await settle(() => {
        const s = view.getSnapshot()
        return idle(s) && s.rows.length === 4 && chat.latest().status === 'ready'
      }, 'both turns')
      await settle(() => chat.latest().messages.length === 4, 'the messages')
      expectMessagesEqualRows(chat)
      expect(chat.latest().messages[2]!.id).toBe(queued.id)
    })

    it(`${release}: experimental_sendQueuedMessageNow makes a queued input a steer under its own id`, async () => {
      const { view } = await open(3)
      const chat = mount(view)
      await act(async () => {
        void chat.latest().sendMessage({ text: 'first' })
      })
      await settle(() => chat.latest().isRunning, 'the first turn')
      await act(async () => {
        await chat.latest().sendMessage({ text: 'now, please' })
      })
      await settle(() => chat.latest().queued.length === 1, 'the queued input')
      const queued = chat.latest().queued[0]!
      await act(async () => {
        await chat.latest().experimental_sendQueuedMessageNow(queued.id)
      })
      expect(chat.latest().queued).toEqual([])
      await settle(() => idle(view.getSnapshot()) && chat.latest().status === 'ready', 'the turn')
      const row = view.getSnapshot().rows.find((r) => r.key === queued.id)
      expect(row?.kind === 'message' && row.message.role).toBe('user')
    })

    it(`${release}: two messages sent in the same tick: the first opens the turn, the second waits in the queue`, async () => {
      const { view } = await open(5)
      const chat = mount(view)
      await act(async () => {
        const { sendMessage } = chat.latest()
        void sendMessage({ text: 'one' })
        void sendMessage({ text: 'two' })
      })
      await settle(() => {
        const s = view.getSnapshot()
        return idle(s) && s.rows.length === 4 && chat.latest().status === 'ready'
      }, 'both turns')
      await settle(() => chat.latest().messages.length === 4, 'the messages')
      expectMessagesEqualRows(chat)
      const turns = view.getSnapshot().rows.map((row) => (row.kind === 'message' ? row.message.turn : 0))
      expect(turns).toEqual([1, 1, 2, 2])
    })

    it(`${release}: an answer already running when the hook mounts shows once, under its row id, and is followed to its end`, async () => {
      const { view } = await open(8)
      await view.admit('started elsewhere, before the chat mounted')
      const running = await until(view, (s) => {
        const row = s.rows.at(-1)
        return row?.kind === 'message' && row.message.role === 'assistant' && row.message.parts.length > 0
      })
      const chat = mount(view)
      await settle(() => idle(view.getSnapshot()) && chat.latest().status === 'ready', 'the answer')
      await settle(() => chat.latest().messages.length === 2, 'the messages')
      expectMessagesEqualRows(chat)
      expect(chat.latest().messages[1]!.id).toBe(running.rows.at(-1)!.key)
      const sawStream = chat.renders.some((render) => render.status === 'streaming')
      expect(sawStream).toBe(options.resumesThroughStream)
      // Never two messages for one row, at any render.
      for (const render of chat.renders) {
        const ids = render.messages.map((message) => message.id)
        expect(new Set(ids).size).toBe(ids.length)
      }
    })

    it(`${release}: a turn that calls a tool is one assistant message, a step-start part per step, and onFinish fires once`, async () => {
      const { view } = await open(2, {
        provider: { kind: 'scripted', seed: 11, toolRate: 1, wordDelayMs: 2 },
      })
      const finished: string[] = []
      const chat = mount(view, { onFinish: ({ message }) => void finished.push(message.id) })
      await act(async () => {
        await chat.latest().sendMessage({ text: 'what time is it?' })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().status === 'ready', 'the turn')
      await settle(() => chat.latest().messages.length === 2, 'the messages')
      const steps = chatRows(view.getSnapshot().rows).filter(
        (row) => row.kind === 'message' && row.message.role === 'assistant',
      )
      expect(steps.length).toBeGreaterThanOrEqual(2) // the tool call, then the answer
      const answer = chat.latest().messages[1]!
      expect(answer.id).toBe(steps[0]!.key)
      expect(answer.parts.filter((part) => part.type === 'step-start')).toHaveLength(steps.length)
      expect(answer.parts.some((part) => part.type === 'dynamic-tool')).toBe(true)
      expect(textOf(answer).length).toBeGreaterThan(0)
      expect(finished).toEqual([answer.id])
      // No render ever showed a step as a message of its own.
      for (const render of chat.renders)
        expect(render.messages.filter((message) => message.role === 'assistant').length).toBeLessThanOrEqual(
          1,
        )
    })

    it(`${release}: a steer that joins the running turn is ${options.steersAsParts ? "a steering-message part of the turn's message" : 'a user message between its steps'}`, async () => {
      const { view } = await open(20)
      const chat = mount(view)
      await act(async () => {
        void chat.latest().sendMessage({ text: 'a long answer please' })
      })
      await settle(() => {
        const answer = chat.latest().messages.find((message) => message.role === 'assistant')
        return answer !== undefined && textOf(answer).length > 5
      }, 'the answer to stream')
      let steer = ''
      await act(async () => {
        steer = (await chat.latest().admit('and mention the queue', { delivery: 'steer' })).id
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().status === 'ready', 'the turn')
      const rows = chatRows(view.getSnapshot().rows)
      // The steer joined turn 1 at its next safe boundary: a second step answers it.
      expect(rows.map((row) => (row.kind === 'message' ? [row.message.role, row.message.turn] : []))).toEqual(
        [
          ['user', 1],
          ['assistant', 1],
          ['user', 1],
          ['assistant', 1],
        ],
      )
      expect(rows[2]!.key).toBe(steer)
      if (options.steersAsParts) {
        await settle(() => chat.latest().messages.length === 2, 'one message for the turn')
        const answer = chat.latest().messages[1]!
        expect(answer.id).toBe(rows[1]!.key)
        expect(
          answer.parts
            .map((part) => part.type)
            .filter((type) => type === 'step-start' || type === 'steering-message'),
        ).toEqual(['step-start', 'steering-message', 'step-start'])
        expect(answer.parts.find((part) => part.type === ('steering-message' as string))).toEqual({
          type: 'steering-message',
          id: steer,
          parts: [{ type: 'text', text: 'and mention the queue' }],
        })
      } else {
        await settle(() => chat.latest().messages.length === 4, 'the messages')
        expectMessagesEqualRows(chat)
      }
    })

    it(`${release}: every helper the session cannot honour throws unsupported naming itself, and admits nothing`, async () => {
      const { view } = await open(3)
      const chat = mount(view)
      const helpers = chat.latest() as unknown as Record<string, (...args: unknown[]) => unknown>
      /** The helper named in the error each call throws or rejects with. */
      const refusal = async (call: () => unknown): Promise<unknown> => {
        try {
          await call()
        } catch (error) {
          expect(isSessionlineError(error) && error.code).toBe('unsupported')
          return isSessionlineError(error) ? (error.details as { helper: string }).helper : error
        }
        throw new Error('it did not throw')
      }
      const source = { type: 'source-url', sourceId: 's1', url: 'https://example.test/' }
      const named: unknown[] = []
      await act(async () => {
        named.push(await refusal(() => helpers.setMessages!([])))
        named.push(
          await refusal(() =>
            chat.latest().sendMessage({ text: 'with metadata', metadata: { x: 1 } } as never),
          ),
        )
        named.push(
          await refusal(() =>
            chat.latest().sendMessage({
              messageId: 'm1',
              role: 'user',
              parts: [{ type: 'file', url: 'data:text/plain,x', mediaType: 'text/plain' }],
            } as never),
          ),
        )
        named.push(await refusal(() => chat.latest().sendMessage({ role: 'user', parts: [source] } as never)))
        for (const helper of ['addToolResult', 'addToolOutput'])
          if (helper in helpers)
            named.push(
              await refusal(() => helpers[helper]!({ tool: 'clock', toolCallId: 'c1', output: null })),
            )
      })
      expect(named.slice(0, 4)).toEqual([
        'setMessages',
        'sendMessage({ metadata })',
        'sendMessage({ messageId }) with files',
        'sendMessage with a source-url part',
      ])
      expect(named.slice(4)).toEqual(['addToolResult', 'addToolOutput'].filter((helper) => helper in helpers))
      expect(named.length).toBeGreaterThanOrEqual(5) // every release has addToolResult
      expect(view.getSnapshot().rows).toEqual([])
      expect(view.getSnapshot().queued).toEqual([])
      // What works still works: a plain text message is sent and answered.
      await act(async () => {
        await chat.latest().sendMessage({ text: 'plain text' })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().messages.length === 2, 'the answer')
    })

    it(`${release}: regenerate() answers the last prompt again on a new branch and ends ready; regenerate({messageId}) too`, async () => {
      const { view } = await open(2)
      const chat = mount(view)
      await act(async () => {
        await chat.latest().sendMessage({ text: 'first question' })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().messages.length === 2, 'the first answer')
      const first = chat.latest().messages[1]!
      const renders = chat.renders.length
      await act(async () => {
        await chat.latest().regenerate()
      })
      await settle(
        () =>
          idle(view.getSnapshot()) &&
          chat.latest().status === 'ready' &&
          chat.latest().messages.length === 2 &&
          chat.latest().messages[1]!.id !== first.id,
        'the regenerated answer',
      )
      expect(chat.renders.slice(renders).some((render) => render.status === 'error')).toBe(false)
      expect(chat.latest().error).toBeUndefined()
      expectMessagesEqualRows(chat)
      const second = chat.latest().messages[1]!
      const answer = view.getSnapshot().rows.find((row) => row.key === second.id)
      expect(answer?.kind === 'message' && answer.message.branch).toEqual({ index: 1, count: 2 })
      // By message id, the answer shown now.
      await act(async () => {
        await chat.latest().regenerate({ messageId: second.id })
      })
      await settle(
        () =>
          idle(view.getSnapshot()) &&
          chat.latest().status === 'ready' &&
          chat.latest().messages.length === 2 &&
          ![first.id, second.id].includes(chat.latest().messages[1]!.id),
        'the third answer',
      )
      expectMessagesEqualRows(chat)
      const third = view.getSnapshot().rows.at(-1)!
      expect(third.kind === 'message' && third.message.branch).toEqual({ index: 2, count: 3 })
    })

    it(`${release}: sendMessage({text, messageId}) resends that prompt with the new text and ends ready`, async () => {
      const { view } = await open(2)
      const chat = mount(view)
      await act(async () => {
        await chat.latest().sendMessage({ text: 'first question' })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().messages.length === 2, 'the first answer')
      await act(async () => {
        await chat.latest().sendMessage({ text: 'second question' })
      })
      await settle(() => idle(view.getSnapshot()) && chat.latest().messages.length === 4, 'the second answer')
      const [prompt] = chat.latest().messages
      await act(async () => {
        await chat.latest().sendMessage({ text: 'first question, edited', messageId: prompt!.id } as never)
      })
      await settle(
        () =>
          idle(view.getSnapshot()) &&
          chat.latest().status === 'ready' &&
          chat.latest().messages.length === 2 &&
          textOf(chat.latest().messages[0]!) === 'first question, edited',
        'the edited branch',
      )
      expect(chat.latest().error).toBeUndefined()
      expectMessagesEqualRows(chat)
      const edited = view.getSnapshot().rows[0]!
      expect(edited.key).not.toBe(prompt!.id)
      expect(edited.kind === 'message' && edited.message.branch).toEqual({ index: 1, count: 2 })
      // The old branch is still there: switching back shows it again.
      await act(async () => {
        await view.switchBranch(prompt!.id)
      })
      await settle(() => chat.latest().messages.length === 4, 'the old branch')
      expectMessagesEqualRows(chat)
    })

    it(`${release}: stop interrupts the turn and keeps the partial answer`, async () => {
      const { view } = await open(15)
      const chat = mount(view)
      await act(async () => {
        void chat.latest().sendMessage({ text: 'a long answer please' })
      })
      await settle(() => {
        const answer = chat.latest().messages.find((message) => message.role === 'assistant')
        return answer !== undefined && textOf(answer).length > 10
      }, 'some streamed text')
      await act(async () => {
        await chat.latest().stop()
      })
      await settle(() => {
        const row = view.getSnapshot().rows.at(-1)
        return row?.kind === 'message' && row.message.status === 'interrupted'
      }, 'the interrupted row')
      await settle(() => chat.latest().status === 'ready' && !chat.latest().isRunning, 'ready')
      await settle(() => chat.latest().messages[1]?.metadata?.status === 'interrupted', 'the settled message')
      expectMessagesEqualRows(chat)
      expect(textOf(chat.latest().messages[1]!).length).toBeGreaterThan(10)
    })
  })
}
