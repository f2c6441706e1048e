/**
 * A shared worker serves one engine to every tab of the origin: each tab connects a port of its
 * own, and `servePorts` exposes the one engine on every port (docs/decisions/0035).
 *
 * A tab that closes says nothing: its port fires no event in most browsers, and what the tab
 * subscribed (its watch listeners) would be pushed to forever. The page's heartbeat is the
 * liveness signal: the page says in its handshake how often it checks, and a port that stays
 * silent for twice as long as a page's check may take (`heartbeatMs + heartbeatTimeoutMs`) is let
 * go of: its watches end, its listeners are released, and the port is closed. A page that was only
 * frozen then finds the port closed, takes the worker for gone and connects again, as after any
 * restart (its views re-read what they missed).
 *
 * @example
 *   // my.shared-worker.ts, started with new SharedWorker(url, { type: 'module' })
 *   import { exposeEngine } from 'sessionline/worker'
 *   exposeEngine({ dbName: 'my-app' }) // sees a shared worker's scope: one engine for every tab
 */
import type { Endpoint } from 'comlink'
import type { Engine } from '../src/engine/types'
import type { Hello } from '../src/wire/protocol'
import { type Served, serveEngine } from './serve'

/** What a shared worker's global scope is to `exposeEngine`: it announces each page that connects. */
export interface PortSource {
  addEventListener(type: 'connect', listener: (event: MessageEvent) => void): void
}

/** A shared worker's scope has no `postMessage`: pages reach it through the ports it is handed. */
export const isPortSource = (endpoint: Endpoint | PortSource): endpoint is PortSource =>
  typeof (endpoint as Partial<Endpoint>).postMessage !== 'function'

/** How long a page's port may stay silent before its tab counts as closed (0: never). */
export const silenceLimit = (hello: Hello): number =>
  hello.heartbeatMs > 0 ? 2 * (hello.heartbeatMs + hello.heartbeatTimeoutMs) : 0

type Timer = ReturnType<typeof setTimeout>

/** Node keeps a process alive for a pending timer; a browser's timers have no `unref`. */
const unref = (timer: Timer) => (timer as unknown as { unref?: () => void }).unref?.()

/** Serves `engine` on every port that connects to `source`, one page per port. */
export function servePorts(engine: Engine, source: PortSource): void {
  source.addEventListener('connect', (event) => {
    const port = event.ports[0]
    if (port) servePort(engine, port)
  })
}

function servePort(engine: Engine, port: MessagePort): void {
  let lastHeard = Date.now()
  /** 0 until the page says how often it checks (a page that never says is never let go of). */
  let limit = 0
  let timer: Timer | undefined
  let due = 0
  let gone = false

  const leave = () => {
    if (gone) return
    gone = true
    clearTimeout(timer)
    port.removeEventListener('message', heard)
    port.removeEventListener('close', leave)
    served.releaseAll()
    port.close()
  }
  const heard = (event: MessageEvent) => {
    lastHeard = Date.now()
    // The page released its connection: Comlink answers, then the port closes.
    if ((event.data as { type?: unknown } | null)?.type === 'RELEASE') setTimeout(leave, 0)
  }
  const schedule = (ms: number) => {
    due = Date.now() + ms
    timer = setTimeout(check, ms)
    unref(timer)
  }
  function check(): void {
    timer = undefined
    if (gone || limit === 0) return
    const now = Date.now()
    // This worker was busy past the check's time: the page's messages may be queued behind it,
    // so they land before its silence is judged.
    if (now - due > limit / 2) schedule(limit / 4)
    else if (now - lastHeard > limit) leave()
    else schedule(lastHeard + limit + 1 - now)
  }

  port.addEventListener('message', heard)
  // Where a browser tells that the other side of a port went away, that is enough.
  port.addEventListener('close', leave)
  const served: Served = serveEngine(engine, port, {
    // The engine serves the other tabs: one page's close lets go of that page only.
    onClose: async () => undefined,
    onHello(hello) {
      limit = silenceLimit(hello)
      if (limit > 0 && timer === undefined) schedule(limit)
    },
  })
  port.start()
}
