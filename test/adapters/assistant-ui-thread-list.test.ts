// @vitest-environment happy-dom
// useSessionlineThreadList under a real assistant-ui runtime (react-dom in happy-dom) over an
// in-process engine, driven through assistant-ui's own thread-list API: the threads are the
// sessions (newest first, titled), switching opens that session, "new thread" creates one,
// delete removes the session and moves off it.
import type { AssistantRuntime } from '@assistant-ui/react'
import { act, createElement } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { useSessionlineRuntime } from '../../src/assistant-ui/runtime'
import {
  type SessionlineThreadList,
  type ThreadListClient,
  useSessionlineThreadList,
} from '../../src/assistant-ui/thread-list'
import { createSessionView } from '../../src/client/session-view'
import { inProcessEngine, type TestEngine } from '../support/engines'

let engine: TestEngine | undefined
let root: Root | undefined

beforeAll(() => {
  ;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true
})
afterEach(async () => {
  if (root) act(() => root?.unmount())
  root = undefined
  await engine?.close()
  engine = undefined
})

async function settle(ok: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 10))
    })
    if (await ok()) return
  }
  throw new Error(`timed out waiting for ${what}`)
}

interface Seen {
  list?: SessionlineThreadList
  runtime?: AssistantRuntime
}

function Thread({ list, seen }: { list: SessionlineThreadList; seen: Seen }) {
  seen.runtime = useSessionlineRuntime(list.view!, { adapters: { threadList: list.threadList } })
  return null
}

function Threads({ client, seen }: { client: ThreadListClient; seen: Seen }) {
  const list = useSessionlineThreadList(client)
  seen.list = list
  return list.view ? createElement(Thread, { key: list.sessionId, list, seen }) : null
}

describe('useSessionlineThreadList', () => {
  it('lists the sessions newest first with their titles, switches, creates and deletes through assistant-ui', async () => {
    engine = await inProcessEngine({ provider: { kind: 'scripted', seed: 2, toolRate: 0, wordDelayMs: 0 } })
    const e = engine.engine
    const alpha = await e.createSession({ title: 'Alpha' })
    await new Promise((resolve) => setTimeout(resolve, 5))
    const beta = await e.createSession({ title: 'Beta' })
    const client: ThreadListClient = {
      listSessions: () => e.listSessions(),
      createSession: (request) => e.createSession(request),
      deleteSession: (id) => e.deleteSession(id),
      open: (id) => createSessionView(e, id),
    }
    const seen: Seen = {}
    const container = document.createElement('div')
    document.body.append(container)
    root = createRoot(container)
    act(() => root?.render(createElement(Threads, { client, seen })))
    const threads = () => seen.runtime?.threads.getState()
    const titles = () =>
      (threads()?.threadIds ?? []).map((id) => seen.runtime!.threads.getItemById(id).getState().title)

    // The newest session opens first; the list is the sessions, newest first.
    await settle(() => seen.runtime !== undefined && threads()?.threadIds.length === 2, 'the list')
    expect(seen.list!.sessionId).toBe(beta.id)
    expect(threads()!.threadIds).toEqual([beta.id, alpha.id])
    expect(titles()).toEqual(['Beta', 'Alpha'])
    expect(threads()!.mainThreadId).toBe(beta.id)

    // Switching opens that session's view.
    await act(async () => {
      await seen.runtime!.threads.switchToThread(alpha.id)
    })
    await settle(() => seen.list!.view?.sessionId === alpha.id, 'the switch to Alpha')
    expect(threads()!.mainThreadId).toBe(alpha.id)

    // A new thread is a new session, opened at once.
    await act(async () => {
      await seen.runtime!.threads.switchToNewThread()
    })
    await settle(
      async () => (await e.listSessions()).length === 3 && threads()?.threadIds.length === 3,
      'the new one',
    )
    const created = (await e.listSessions()).find(
      (session) => session.id !== alpha.id && session.id !== beta.id,
    )!
    expect(created.title).toBe('New chat')
    await settle(() => seen.list!.view?.sessionId === created.id, 'the switch to the new one')

    // Deleting the open thread deletes the session and opens the newest one left.
    await act(async () => {
      await seen.runtime!.threads.getItemById(created.id).delete()
    })
    await settle(() => threads()?.threadIds.length === 2 && seen.list!.sessionId !== created.id, 'the delete')
    expect((await e.listSessions()).map((session) => session.id)).toEqual([beta.id, alpha.id])
    expect(seen.list!.sessionId).toBe(beta.id)
    expect(titles()).toEqual(['Beta', 'Alpha'])
  })
})
