/**
 * Only method calls cross the wire. Comlink's `expose` also answers GET, SET and CONSTRUCT
 * messages along any property path, so a caller could read or assign through `constructor`
 * and `__proto__` (`SET ['constructor', 'prototype', 'x']` writes Object.prototype in the
 * worker). An endpoint wrapped here passes on only APPLY messages whose path the owner allows,
 * and RELEASE; anything else is answered with `invalid_input` and never reaches Comlink.
 *
 * @example
 *   Comlink.expose(api, guardEndpoint(port, (path) => path.length === 1 && path[0] in api))
 *   registerGuardedProxies() // the same for every function passed as Comlink.proxy
 */
import { type Endpoint, expose, type TransferHandler, transferHandlers, wrap } from 'comlink'
import { SessionlineError } from '../schema/errors'

interface ComlinkMessage {
  id?: unknown
  type?: unknown
  path?: unknown
}

const isPath = (path: unknown): path is string[] =>
  Array.isArray(path) && path.every((part) => typeof part === 'string')

function refusal(data: ComlinkMessage): SessionlineError {
  const path = isPath(data.path) ? data.path.join('.') : String(data.path)
  return new SessionlineError(
    'invalid_input',
    `only calls of the engine's methods cross the wire, not ${String(data.type)} ${JSON.stringify(path)}`,
  )
}

/** `endpoint`, passing on only the calls `allows` accepts (and releases) to whoever listens. */
export function guardEndpoint(endpoint: Endpoint, allows: (path: readonly string[]) => boolean): Endpoint {
  const listeners = new Map<EventListenerOrEventListenerObject, EventListener>()
  const releases = new Set<unknown>()
  const port = endpoint as Endpoint & { close?: () => void }

  const accepted = (data: ComlinkMessage) =>
    data.type === 'RELEASE' || (data.type === 'APPLY' && isPath(data.path) && allows(data.path))

  function refuse(data: ComlinkMessage): void {
    if (data.id === undefined) return
    const handler = transferHandlers.get('throw') as TransferHandler<unknown, unknown>
    const [value, transfer] = handler.serialize({ value: refusal(data) })
    // Comlink's reply to a thrown value: its throw handler's wire form, under the call's id.
    endpoint.postMessage({ id: data.id, type: 'HANDLER', name: 'throw', value }, transfer)
  }

  return {
    postMessage(message: { id?: unknown }, transfer?: Transferable[]) {
      endpoint.postMessage(message, transfer)
      // Comlink closes only a bare MessagePort after a release; through this wrapper it cannot.
      if (releases.delete(message?.id)) port.close?.()
    },
    addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: object) {
      const filtered: EventListener = (event) => {
        const data = (event as MessageEvent).data as ComlinkMessage | undefined
        if (!data || typeof data !== 'object') return
        if (!accepted(data)) return refuse(data)
        if (data.type === 'RELEASE') releases.add(data.id)
        if (typeof listener === 'function') listener(event)
        else listener.handleEvent(event)
      }
      listeners.set(listener, filtered)
      endpoint.addEventListener(type, filtered, options)
    },
    removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: object) {
      endpoint.removeEventListener(type, listeners.get(listener) ?? listener, options)
      listeners.delete(listener)
    },
    ...(endpoint.start && { start: () => endpoint.start?.() }),
  }
}

let installed: TransferHandler<unknown, unknown> | undefined

/**
 * Replaces Comlink's `proxy` transfer handler in this realm with the same one behind
 * `guardEndpoint`: a function passed as `Comlink.proxy` (a watch listener, its unsubscribe, an
 * import's progress callback) can be called and released, nothing else.
 */
export function registerGuardedProxies(): void {
  const current = transferHandlers.get('proxy')
  if (current && current === installed) return
  if (!current) throw new Error('comlink has no built-in "proxy" transfer handler')
  const handler: TransferHandler<object, MessagePort> = {
    canHandle: (value): value is object => current.canHandle(value),
    serialize(value) {
      const { port1, port2 } = new MessageChannel()
      expose(
        value,
        guardEndpoint(port1, (path) => path.length === 0),
      )
      return [port2, [port2]]
    },
    deserialize(port) {
      port.start()
      return wrap(port)
    },
  }
  installed = handler as TransferHandler<unknown, unknown>
  transferHandlers.set('proxy', installed)
}
