/**
 * sessionline for assistant-ui (`sessionline/assistant-ui`): `useSessionlineRuntime(view)`, an
 * external-store runtime whose thread is a `SessionView` and whose composer queue is the
 * session's durable inbox. `@assistant-ui/react` is an optional peer; only this entry imports it.
 *
 * @example
 *   const runtime = useSessionlineRuntime(view)
 *   return <AssistantRuntimeProvider runtime={runtime}><Thread /></AssistantRuntimeProvider>
 */
export type { SessionlineRowInfo } from './assistant-ui/messages'
export { rowToThreadMessageLike } from './assistant-ui/messages'
export type { SessionlineRuntimeOptions } from './assistant-ui/runtime'
export { sessionlineQueueAdapter, useSessionlineRuntime } from './assistant-ui/runtime'
export { SessionlineText } from './assistant-ui/text'
export type {
  SessionlineThreadList,
  SessionlineThreadListOptions,
  ThreadListClient,
} from './assistant-ui/thread-list'
export { useSessionlineThreadList } from './assistant-ui/thread-list'
