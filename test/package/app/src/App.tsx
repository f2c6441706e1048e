// The timeline of someone else's app: the rows of a SessionView, and a form that admits.
import { useState } from 'react'
import { chatRows, type SessionView } from 'sessionline'
import { useSessionView } from 'sessionline/react'

export function App({ view }: { view: SessionView }) {
  // chatRows: the rows without gap markers (a linear list); the same rows give the same array.
  const rows = useSessionView(view, (snapshot) => chatRows(snapshot.rows))
  const [text, setText] = useState('')
  return (
    <main>
      <ol>
        {rows.map((row) => (
          <li
            key={row.key}
            data-key={row.key}
            data-kind={row.kind}
            data-role={row.kind === 'message' ? row.message.role : 'input'}
            data-status={row.kind === 'message' ? row.message.status : row.input.state}
          >
            {row.kind === 'message'
              ? row.message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')
              : row.input.text}
          </li>
        ))}
      </ol>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          // The row is in the next snapshot, before the worker answers.
          void view.admit(text)
          setText('')
        }}
      >
        <input value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">Send</button>
      </form>
    </main>
  )
}
