// An app that installed the packed sessionline (test/package/app.mjs builds and drives it).
// #region In a Vite app
import { createRoot } from 'react-dom/client'
import { connect } from 'sessionline'
import { App } from './App'

// The shipped default worker: an engine on the database `sessionline`, with no model until the
// page configures one.
// A factory (rather than a Worker) lets the client start a fresh worker if the browser kills this one.
const client = connect(
  () => new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' }),
  // The worker's database: a view's first screen is read on the page while the worker starts.
  { dbName: 'sessionline' },
)
await client.configure({ provider: { kind: 'scripted', wordDelayMs: 5 } })

let sessionId = localStorage.getItem('session')
if (sessionId === null) {
  sessionId = (await client.createSession({ title: 'Scratchpad' })).id
  localStorage.setItem('session', sessionId)
}
const view = client.open(sessionId) // synchronous; loads the tail in the background
createRoot(document.getElementById('root')!).render(<App view={view} />)
// #endregion In a Vite app
document.documentElement.dataset.ready = 'true'
