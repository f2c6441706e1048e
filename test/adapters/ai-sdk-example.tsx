import { useState } from 'react'
import type { SessionView } from 'sessionline'
import { steerOf, useSessionlineChat } from 'sessionline/ai-sdk'

export function Chat({ view }: { view: SessionView }) {
  const { messages, status, sendMessage, stop, queued, isRunning } = useSessionlineChat(view)
  const [text, setText] = useState('')
  return (
    <section className="chat" data-status={status}>
      {messages.map((message) => (
        <article key={message.id} data-id={message.id} data-role={message.role}>
          {message.parts.map((part) => {
            if (part.type === 'text') return part.text
            // Tools run in the worker, so a call arrives as a `dynamic-tool` part.
            if (part.type === 'dynamic-tool')
              return <code key={part.toolCallId} data-tool={part.toolName} data-state={part.state} />
            // ai 7: a steer that joined the turn is a part of the answer, between two steps.
            const steer = steerOf(part)
            return steer ? <blockquote key={steer.id}>{steer.text}</blockquote> : null
          })}
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
