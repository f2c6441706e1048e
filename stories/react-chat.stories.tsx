import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
} from '@assistant-ui/react'
import type { Meta, StoryObj } from '@storybook/react-vite'
import { type CSSProperties, useState } from 'react'
import { useSessionlineChat } from '../src/ai-sdk'
import { useSessionlineRuntime } from '../src/assistant-ui'
import { sessionOf, storySession } from './support/story-session'
import { useStoryView } from './support/use-story-view'

const meta = {
  title: 'React chat',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

const page: CSSProperties = { maxWidth: 720, margin: '0 auto', padding: 24, display: 'grid', gap: 10 }

/**
 * A chat on the AI SDK's `useChat`, through `useSessionlineChat`: messages are the session's
 * rows (their ids the rows' ids), Send steers a running turn, Queue waits in the durable queue.
 */
function AiSdkChat({ view }: { view: Parameters<typeof useSessionlineChat>[0] }) {
  const { messages, status, sendMessage, stop, queued, admit, isRunning } = useSessionlineChat(view)
  const [text, setText] = useState('')
  const report = (error: unknown) => console.warn('chat action failed:', error)
  return (
    <section style={page} data-status={status} className="ai-sdk-chat">
      <p className="sidebar__note">
        status: <b>{status}</b>
      </p>
      {messages.map((message) => (
        <article
          key={message.id}
          className="row"
          data-id={message.id}
          data-role={message.role}
          style={{ whiteSpace: 'pre-wrap' }}
        >
          <header className="row__meta">
            <span className="row__role">{message.role === 'user' ? 'You' : 'Assistant'}</span>
          </header>
          {message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')}
        </article>
      ))}
      {queued.length > 0 && (
        <ol className="tray__list" aria-label="Queued">
          {queued.map((input) => (
            <li key={input.id} className="tray__item queued" data-id={input.id}>
              {input.text}
            </li>
          ))}
        </ol>
      )}
      <form
        className="composer"
        onSubmit={(event) => {
          event.preventDefault()
          if (text.trim()) void sendMessage({ text }).catch(report)
          setText('')
        }}
      >
        <textarea aria-label="Message" value={text} onChange={(event) => setText(event.target.value)} />
        <div className="composer__buttons">
          <button
            type="button"
            className="button"
            onClick={() => {
              if (text.trim()) void admit(text, { delivery: 'queue' }).catch(report)
              setText('')
            }}
          >
            Queue
          </button>
          <button type="button" className="button" onClick={() => void stop()} disabled={!isRunning}>
            Stop
          </button>
          <button type="submit" className="button button--primary">
            Send
          </button>
        </div>
      </form>
    </section>
  )
}

export const AiSdkUseChat: Story = {
  ...storySession({ title: 'AI SDK chat', model: { wordDelayMs: 30 } }),
  render: (_args, context) => <AiSdkChatStory session={sessionOf(context)} />,
}

function AiSdkChatStory({ session }: { session: ReturnType<typeof sessionOf> }) {
  return <AiSdkChat view={useStoryView(session)} />
}

/**
 * A thread on assistant-ui's primitives, through `useSessionlineRuntime`: its queue adapter is
 * the durable inbox; Send while a turn runs steers it at the next safe boundary.
 */
function AssistantUiThread({ view }: { view: Parameters<typeof useSessionlineRuntime>[0] }) {
  const runtime = useSessionlineRuntime(view)
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <ThreadPrimitive.Root style={page} className="assistant-ui-thread">
        <ThreadPrimitive.Viewport>
          <ThreadPrimitive.Messages>
            {({ message }) => (
              <MessagePrimitive.Root
                className="row"
                data-id={message.id}
                data-role={message.role}
                data-status={message.status?.type}
              >
                <header className="row__meta">
                  <span className="row__role">{message.role === 'user' ? 'You' : 'Assistant'}</span>
                </header>
                <div style={{ whiteSpace: 'pre-wrap' }}>
                  <MessagePrimitive.Parts />
                </div>
              </MessagePrimitive.Root>
            )}
          </ThreadPrimitive.Messages>
        </ThreadPrimitive.Viewport>
        <ComposerPrimitive.Queue>
          {({ queueItem }) => (
            <div className="tray__item queued" data-id={queueItem.id}>
              {queueItem.prompt}
            </div>
          )}
        </ComposerPrimitive.Queue>
        <ComposerPrimitive.Root className="composer">
          <ComposerPrimitive.Input aria-label="Message" />
          <div className="composer__buttons">
            <button
              type="button"
              className="button"
              onClick={() => runtime.thread.composer.send({ steer: false })}
            >
              Queue
            </button>
            <ComposerPrimitive.Cancel className="button">Stop</ComposerPrimitive.Cancel>
            <ComposerPrimitive.Send className="button button--primary">Send</ComposerPrimitive.Send>
          </div>
        </ComposerPrimitive.Root>
      </ThreadPrimitive.Root>
    </AssistantRuntimeProvider>
  )
}

export const AssistantUi: Story = {
  ...storySession({ title: 'assistant-ui thread', model: { wordDelayMs: 30 } }),
  render: (_args, context) => <AssistantUiStory session={sessionOf(context)} />,
}

function AssistantUiStory({ session }: { session: ReturnType<typeof sessionOf> }) {
  return <AssistantUiThread view={useStoryView(session)} />
}
