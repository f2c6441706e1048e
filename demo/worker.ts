// The playground's worker: one engine over this origin's IndexedDB, running turns with the
// deterministic scripted model until the page configures another model. Its `configure` takes
// the engine's built-in choices and one more, an AI SDK model (models.ts), which is built here,
// in the worker, and run through `fromLanguageModel`: the model object and its key never cross
// to the page.
import { createEngine } from '../src/engine/engine'
import type { ModelProvider } from '../src/engine/provider'
import { providerFromConfig } from '../src/engine/providers/index'
import { parseOrThrow, SessionlineError } from '../src/schema/errors'
import { createSessionSync } from '../src/sync/session-sync'
import { exposeEngine, fromLanguageModel } from '../worker/index'
import { PlaygroundConfigure, type PlaygroundModel } from './models'
import { APPROVED_TOOL, playgroundTools } from './tools'

interface Choice {
  provider: ModelProvider
  /** The tools this model is offered (the runner has them all; the model sees these). */
  offered: ReadonlySet<string>
}

const tools = playgroundTools()
const DEMO_TOOLS = new Set(Object.keys(tools).filter((name) => name !== APPROVED_TOOL))

async function choose(config: PlaygroundModel): Promise<Choice> {
  switch (config.kind) {
    case 'ai-sdk': {
      // Loaded when first chosen: the offline default never needs it.
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
      const server = createOpenAICompatible({
        name: 'playground',
        baseURL: config.baseUrl,
        ...(config.apiKey ? { apiKey: config.apiKey } : {}),
        includeUsage: true,
      })
      return {
        provider: fromLanguageModel(server.chatModel(config.model)),
        offered: new Set(Object.keys(tools)),
      }
    }
    // The built-in providers as the engine runs them: the scripted model with the demo tools
    // (never the one that waits for a person, so its random tool calls never stop a turn), the
    // OpenAI-compatible one with none.
    case 'scripted':
      return { provider: providerFromConfig(config)!, offered: DEMO_TOOLS }
    case 'openai':
      return { provider: providerFromConfig(config)!, offered: new Set() }
  }
}

let current: Choice = { provider: providerFromConfig({ kind: 'scripted' })!, offered: DEMO_TOOLS }
// The engine keeps this one provider; a turn asks it for each step, and it asks the model chosen
// now (a turn resumed after a reload goes on with the model the page configured since).
const playgroundModel: ModelProvider = (request) => {
  const { provider, offered } = current
  return provider({ ...request, tools: request.tools.filter((tool) => offered.has(tool.name)) })
}

// Sync is plugged in but idle: a session syncs only when the page asks (a sync server in Settings).
const engine = createEngine({ provider: playgroundModel, tools, sync: createSessionSync() })
/** Configure calls so far: of two in flight, the later one wins even if its model loads first. */
let configured = 0
/** Configured with `none`: the runner is off for this worker's life. */
let runnerOff = false
exposeEngine({
  ...engine,
  async configure(request) {
    const { provider } = parseOrThrow(PlaygroundConfigure, request, 'configure request')
    if (provider.kind === 'none') {
      // The engine's own "no provider": its runner opens no turn. The playground's model is a
      // function only this worker holds, so it cannot be given back later: a reload can.
      runnerOff = true
      ++configured
      return engine.configure({ provider })
    }
    if (runnerOff) {
      throw new SessionlineError(
        'invalid_state',
        'this worker runs no model since it was configured with none: reload the page to choose one',
      )
    }
    const mine = ++configured
    const chosen = await choose(provider)
    if (mine === configured) current = chosen
  },
})
