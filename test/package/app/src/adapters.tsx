// The README's adapter examples in an app that installed the packed sessionline, its `ai`,
// `@ai-sdk/react` and `@assistant-ui/react` beside it (test/package/app.mjs copies the examples
// from test/adapters and drives this page under the dev server).
// `?adapter=ai-sdk|assistant-ui&delay=ms&toolRate=0..1`: a new session on each load.
import { createRoot } from 'react-dom/client'
import { connect } from 'sessionline'
import { Chat } from './ai-sdk-example'
import { Thread } from './assistant-ui-example'

const params = new URLSearchParams(location.search)
const client = connect(
  () => new Worker(new URL('sessionline/sessionline.worker', import.meta.url), { type: 'module' }),
)
await client.configure({
  provider: {
    kind: 'scripted',
    wordDelayMs: Number(params.get('delay') ?? 5),
    // The scripted model calls one of the worker's demo tools first in this share of turns.
    toolRate: Number(params.get('toolRate') ?? 0),
  },
})
const adapter = params.get('adapter')
const view = client.open((await client.createSession({ title: adapter ?? 'chat' })).id)
createRoot(document.getElementById('root')!).render(
  adapter === 'assistant-ui' ? <Thread view={view} /> : <Chat view={view} />,
)
document.documentElement.dataset.ready = 'true'
