/**
 * sessionline: a browser-local, offline-first session engine for agent chat.
 *
 * The entry exports, by layer: schemas and types that cross every boundary; the pure core
 * (folds, outline, identity gate); framework-free view helpers; the engine (run it in a worker
 * through `sessionline/worker`, or in-process); the page-side client; transcript import.
 * See README.md for the tour and docs/decisions/ for why it is built this way.
 */

export * from './client/activity'
export type { AttachmentSource, AttachmentUrlOptions, AttachmentUrls } from './client/attachment-urls'
export { attachmentUrls, shownAttachmentIds } from './client/attachment-urls'
export type { ConnectOptions, ConnectTarget, WorkerFactory, WorkerStart } from './client/connect'
export { connect } from './client/connect'
export type { ViewEngine } from './client/session-view'
export { createSessionView } from './client/session-view'
export type * from './client/types'
export type { SharedOrDedicatedOptions } from './client/worker-choice'
export { canShareWorker, sharedOrDedicated } from './client/worker-choice'
export * from './core/index'
export * from './core/preview'
export type { EngineOptions } from './engine/engine'
export { createEngine } from './engine/engine'
export type * from './engine/provider'
export type { OpenAIProviderOptions } from './engine/providers/index'
export { createOpenAIProvider, createScriptedProvider, providerFromConfig } from './engine/providers/index'
export type { RunnerOptions } from './engine/runner'
export type { SearchIndexEvent } from './engine/search/index'
export type { SiteMarker } from './engine/site-marker'
export { cacheMarker, memoryMarker } from './engine/site-marker'
export type { DemoToolsOptions } from './engine/tools'
export { createDemoTools } from './engine/tools'
export type * from './engine/types'
export type { AssembleOptions, SessionDetail } from './import/assemble'
export { detectExport, detectFormat } from './import/detect'
export type { DiscoveredFile } from './import/folder'
export { discoverSessionFiles, fingerprintOf, layoutFormat } from './import/folder'
export type { Importer, ParsedTranscript, ParseOptions, StoredTranscript } from './import/index'
export {
  assembleSessionDetail,
  importers,
  MAX_LINE_CHARS,
  parseTranscript,
  parseTranscriptBlob,
  recordsToRows,
} from './import/index'
export { describeSkipped } from './import/skips'
export { importedSessionId } from './import/to-rows'
export * from './schema/approvals'
export * from './schema/attachments'
export * from './schema/common'
export * from './schema/errors'
export * from './schema/events'
export * from './schema/history'
export * from './schema/import'
export * from './schema/inputs'
export * from './schema/limits'
export * from './schema/messages'
export * from './schema/portability'
export * from './schema/provider'
export * from './schema/records'
export * from './schema/requests'
export * from './schema/search'
export * from './schema/session'
export type { Durability, StorageKind } from './store/connection'
export type { LoadedTurn } from './view/rail'
export { createTurnRail, EMPTY_RAIL, mergeTurnRailItems } from './view/rail'
