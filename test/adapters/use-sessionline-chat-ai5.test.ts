// @vitest-environment happy-dom
// useSessionlineChat with ai 5.0.0 and @ai-sdk/react 2.0.0, the oldest releases the adapter
// claims (npm-aliased dev dependencies), swapped in for every importer (cases in chat-cases.ts).
import { vi } from 'vitest'
import { defineChatCases } from './chat-cases'

vi.mock('ai', () => import('ai-v5'))
vi.mock('@ai-sdk/react', () => import('ai-sdk-react-v2'))

defineChatCases('ai 5.0.0', { resumesThroughStream: false, steersAsParts: false })
