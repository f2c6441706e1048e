/**
 * A thread list for assistant-ui over the sessions of a client: the threads are `listSessions`
 * (newest first, titled), switching opens that session's view, "new thread" is `createSession`
 * and delete is `deleteSession`. Pass `threadList` as the runtime's adapter and render the thread
 * of `view`:
 *
 * @example
 *   const { view, threadList } = useSessionlineThreadList(client)
 *   const runtime = useSessionlineRuntime(view, { adapters: { threadList } })
 *
 * Sessions have no rename or archive verb, so those are not offered (assistant-ui hides them).
 * Render the thread keyed by `sessionId`, so a switch starts the runtime afresh on the new view.
 */
import type { ExternalStoreThreadData, ExternalStoreThreadListAdapter } from '@assistant-ui/react'
import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import type { SessionlineClient, SessionView } from '../client/types'
import type { SessionInfo } from '../schema/session'

/** What the thread list needs of a client (a `SessionlineClient`, or an in-process stand-in). */
export type ThreadListClient = Pick<
  SessionlineClient,
  'listSessions' | 'createSession' | 'deleteSession' | 'open'
>

export interface SessionlineThreadListOptions {
  /** The session to open first (default: the newest; a new one when there is none). */
  sessionId?: string
  /** The title of a session "new thread" creates (default `New chat`). */
  newTitle?: string
  /** Called with a failed create, delete or list (default: `console.error`). */
  onError?: (error: unknown) => void
}

export interface SessionlineThreadList {
  /** The open session's view; `undefined` until the first list has loaded. */
  view: SessionView | undefined
  /** The open session's id. */
  sessionId: string | undefined
  /** The sessions as assistant-ui's thread-list adapter (`adapters: { threadList }`). */
  threadList: ExternalStoreThreadListAdapter
  /** Reads the session list again (after a session was created or deleted elsewhere). */
  refresh: () => Promise<void>
}

const threadOf = (session: SessionInfo): ExternalStoreThreadData<'regular'> => ({
  status: 'regular',
  id: session.id,
  title: session.title === '' ? 'Untitled' : session.title,
})

/**
 * The sessions of `client` as assistant-ui threads, with one open view (the one a switch leaves
 * is disposed).
 */
export function useSessionlineThreadList(
  client: ThreadListClient,
  options: SessionlineThreadListOptions = {},
): SessionlineThreadList {
  const { newTitle = 'New chat', onError = console.error } = options
  const [sessions, setSessions] = useState<readonly SessionInfo[] | undefined>(undefined)
  const [sessionId, setSessionId] = useState<string | undefined>(options.sessionId)
  const report = useRef(onError)
  report.current = onError

  const refresh = useCallback(async () => {
    setSessions(await client.listSessions())
  }, [client])

  const create = useCallback(async () => {
    const created = await client.createSession({ title: newTitle })
    await refresh()
    setSessionId(created.id)
  }, [client, newTitle, refresh])

  // The first list picks the session to open: the asked one, else the newest, else a new one.
  // Only on a new client: later changes go through the handlers below.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the first list of a client only
  useEffect(() => {
    let live = true
    client.listSessions().then(
      async (listed) => {
        if (!live) return
        setSessions(listed)
        if (sessionId !== undefined && listed.some((session) => session.id === sessionId)) return
        if (listed[0] !== undefined) setSessionId(listed[0].id)
        else await create()
      },
      (error: unknown) => report.current(error),
    )
    return () => {
      live = false
    }
  }, [client])

  const loaded = sessions !== undefined
  const view = useMemo(
    () => (sessionId === undefined || !loaded ? undefined : client.open(sessionId)),
    [client, sessionId, loaded],
  )
  // A switch disposes the view it leaves. Not on unmount: React's StrictMode runs an effect's
  // cleanup and the effect again on the same render, which would leave a disposed view in use;
  // `client.close()` releases every view.
  const shown = useRef<SessionView | undefined>(undefined)
  useEffect(() => {
    if (shown.current !== undefined && shown.current !== view) shown.current.dispose()
    shown.current = view
  }, [view])

  const threads = useMemo(() => (sessions ?? []).map(threadOf), [sessions])
  const threadList: ExternalStoreThreadListAdapter = {
    threadId: sessionId,
    isLoading: sessions === undefined,
    threads,
    onSwitchToThread: (id: string) => setSessionId(id),
    onSwitchToNewThread: () => create().catch((error: unknown) => report.current(error)),
    onDelete: async (id: string) => {
      try {
        await client.deleteSession(id)
        const left = await client.listSessions()
        setSessions(left)
        if (id !== sessionId) return
        if (left[0] !== undefined) setSessionId(left[0].id)
        else await create()
      } catch (error) {
        report.current(error)
      }
    },
  }
  return { view, sessionId, threadList, refresh }
}
