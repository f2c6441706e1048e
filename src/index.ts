/**
 * sessionline: a browser-local, offline-first session engine for agent chat.
 * See README.md for the tour; DESIGN.md-level concepts are in docs/decisions/.
 */

// --- core (pure folds) ---
export * from './core/index'
// --- schema (types crossing every boundary) ---
export * from './schema/common'
export * from './schema/errors'
export * from './schema/events'
export * from './schema/inputs'
export * from './schema/messages'
export * from './schema/provider'
export * from './schema/requests'
export * from './schema/session'

// --- view helpers ---
export * from './view/preview'
export { createTurnRail, EMPTY_RAIL, mergeTurnRailItems } from './view/rail'
export type { LoadedTurn } from './view/rail'

// --- client ---
export type * from './client/types'
export { connect } from './client/connect'
export type { ConnectOptions, ConnectTarget } from './client/connect'
export { createSessionView } from './client/session-view'
export type { ViewEngine } from './client/session-view'
// --- engine ---
export type * from './engine/provider'
export type * from './engine/types'
export { createEngine } from './engine/engine'
export type { EngineOptions } from './engine/engine'
export { createOpenAIProvider, createScriptedProvider, providerFromConfig } from './engine/providers/index'
export type { OpenAIProviderOptions } from './engine/providers/index'
export type { RunnerOptions } from './engine/runner'
export { createDemoTools } from './engine/tools'
export type { DemoToolsOptions } from './engine/tools'

// --- import ---
export * from './schema/import'
export * from './schema/records'
export type { AssembleOptions, SessionDetail } from './import/assemble'
export { detectFormat } from './import/detect'
export { discoverSessionFiles, fingerprintOf, layoutFormat } from './import/folder'
export type { DiscoveredFile } from './import/folder'
export {
  assembleSessionDetail,
  importers,
  MAX_LINE_CHARS,
  parseTranscript,
  parseTranscriptBlob,
  recordsToRows,
} from './import/index'
export type { Importer, ParsedTranscript, ParseOptions, StoredTranscript } from './import/index'
export { importedSessionId } from './import/to-rows'
