// @vitest-environment happy-dom
// Stop's contract on the README's assistant-ui example, rendered for real (react-dom in
// happy-dom) over an in-process engine: once Stop has gone disabled, no more text appears, and
// what shows is the interrupted row's text, all of it.
import { act, createElement } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView } from '../../src/client/types'
import type { ModelProvider } from '../../src/engine/provider'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'
import { Thread } from './assistant-ui-example'

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

/** Lets React, the runtime and the stream catch up (real timers, small steps). */
async function settle(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 10))
    })
    if (ok()) return
  }
  throw new Error(`timed out waiting for ${what}`)
}

const stopButton = () =>
  [...document.querySelectorAll<HTMLButtonElement>('.thread button')].find(
    (button) => button.textContent === 'Stop',
  )
const ANSWER = 'The inbox keeps every input durable from the moment it is admitted. '.repeat(3)
const answerText = () => document.querySelector('[data-role="assistant"]')?.textContent ?? ''

describe('assistant-ui: Stop', () => {
  it('once Stop is disabled no text arrives, and the whole interrupted answer is shown', async () => {
    // One long piece of text at once, then nothing until Stop: the whole answer is in the row
    // before Stop is pressed, so nothing the model sends can explain text arriving later.
    const provider: ModelProvider = async function* ({ signal }) {
      yield { type: 'text', text: ANSWER }
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    }
    engine = await inProcessEngine({ provider })
    const { id } = await engine.engine.createSession()
    const v = createSessionView(engine.engine, id)
    view = v
    await until(v, (s) => s.status === 'ready')
    const container = document.createElement('div')
    document.body.append(container)
    root = createRoot(container)
    act(() => root?.render(createElement(Thread, { view: v })))

    await act(async () => {
      await v.admit('a long answer please')
    })
    await settle(
      () =>
        stopButton()?.disabled === false &&
        v
          .getSnapshot()
          .rows.some(
            (r) => r.kind === 'message' && r.message.role === 'assistant' && r.message.parts.length > 0,
          ),
      'the answer to stream',
    )
    await act(async () => {
      stopButton()!.click()
    })
    await settle(() => stopButton()?.disabled === true, 'Stop to go disabled')
    const atStop = answerText()
    const row = v.getSnapshot().rows.at(-1)
    expect(row?.kind === 'message' && row.message.status).toBe('interrupted')
    const rowText =
      row?.kind === 'message' ? row.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('') : ''
    // Longer than assistant-ui's text reveal takes to drain (250 ms).
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 400))
    })
    expect(answerText()).toBe(atStop)
    expect(atStop).toBe(rowText)
  }, 30_000)
})
