/**
 * sessionline: a browser-local, offline-first session engine for agent chat.
 *
 * The entry exports, by layer: schemas and types that cross every boundary; the pure folds
 * (projections, the identity gate, the history tree's context); framework-free view helpers; the
 * engine (run it in a worker through `sessionline/worker`, or in-process); the page-side client;
 * transcript parsing. See README.md for the tour and docs/decisions/ for why it is built this way.
 *
 * Every name is listed here, none re-exported wholesale: a helper added to a module stays
 * internal until it is named below, and test/package/exports.test.ts pins the list.
 */

// The page side: connecting to a worker, the view, and what a view's rows say.
export type { ChatRow } from './client/activity'
export { chatRows, isTurnRunning } from './client/activity'
export type { AttachmentSource, AttachmentUrlOptions, AttachmentUrls } from './client/attachment-urls'
export { attachmentUrls, shownAttachmentIds } from './client/attachment-urls'
export type { ConnectOptions, ConnectTarget, WorkerFactory, WorkerStart } from './client/connect'
export { connect } from './client/connect'
export type { ViewEngine } from './client/session-view'
export { createSessionView } from './client/session-view'
export type {
  GapEnd,
  GapRow,
  InputState,
  OpenOptions,
  SessionlineClient,
  SessionView,
  TimelineFile,
  TimelineInput,
  TimelineRow,
  TimelineSnapshot,
} from './client/types'
export type { SharedOrDedicatedOptions } from './client/worker-choice'
export { canShareWorker, sharedOrDedicated } from './client/worker-choice'

// The pure core: projections and their folds, the identity gate, the model's context.
export type { HistoryTree } from './core/history-tree'
export { contextFor, replayTree } from './core/history-tree'
export type { LiveProjection } from './core/live-projection'
export { createLiveProjection } from './core/live-projection'
export { clampPrompt, clampResponse } from './core/preview'
export type { Projection } from './core/projection'
export { replay } from './core/projection'
export { applyTextAppend } from './core/text-append'
export type { TranscriptState, TranscriptStep } from './core/transcript'
export { applyTranscript, checkEvent, replayTranscript, transcript } from './core/transcript'
export type { OutlineState } from './core/turn-outline'
export { turnOutline } from './core/turn-outline'
export type { UsageState } from './core/usage'
export { usage } from './core/usage'

// The engine, its providers and where it runs.
export type { BackgroundErrorListener } from './engine/background'
export type { EngineOptions } from './engine/engine'
export { createEngine } from './engine/engine'
export type { ModelProvider, ProviderChunk, ProviderRequest, Tool, ToolSpec, Tools } from './engine/provider'
export type { OpenAIProviderOptions } from './engine/providers/index'
export { createOpenAIProvider, createScriptedProvider } from './engine/providers/index'
export type { RunnerOptions } from './engine/runner'
export type { SearchIndexEvent } from './engine/search/index'
export type { SiteMarker } from './engine/site-marker'
export { cacheMarker, memoryMarker } from './engine/site-marker'
export type {
  ChangeListener,
  ChangeViews,
  Engine,
  ProjectionName,
  ProjectionViews,
  Runner,
  RunnerHost,
  SessionChange,
  Unsubscribe,
} from './engine/types'

// Transcripts of other tools, parsed on the page or anywhere.
export type { AssembleOptions, SessionDetail } from './import/assemble'
export { detectFormat } from './import/detect'
export type { ParsedTranscript, ParseOptions } from './import/index'
export { assembleSessionDetail, parseTranscript, parseTranscriptBlob } from './import/index'
export { describeSkipped } from './import/skips'

