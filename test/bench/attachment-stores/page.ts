/**
 * The page only starts the measuring worker and relays the runner's calls to it, through the
 * `window.contract.call` the browser contract's drivers already know how to reach. It also says
 * whether the page itself (not only the worker) has OPFS.
 */
type Answer = { ok: true; value: unknown } | { ok: false; error: string }

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })
const pending = new Map<number, (answer: Answer) => void>()
let next = 0
worker.onmessage = (event: MessageEvent<{ id: number; answer: Answer }>) => {
  pending.get(event.data.id)?.(event.data.answer)
  pending.delete(event.data.id)
}
worker.onerror = (event) => {
  for (const settle of pending.values()) settle({ ok: false, error: `worker error: ${event.message}` })
  pending.clear()
}

function inWorker(method: string, args: unknown): Promise<Answer> {
  return new Promise((resolve) => {
    const id = next++
    pending.set(id, resolve)
    worker.postMessage({ id, method, args })
  })
}

/** The probes' answer from a SharedWorker, or why there was none. */
function inSharedWorker(): Promise<Answer> {
  if (typeof SharedWorker === 'undefined') return Promise.resolve({ ok: false, error: 'no SharedWorker' })
  return new Promise((resolve) => {
    const shared = new SharedWorker(new URL('./shared-probe.ts', import.meta.url), { type: 'module' })
    const timer = setTimeout(() => resolve({ ok: false, error: 'no answer in 20 s' }), 20_000)
    shared.port.onmessage = (event: MessageEvent<Answer>) => {
      clearTimeout(timer)
      resolve(event.data)
    }
    shared.onerror = () => {
      clearTimeout(timer)
      resolve({ ok: false, error: 'the SharedWorker failed to start' })
    }
    shared.port.start()
  })
}

async function call(method: string, args: unknown): Promise<Answer> {
  const answer = await inWorker(method, args)
  if (method !== 'features' || !answer.ok) return answer
  const onPage = typeof navigator.storage?.getDirectory === 'function'
  const shared = await inSharedWorker()
  return {
    ok: true,
    value: {
      ...(answer.value as object),
      pageHasGetDirectory: onPage,
      sharedWorker: shared.ok ? shared.value : shared.error,
    },
  }
}

Object.assign(window, { contract: { call } })
document.getElementById('status')!.textContent = 'ready'
