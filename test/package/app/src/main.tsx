// An app that installed the packed sessionline (test/package/app.mjs builds and drives it).
import { useState } from 'react'
import { createRoot } from 'react-dom/client'
// #region In a Vite app
import { connect, type SessionView } from 'sessionline'
import { useSessionView } from 'sessionline/react'

// The shipped default worker: an engine on the database `sessionline`, with no model until the
// page configures one.
const worker = new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' })
const client = connect(worker)
await client.configure({ provider: { kind: 'scripted', wordDelayMs: 5 } })

let sessionId = localStorage.getItem('session')
if (sessionId === null) {
  sessionId = (await client.createSession({ title: 'Scratchpad' })).id
  localStorage.setItem('session', sessionId)
}
const view = client.open(sessionId) // synchronous; loads the tail in the background
// #endregion In a Vite app

function App({ view }: { view: SessionView }) {
  const rows = useSessionView(view, (snapshot) => snapshot.rows)
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

createRoot(document.getElementById('root')!).render(<App view={view} />)
document.documentElement.dataset.ready = 'true'
