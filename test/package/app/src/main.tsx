// An app that installed the packed sessionline (test/package/app.mjs builds and drives it).
import { useState } from 'react'
import { createRoot } from 'react-dom/client'
// #region In a Vite app
import { chatRows, connect, type SessionView } from 'sessionline'
import { useSessionView } from 'sessionline/react'

// The shipped default worker: an engine on the database `sessionline`, with no model until the
// page configures one.
// A factory (rather than a Worker) lets the client start a fresh worker if the browser kills this one.
const client = connect(
  () => new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' }),
)
await client.configure({ provider: { kind: 'scripted', wordDelayMs: 5 } })

let sessionId = localStorage.getItem('session')
if (sessionId === null) {
  sessionId = (await client.createSession({ title: 'Scratchpad' })).id
  localStorage.setItem('session', sessionId)
}
const view = client.open(sessionId) // synchronous; loads the tail in the background
// #endregion In a Vite app

function App({ view }: { view: SessionView }) {
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

createRoot(document.getElementById('root')!).render(<App view={view} />)
document.documentElement.dataset.ready = 'true'
