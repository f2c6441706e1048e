// @vitest-environment happy-dom
// assistant-ui's Edit and Reload on the sessionline runtime, rendered for real (react-dom in
// happy-dom) over an in-process engine with the scripted provider: a reload answers the prompt
// again on a new branch, an edit resends the prompt on a new branch, an edit of an input still
// pending changes it in place, and the thread stays the view's rows throughout.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { AssistantRuntime } from '@assistant-ui/react'
import { act, createElement } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { isSessionlineError } from '../../src'
import { useSessionlineRuntime } from '../../src/assistant-ui'
import { chatRows, isTurnRunning } from '../../src/client/activity'
import { createSessionView } from '../../src/client/session-view'
import type { SessionView, TimelineSnapshot } from '../../src/client/types'
import { until } from '../client/harness'
import { inProcessEngine, type TestEngine } from '../support/engines'

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

async function settle(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 10))
    })
    if (ok()) return
  }
  throw new Error(`timed out waiting for ${what}`)
}

const idle = (s: TimelineSnapshot) => s.status === 'ready' && !isTurnRunning(s.rows) && s.queued.length === 0

function Probe({ view, out }: { view: SessionView; out: { runtime?: AssistantRuntime } }) {
  out.runtime = useSessionlineRuntime(view)
  return null
}

async function mount() {
  engine = await inProcessEngine({ provider: { kind: 'scripted', seed: 5, toolRate: 0, wordDelayMs: 1 } })
  const { id } = await engine.engine.createSession()
  const v = createSessionView(engine.engine, id)
  view = v
  await until(v, (s) => s.status === 'ready')
  const out: { runtime?: AssistantRuntime } = {}
  const container = document.createElement('div')
  document.body.append(container)
  root = createRoot(container)
  act(() => root?.render(createElement(Probe, { view: v, out })))
  return { view: v, runtime: () => out.runtime! }
}

/** The thread's messages equal the view's rows (ids in order). */
function expectThreadEqualsRows(v: SessionView, runtime: AssistantRuntime) {
  expect(runtime.thread.getState().messages.map((m) => m.id)).toEqual(
    chatRows(v.getSnapshot().rows).map((row) => row.key),
  )
}

const branchOf = (v: SessionView, key: string) => {
  const row = v.getSnapshot().rows.find((r) => r.key === key)
  return row?.kind === 'message' ? row.message.branch : undefined
}

