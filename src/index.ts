/**
 * sessionline: a browser-local, offline-first session engine for agent chat.
 * See README.md for the tour; DESIGN.md-level concepts are in docs/decisions/.
 */

// --- schema (types crossing every boundary) ---
export * from './schema/common'
export * from './schema/errors'
export * from './schema/events'
export * from './schema/inputs'
export * from './schema/messages'
export * from './schema/provider'
export * from './schema/requests'
export * from './schema/session'

// --- core (pure folds) ---
export type { Projection } from './core/projection'
export { replay } from './core/projection'

// --- view helpers ---

// --- engine ---
export type * from './engine/provider'
export type * from './engine/types'

// --- client ---
export type * from './client/types'

// --- import ---
