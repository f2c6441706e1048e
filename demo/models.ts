/**
 * The models the playground can run, shared by the page (Settings) and its worker: the two
 * built-in providers, and an AI SDK model over any OpenAI-compatible server (Ollama, LM Studio,
 * any `/v1` server), which the worker builds with `@ai-sdk/openai-compatible` and runs through
 * `fromLanguageModel`: the path an app that brings its own model takes (docs/decisions/0029).
 */
import { z } from 'zod'
import { NoProviderConfig, OpenAIProviderConfig, ScriptedProviderConfig } from '../src/schema/provider'

/**
 * An AI SDK chat model on an OpenAI-compatible server. The key, when there is one, is kept in
 * this origin's localStorage (with the other settings) and used by the worker only, in the
 * requests it makes to `baseUrl`.
 */
export const AiSdkModelConfig = z.strictObject({
  kind: z.literal('ai-sdk'),
  /** e.g. `http://127.0.0.1:11434/v1` (Ollama) or `http://127.0.0.1:1234/v1` (LM Studio). */
  baseUrl: z.url().max(2048),
  model: z.string().min(1).max(256),
  apiKey: z.string().max(4096).optional(),
})
export type AiSdkModelConfig = z.input<typeof AiSdkModelConfig>

/** What Settings saves and the page sends to its worker's `configure`. */
export const PlaygroundModel = z.discriminatedUnion('kind', [
  ScriptedProviderConfig,
  OpenAIProviderConfig,
  AiSdkModelConfig,
])
export type PlaygroundModel = z.input<typeof PlaygroundModel>

/**
 * The playground worker's `configure` request: the engine's, with the AI SDK choice added.
 * `none` (not offered in Settings) turns the runner off for tests that drive turns themselves.
 */
export const PlaygroundConfigure = z.strictObject({
  provider: z.union([PlaygroundModel, NoProviderConfig]),
})
export type PlaygroundConfigure = z.input<typeof PlaygroundConfigure>
