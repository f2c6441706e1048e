/**
 * What the worker exposes over Comlink: the engine's methods plus a handshake. Both sides
 * build from this one list, so a method added to `Engine` is either wired on both or on none.
 */
import type { Engine } from '../engine/types'

/** Bumped when the exposed surface changes incompatibly; the page checks it on connect. */
export const PROTOCOL_VERSION = 1

export interface Handshake {
  protocol: number
}

/** The object `exposeEngine` hands to `Comlink.expose`. */
export interface ExposedEngine extends Engine {
  handshake(): Promise<Handshake>
}

/**
 * Every method of `Engine`. `watch` needs proxies on both sides (a listener that outlives the
 * call, an unsubscribe that comes back); a callback argument (an import's progress listener)
 * crosses as a proxy that lives for its one call; everything else is plain data.
 */
export const ENGINE_METHODS = [
  'createSession',
  'getSession',
  'listSessions',
  'deleteSession',
  'admit',
  'cancel',
  'edit',
  'reorder',
  'setDelivery',
  'pending',
  'promote',
  'append',
  'rewind',
  'resend',
  'regenerate',
  'switchBranch',
  'compact',
  'context',
  'fork',
  'events',
  'page',
  'loadThrough',
  'projection',
  'outline',
  'watch',
  'configure',
  'interrupt',
  'importTranscript',
  'importFiles',
  'flush',
  'search',
  'close',
] as const satisfies readonly (keyof Engine)[]

export type EngineMethod = (typeof ENGINE_METHODS)[number]

// Compile-time check that the list is complete: a missing name makes this type non-never.
type Missing = Exclude<keyof Engine, EngineMethod>
const complete: Missing extends never ? true : Missing = true
void complete
