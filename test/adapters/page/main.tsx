// The adapters' test page: `?adapter=ai-sdk|assistant-ui&delay=ms` mounts the README example of
// that adapter on the session in the hash (a new one when there is none), so a reload reopens it.
import { createRoot } from 'react-dom/client'
import { connect, type SessionlineClient, type SessionView } from 'sessionline'
import { Chat } from '../ai-sdk-example'
import { Thread } from '../assistant-ui-example'

declare global {
  interface Window {
    sessionlineView?: SessionView
    sessionlineClient?: SessionlineClient
  }
}

const params = new URLSearchParams(location.search)
const adapter = params.get('adapter') ?? 'ai-sdk'
const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })
const client = connect(worker)
await client.configure({
  provider: { kind: 'scripted', seed: 7, toolRate: 0, wordDelayMs: Number(params.get('delay') ?? 40) },
})
let sessionId = location.hash.slice(1)
if (sessionId === '') {
  sessionId = (await client.createSession({ title: adapter })).id
  history.replaceState(null, '', `#${sessionId}`)
}
const view = client.open(sessionId)
window.sessionlineView = view
window.sessionlineClient = client
createRoot(document.getElementById('root')!).render(
  adapter === 'assistant-ui' ? <Thread view={view} /> : <Chat view={view} />,
)
document.documentElement.dataset.ready = 'true'
