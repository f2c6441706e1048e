import { z } from 'zod'
import { MAX_ID_LENGTH, MAX_SYSTEM_PROMPT } from './limits'

/**
 * Serializable choice of a built-in model provider, so a page can pick one across Comlink
 * (`engine.configure({provider})`). `none` is host-driven mode: the engine runs no turns.
 */
export const ScriptedProviderConfig = z.strictObject({
  kind: z.literal('scripted'),
  /** Same seed, same answers. */
  seed: z.number().int().default(1),
  /** Delay between streamed words, in ms (0 streams as fast as possible). */
  wordDelayMs: z.number().nonnegative().default(30),
  /** Chance (0..1) that a step calls a tool before answering. */
  toolRate: z.number().min(0).max(1).default(0.3),
})
export const OpenAIProviderConfig = z.strictObject({
  kind: z.literal('openai'),
  /** e.g. `http://127.0.0.1:11434/v1` or `https://api.openai.com/v1`. */
  baseUrl: z.url().max(2048),
  model: z.string().min(1).max(MAX_ID_LENGTH),
  apiKey: z.string().max(4096).optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** Extra system prompt sent before the transcript. */
  system: z.string().max(MAX_SYSTEM_PROMPT).optional(),
})
export const NoProviderConfig = z.strictObject({ kind: z.literal('none') })
export const ProviderConfig = z.discriminatedUnion('kind', [
  ScriptedProviderConfig,
  OpenAIProviderConfig,
  NoProviderConfig,
])
export type ProviderConfig = z.input<typeof ProviderConfig>
export type ScriptedProviderConfig = z.input<typeof ScriptedProviderConfig>
export type OpenAIProviderConfig = z.input<typeof OpenAIProviderConfig>

export const ConfigureRequest = z.strictObject({ provider: ProviderConfig })
export type ConfigureRequest = z.input<typeof ConfigureRequest>
