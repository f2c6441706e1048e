import { useState } from 'react'
import type { SessionView } from 'sessionline'
import { useSessionlineChat } from 'sessionline/ai-sdk'

export function Chat({ view }: { view: SessionView }) {
  const { messages, status, sendMessage, stop, queued, isRunning } = useSessionlineChat(view)
  const [text, setText] = useState('')
  return (
    <section className="chat" data-status={status}>
      {messages.map((message) => (
        <article key={message.id} data-id={message.id} data-role={message.role}>
          {message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')}
          {message.parts.flatMap((part) =>
            // Tools run in the worker, so a call arrives as a `dynamic-tool` part.
            part.type === 'dynamic-tool'
              ? [<code key={part.toolCallId} data-tool={part.toolName} data-state={part.state} />]
              : [],
          )}
        </article>
      ))}
      <ul className="queued">
        {queued.map((input) => (
          <li key={input.id} data-id={input.id}>
            {input.text}
          </li>
        ))}
      </ul>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          // While a turn runs this waits in the session's durable queue (shown in `queued`).
          if (text.trim()) void sendMessage({ text })
          setText('')
        }}
      >
        <input value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">Send</button>
        <button type="button" onClick={() => void stop()} disabled={!isRunning}>
          Stop
        </button>
      </form>
    </section>
  )
}
