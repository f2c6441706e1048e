import { useState } from 'react'
import type { SessionView } from 'sessionline'
import { steerOf, useSessionlineChat } from 'sessionline/ai-sdk'

export function Chat({ view }: { view: SessionView }) {
  const { messages, status, sendMessage, regenerate, stop, queued, isRunning } = useSessionlineChat(view)
  const [text, setText] = useState('')
  // The prompt being edited: sent with its id, the new text answers again on a new branch.
  const [editing, setEditing] = useState<string>()
  return (
    <section className="chat" data-status={status}>
      {messages.map((message) => (
        <div key={message.id}>
          <article data-id={message.id} data-role={message.role}>
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
          {message.role === 'user' && !isRunning && (
            <button
              type="button"
              className="edit"
              onClick={() => {
                setEditing(message.id)
                setText(message.parts.map((part) => (part.type === 'text' ? part.text : '')).join(''))
              }}
            >
              Edit
            </button>
          )}
        </div>
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
          // While a turn runs a new prompt waits in the session's durable queue (shown in `queued`).
          if (text.trim()) void sendMessage(editing ? { text, messageId: editing } : { text })
          setText('')
          setEditing(undefined)
        }}
      >
        <input value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">{editing ? 'Resend' : 'Send'}</button>
        {/* A new answer to the last prompt, beside the old one (a branch; the old one is kept). */}
        <button type="button" onClick={() => void regenerate()} disabled={isRunning || messages.length === 0}>
          Regenerate
        </button>
        <button type="button" onClick={() => void stop()} disabled={!isRunning}>
          Stop
        </button>
      </form>
    </section>
  )
}
