/**
 * sessionline for the Vercel AI SDK (`sessionline/ai-sdk`): a `ChatTransport` that runs on the
 * page over a `SessionView`, and `useSessionlineChat`, `useChat` kept equal to the view with the
 * durable inbox beside it. `ai` and `@ai-sdk/react` are optional peers; only this entry imports
 * them. Works with ai 5, 6 and 7 (it writes only the stream chunks all three know).
 *
 * @example
 *   const { messages, status, sendMessage, stop, queued } = useSessionlineChat(view)
 */
export type {
  GroupOptions,
  SessionlineMessageMetadata,
  SessionlineUIMessage,
  SessionlineUIPart,
} from './ai-sdk/messages'
export { rowsToUIMessages, steerOf, toUIMessage } from './ai-sdk/messages'
export type { SessionlineChatTransportOptions } from './ai-sdk/transport'
export { SessionlineChatTransport } from './ai-sdk/transport'
export type {
  SessionlineChat,
  SessionlineChatExtras,
  UseSessionlineChatOptions,
} from './ai-sdk/use-sessionline-chat'
export { useSessionlineChat } from './ai-sdk/use-sessionline-chat'
