/**
 * Keeps a `SessionlineError`'s `code` and `details` across Comlink. Comlink's built-in `throw`
 * handler copies only `{message, name, stack}`, so each side of a connection installs this one
 * (the worker in `exposeEngine`, the page in `connect`): comlink has no `exports` map, and a
 * worker bundle never shares the page's handler registry.
 *
 * @example
 *   registerErrorTransfer()
 *   Comlink.expose(api, port)
 */
import { type TransferHandler, transferHandlers } from 'comlink'
import { ErrorCode, isSessionlineError, SessionlineError } from '../schema/errors'

interface ThrownValue {
  value: unknown
}

/** What travels for a thrown `SessionlineError` (structured-clone safe). */
interface WireError {
  sessionline: true
  code: ErrorCode
  message: string
  details?: unknown
  stack?: string
}

function isWireError(value: unknown): value is WireError {
  if (typeof value !== 'object' || value === null) return false
  const wire = value as Partial<WireError>
  return (
    wire.sessionline === true && ErrorCode.safeParse(wire.code).success && typeof wire.message === 'string'
  )
}

/** `details` must survive structured clone; anything that does not is dropped rather than failing the call. */
function cloneable(details: unknown): unknown {
  if (details === undefined) return undefined
  try {
    structuredClone(details)
    return details
  } catch {
    return undefined
  }
}

let installed: TransferHandler<unknown, unknown> | undefined

/** Installs the error transfer handler; calling it again is a no-op. */
export function registerErrorTransfer(): void {
  const current = transferHandlers.get('throw')
  if (current && current === installed) return
  const builtIn = current
  if (!builtIn) throw new Error('comlink has no built-in "throw" transfer handler')
  const handler: TransferHandler<ThrownValue, unknown> = {
    canHandle: (value): value is ThrownValue => builtIn.canHandle(value),
    serialize(thrown) {
      const error = thrown.value
      if (isSessionlineError(error)) {
        const wire: WireError = {
          sessionline: true,
          code: error.code,
          message: error.message,
          details: cloneable(error.details),
          stack: error.stack,
        }
        return [wire, []]
      }
      return builtIn.serialize(thrown)
    },
    deserialize(wire) {
      if (isWireError(wire)) {
        const error = new SessionlineError(wire.code, wire.message, wire.details)
        if (wire.stack) error.stack = wire.stack
        throw error
      }
      return builtIn.deserialize(wire) as ThrownValue
    },
  }
  installed = handler as TransferHandler<unknown, unknown>
  transferHandlers.set('throw', installed)
}