// Schemas (zod) with their types, and the limits they enforce.
export { ApprovalAnswer, RevokeToolApproval, StoredApprovals, ToolApprovals } from './schema/approvals'
export type { AttachmentLimits } from './schema/attachments'
export {
  AttachmentData,
  AttachmentId,
  AttachmentInput,
  AttachmentInputs,
  AttachmentName,
  attachmentUrl,
  FilePart,
  MediaType,
} from './schema/attachments'
export {
  Delivery,
  Id,
  Json,
  MessageSource,
  Seq,
  StepNumber,
  Timestamp,
  TokenCount,
  TurnNumber,
  Usage,
  Visibility,
} from './schema/common'
export type { ValidationIssue } from './schema/errors'
export {
  ErrorCode,
  isSessionlineError,
  SerializedError,
  SessionlineError,
  StorageLoss,
} from './schema/errors'
export type { EventOf, EventType, StoredEvent, StoredEventOf } from './schema/events'
export {
  AppendEvents,
  ApprovalScope,
  AssistantDelta,
  AssistantEnd,
  AssistantStart,
  EVENT_TYPES,
  Finish,
  HeadCause,
  HistoryCompact,
  HistoryHead,
  MAX_APPROVAL_REASON,
  SessionCreated,
  SessionEvent,
  StepEnd,
  StepStart,
  Title,
  ToolApproval,
  ToolApprovalRequest,
  ToolCall,
  ToolResult,
  TurnEnd,
  TurnEndReason,
  TurnStart,
  UserMessage,
} from './schema/events'
export type { BranchesAnswer, ContextAnswer, RewindAnswer } from './schema/history'
export {
  CompactionBudget,
  CompactRequest,
  ForkRequest,
  ReorderRequest,
  ResendRequest,
  SetDeliveryRequest,
} from './schema/history'
export type { ImportProgress, ImportProgressListener } from './schema/import'
export {
  FileImportReport,
  FileImportStatus,
  ImportFile,
  ImportFilesRequest,
  ImportRequest,
} from './schema/import'
export { AdmitRequest, EditRequest, InputReceipt, InputStatus } from './schema/inputs'
export {
  MAX_APPEND_EVENTS,
  MAX_APPEND_SIZE,
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENT_NAME,
  MAX_ATTACHMENTS,
  MAX_EVENT_TEXT,
  MAX_ID_LENGTH,
  MAX_IMPORT_FILE_BYTES,
  MAX_IMPORT_FILES,
  MAX_INPUT_ATTACHMENT_BYTES,
  MAX_INPUT_TEXT,
  MAX_JSON_DEPTH,
  MAX_PATH_LENGTH,
  MAX_SYSTEM_PROMPT,
  MAX_TITLE_LENGTH,
  MAX_TOOL_NAME,
  MAX_TOOL_PAYLOAD,
} from './schema/limits'
export {
  MessagePart,
  MessageRole,
  MessageStatus,
  ReasoningPart,
  SessionMessage,
  TextAppend,
  TextPart,
  ToolPart,
  ToolState,
} from './schema/messages'
export type { SessionStorage, StorageReport } from './schema/portability'
export { ExportFormat, ExportRequest } from './schema/portability'
export {
  ConfigureRequest,
  NoProviderConfig,
  OpenAIProviderConfig,
  ProviderConfig,
  ScriptedProviderConfig,
} from './schema/provider'
export type { OrderedRecord, RecordType } from './schema/records'
export {
  ContentType,
  CountMode,
  MessageRecord,
  RECORD_TYPES,
  RecordRole,
  SessionRecord,
  SummaryRecord,
  SummarySource,
  ToolCallRecord,
  ToolResultRecord,
  TranscriptRecord,
} from './schema/records'
export {
  DEFAULT_JUMP_PAGE,
  DEFAULT_OUTLINE_SLICE,
  DEFAULT_PAGE_LIMIT,
  EventsRequest,
  LoadThroughRequest,
  MAX_PAGE_LIMIT,
  MessagePage,
  OutlineRequest,
  PageRequest,
  PromoteMode,
  WatchOptions,
} from './schema/requests'
export {
  DEFAULT_SEARCH_LIMIT,
  MAX_SEARCH_LIMIT,
  SearchHit,
  SearchOptions,
  SearchQuery,
} from './schema/search'
export {
  CreateSessionRequest,
  FileFingerprint,
  ImportOrigin,
  OutlineSlice,
  Provider,
  SessionInfo,
  SessionSource,
  SkippedLines,
  SkipReason,
  TurnOutlineEntry,
  UsageTotals,
} from './schema/session'
export type { Durability, StorageKind } from './store/connection'

// View helpers for the turn rail.
export type { LoadedTurn, RailItem } from './view/rail'
export { mergeTurnRailItems } from './view/rail'
