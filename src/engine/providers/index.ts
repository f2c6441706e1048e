import { parseOrThrow } from '../../schema/errors'
import { ProviderConfig } from '../../schema/provider'
import type { ModelProvider } from '../provider'
import { createOpenAIProvider, type OpenAIProviderOptions } from './openai'
import { createScriptedProvider } from './scripted'

export type { ChatMessage, ChatToolCall, OpenAIProviderOptions } from './openai'
export { chatRequestBody, createOpenAIProvider, toChatMessages } from './openai'
export { createScriptedProvider, planScriptedStep } from './scripted'

/**
 * The built-in provider a serializable config names, or `undefined` for `{kind: 'none'}`
 * (host-driven mode: the engine runs no turns). Bad config is `invalid_input`.
 */
export function providerFromConfig(
  config: ProviderConfig,
  options: OpenAIProviderOptions = {},
): ModelProvider | undefined {
  const parsed = parseOrThrow(ProviderConfig, config, 'provider config')
  switch (parsed.kind) {
    case 'scripted':
      return createScriptedProvider(parsed)
    case 'openai':
      return createOpenAIProvider(parsed, options)
    case 'none':
      return undefined
  }
}
