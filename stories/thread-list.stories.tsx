import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadListItemPrimitive,
  ThreadListPrimitive,
  ThreadPrimitive,
} from '@assistant-ui/react'
import type { Meta, StoryObj } from '@storybook/react-vite'
import type { CSSProperties } from 'react'
import {
  SessionlineText,
  type SessionlineThreadList,
  useSessionlineRuntime,
  useSessionlineThreadList,
} from '../src/assistant-ui'
import { type StorySession, sessionOf, storySession } from './support/story-session'

const meta = {
  title: 'Adapters/assistant-ui thread list',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

const layout: CSSProperties = {
  maxWidth: 960,
  margin: '0 auto',
  padding: 24,
  display: 'grid',
  gridTemplateColumns: '220px 1fr',
  gap: 16,
}

/**
 * The sessions of the story's database as assistant-ui threads (`useSessionlineThreadList`):
 * newest first with their titles; New chat creates a session, a title switches to it, × deletes it.
 */
export const ThreadList: Story = {
  ...storySession({
    title: 'First chat',
    model: { wordDelayMs: 30 },
    prepare: async ({ client }) => {
      await client.createSession({ title: 'Second chat' })
    },
  }),
  render: (_args, context) => <Threads session={sessionOf(context)} />,
}

function Threads({ session }: { session: StorySession }) {
  const list = useSessionlineThreadList(session.client)
  // Keyed by session: a switch starts the runtime afresh on the new view.
  return list.view ? <Layout key={list.sessionId} list={list} /> : <p>Loading…</p>
}

function Layout({ list }: { list: SessionlineThreadList }) {
  const runtime = useSessionlineRuntime(list.view!, { adapters: { threadList: list.threadList } })
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <div style={layout}>
        <ThreadListPrimitive.Root className="thread-list">
          <ThreadListPrimitive.New className="button">New chat</ThreadListPrimitive.New>
          <ThreadListPrimitive.Items>
            {({ threadListItem }) => (
              <ThreadListItemPrimitive.Root className="thread-list__item" data-id={threadListItem.id}>
                <ThreadListItemPrimitive.Trigger className="button">
                  <ThreadListItemPrimitive.Title />
                </ThreadListItemPrimitive.Trigger>
                <ThreadListItemPrimitive.Delete className="button" aria-label="Delete">
                  ×
                </ThreadListItemPrimitive.Delete>
              </ThreadListItemPrimitive.Root>
            )}
          </ThreadListPrimitive.Items>
        </ThreadListPrimitive.Root>
        <ThreadPrimitive.Root className="thread">
          <ThreadPrimitive.Viewport>
            <ThreadPrimitive.Messages>
              {({ message }) => (
                <MessagePrimitive.Root className="row" data-id={message.id} data-role={message.role}>
                  <MessagePrimitive.Parts components={{ Text: SessionlineText }} />
                </MessagePrimitive.Root>
              )}
            </ThreadPrimitive.Messages>
          </ThreadPrimitive.Viewport>
          <ComposerPrimitive.Root className="composer">
            <ComposerPrimitive.Input className="composer__input" />
            <ComposerPrimitive.Cancel className="button">Stop</ComposerPrimitive.Cancel>
            <ComposerPrimitive.Send className="button button--primary">Send</ComposerPrimitive.Send>
          </ComposerPrimitive.Root>
        </ThreadPrimitive.Root>
      </div>
    </AssistantRuntimeProvider>
  )
}
