/**
 * What the worker exposes over Comlink: the engine's methods plus a handshake. Both sides
 * build from this one list, so a method added to `Engine` is either wired on both or on none.
 */
import { z } from 'zod'
import type { Engine } from '../engine/types'

/**
 * Bumped when the exposed surface changes incompatibly; the page checks it on connect. 2: views
 * open through `firstRead`, which a worker of protocol 1 does not have (a page of one build
 * meeting a shared worker of an older one fails at the handshake, not at its first open).
 */
export const PROTOCOL_VERSION = 2

export interface Handshake {
  protocol: number
}

/**
 * What the page says in its handshake: how often it checks that the worker answers, and how long
 * it waits for an answer. A shared worker takes a port that stays silent for much longer than
 * that as a closed tab (a closed port fires no event) and lets go of what that tab held.
 * `heartbeatMs: 0`: the page never checks, so its silence says nothing.
 */
export const Hello = z.object({
  heartbeatMs: z.number().nonnegative(),
  heartbeatTimeoutMs: z.number().nonnegative(),
})
export type Hello = z.infer<typeof Hello>

/** The object `exposeEngine` hands to `Comlink.expose`. */
export interface ExposedEngine extends Engine {
  /** `hello` is optional: a page from before it was added sends none. */
  handshake(hello?: Hello): Promise<Handshake>
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
  'attachment',
  'promote',
  'append',
  'rewind',
  'resend',
  'regenerate',
  'switchBranch',
  'branches',
  'compact',
  'context',
  'fork',
  'events',
  'page',
  'loadThrough',
  'firstRead',
  'projection',
  'outline',
  'watch',
  'configure',
  'interrupt',
  'respondToApproval',
  'toolApprovals',
  'revokeToolApproval',
  'importTranscript',
  'importFiles',
  'exportSession',
  'storage',
  'persist',
  'flush',
  'search',
  'sync',
  'unsync',
  'syncStatus',
  'close',
] as const satisfies readonly (keyof Engine)[]

export type EngineMethod = (typeof ENGINE_METHODS)[number]

// Compile-time check that the list is complete: a missing name makes this type non-never.
type Missing = Exclude<keyof Engine, EngineMethod>
const complete: Missing extends never ? true : Missing = true
void complete
