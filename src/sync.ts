/**
 * Session sync across devices through a Durable Streams server (`sessionline/sync`,
 * docs/architecture.md §11, docs/decisions/0036). It runs in the worker: plug it into the engine, then sync sessions.
 *
 * @example
 *   import { createEngine } from 'sessionline/worker'
 *   import { createSessionSync } from 'sessionline/sync'
 *   const engine = createEngine({ sync: createSessionSync() })
 *   await engine.sync(sessionId, { url: 'http://127.0.0.1:4437' })
 *   await engine.syncStatus(sessionId) // { state: 'live', pending: 0 }
 */
export type { SessionSync, SyncDriver, SyncHost } from './engine/types'
export type {
  StreamFailureKind,
  SyncBatch,
  SyncErrorCode,
  SyncOptions,
  SyncStateName,
  SyncStatus,
} from './schema/sync'
export type { BackoffPolicy } from './sync/backoff'
export { createSessionSync, type SessionSyncOptions } from './sync/session-sync'
export type { FetchLike } from './sync/stream-http'
