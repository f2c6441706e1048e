// @vitest-environment happy-dom
// useSessionlineChat with the pinned ai 7 and @ai-sdk/react 4 (cases in chat-cases.ts).
import { defineChatCases } from './chat-cases'

defineChatCases('ai 7', { resumesThroughStream: true, steersAsParts: true })