describe('assistant-ui: Edit and Reload', () => {
  it('Edit and Reload are offered; Reload answers again on a new branch, Edit resends the prompt on one', async () => {
    const { view, runtime } = await mount()
    await act(async () => {
      await view.admit('first question')
    })
    await settle(() => idle(view.getSnapshot()) && view.getSnapshot().rows.length === 2, 'the first answer')
    const capabilities = runtime().thread.getState().capabilities
    expect([capabilities.edit, capabilities.reload, capabilities.cancel]).toEqual([true, true, true])
    const [prompt, first] = view.getSnapshot().rows.map((row) => row.key)
    // Delete is offered with the branch picker; the log never drops a row, and it says so.
    const deleted = await Promise.resolve()
      .then(() => runtime().thread.getMessageById(first!).delete())
      .then(
        () => undefined,
        (error: unknown) => error,
      )
    expect(isSessionlineError(deleted) && [deleted.code, deleted.details]).toEqual([
      'unsupported',
      { helper: 'onDelete' },
    ])
    await settle(() => runtime().thread.getState().messages.length === 2, 'the thread as it was')
    expect(view.getSnapshot().rows.map((row) => row.key)).toEqual([prompt, first])

    await act(async () => {
      runtime().thread.getMessageById(first!).reload()
    })
    await settle(
      () =>
        idle(view.getSnapshot()) &&
        view.getSnapshot().rows.length === 2 &&
        view.getSnapshot().rows[1]!.key !== first,
      'the reloaded answer',
    )
    const second = view.getSnapshot().rows[1]!.key
    expect(branchOf(view, second)).toEqual({ index: 1, count: 2 })
    await settle(() => runtime().thread.getState().messages.at(-1)?.id === second, 'the thread')
    expectThreadEqualsRows(view, runtime())

    // The branch picker: "2 / 2" on the new answer; going back shows the first answer again.
    expect(runtime().thread.getState().capabilities.switchToBranch).toBe(true)
    const picked = runtime().thread.getMessageById(second).getState()
    expect([picked.branchNumber, picked.branchCount]).toEqual([2, 2])
    await act(async () => {
      runtime().thread.getMessageById(second).switchToBranch({ position: 'previous' })
    })
    await settle(() => view.getSnapshot().rows[1]?.key === first, 'the first answer again')
    await settle(() => runtime().thread.getState().messages.at(-1)?.id === first, 'the thread on it')
    expectThreadEqualsRows(view, runtime())
    expect(branchOf(view, first!)).toEqual({ index: 0, count: 2 })
    await act(async () => {
      runtime().thread.getMessageById(first!).switchToBranch({ position: 'next' })
    })
    await settle(() => view.getSnapshot().rows[1]?.key === second, 'the second answer again')

    const composer = runtime().thread.getMessageById(prompt!).composer
    await act(async () => {
      composer.beginEdit()
      composer.setText('first question, edited')
      composer.send()
    })
    await settle(() => {
      const rows = view.getSnapshot().rows
      const row = rows[0]
      return (
        idle(view.getSnapshot()) &&
        rows.length === 2 &&
        row?.kind === 'message' &&
        row.message.parts.some((p) => p.type === 'text' && p.text === 'first question, edited')
      )
    }, 'the edited branch')
    const edited = view.getSnapshot().rows[0]!.key
    expect(edited).not.toBe(prompt)
    expect(branchOf(view, edited)).toEqual({ index: 1, count: 2 })
    await settle(() => runtime().thread.getState().messages[0]?.id === edited, 'the thread')
    expectThreadEqualsRows(view, runtime())
    // Nothing was lost: the first branch is still in the log.
    await act(async () => {
      await view.switchBranch(prompt!)
    })
    await settle(() => view.getSnapshot().rows[0]?.key === prompt, 'the first branch')
    expect(view.getSnapshot().rows.map((r) => r.key)).toEqual([prompt, second])
  })

  it('after a reload the picker counts every branch from the rows, and switching reaches one this page never saw', async () => {
    engine = await inProcessEngine({ provider: { kind: 'scripted', seed: 5, toolRate: 0, wordDelayMs: 1 } })
    const { id } = await engine.engine.createSession()
    // Written before the page opens: one prompt, answered three times (two regenerations).
    const first = createSessionView(engine.engine, id)
    await until(first, (s) => s.status === 'ready')
    await first.admit('a question')
    await until(first, (s) => idle(s) && s.rows.length === 2)
    const answers = [first.getSnapshot().rows[1]!.key]
    for (let i = 0; i < 2; i++) {
      await first.regenerate(answers.at(-1)!)
      await until(first, (s) => idle(s) && s.rows.length === 2 && !answers.includes(s.rows[1]!.key))
      answers.push(first.getSnapshot().rows[1]!.key)
    }
    first.dispose()

    // The reload: a new view and runtime, which saw none of it happen.
    const v = createSessionView(engine.engine, id)
    view = v
    await until(v, (s) => s.status === 'ready' && s.rows.length === 2)
    const out: { runtime?: AssistantRuntime } = {}
    const container = document.createElement('div')
    document.body.append(container)
    root = createRoot(container)
    act(() => root?.render(createElement(Probe, { view: v, out })))
    const runtime = () => out.runtime!
    const picker = (key: string) => {
      const state = runtime().thread.getMessageById(key).getState()
      return [state.branchNumber, state.branchCount]
    }
    await settle(() => runtime().thread.getState().messages.at(-1)?.id === answers[2], 'the thread')
    expectThreadEqualsRows(v, runtime())
    await settle(() => picker(answers[2]!)[1] === 3, 'the picker to count the branches')
    expect(picker(answers[2]!)).toEqual([3, 3])

    // Back to the first answer, which this page never showed.
    await act(async () => {
      runtime().thread.getMessageById(answers[2]!).switchToBranch({ position: 'previous' })
    })
    await settle(() => v.getSnapshot().rows[1]?.key === answers[1], 'the second answer')
    await act(async () => {
      runtime().thread.getMessageById(answers[1]!).switchToBranch({ position: 'previous' })
    })
    await settle(() => v.getSnapshot().rows[1]?.key === answers[0], 'the first answer')
    await settle(() => runtime().thread.getState().messages.at(-1)?.id === answers[0], 'the thread on it')
    expectThreadEqualsRows(v, runtime())
    expect(picker(answers[0]!)).toEqual([1, 3])
    const shown = v.getSnapshot().rows[1]
    expect(shown?.kind === 'message' && shown.message.parts.some((p) => p.type === 'text')).toBe(true)
  })

  it("an imported Pi tree's picker counts its branches, and picking one switches the session there", async () => {
    engine = await inProcessEngine()
    const text = readFileSync(path.resolve('test/import/fixtures/pi/tree-v3-branch-compaction.jsonl'), 'utf8')
    const { id } = await engine.engine.importTranscript({ text })
    const v = createSessionView(engine.engine, id)
    view = v
    await until(v, (s) => s.status === 'ready' && s.rows.length === 4)
    const out: { runtime?: AssistantRuntime } = {}
    const container = document.createElement('div')
    document.body.append(container)
    root = createRoot(container)
    act(() => root?.render(createElement(Probe, { view: v, out })))
    const runtime = () => out.runtime!
    const picker = (key: string) => {
      const state = runtime().thread.getMessageById(key).getState()
      return [state.branchNumber, state.branchCount]
    }
    // By hand from the file: the leaf's answer d2 is the first of d1's two answers (e1 the second).
    const d2 = 'pi:fx-tree-v3/d2'
    const e1 = 'pi:fx-tree-v3/e1'
    await settle(() => runtime().thread.getState().messages.at(-1)?.id === d2, 'the thread')
    await settle(() => picker(d2)[1] === 2, 'the picker to count the answers')
    expect(picker(d2)).toEqual([1, 2])
    await act(async () => {
      runtime().thread.getMessageById(d2).switchToBranch({ position: 'next' })
    })
    await settle(() => v.getSnapshot().rows.at(-1)?.key === e1, 'the other answer')
    await settle(() => runtime().thread.getState().messages.at(-1)?.id === e1, 'the thread on it')
    expectThreadEqualsRows(v, runtime())
    expect(picker(e1)).toEqual([2, 2])
  })
})
