// Placeholder until the runner lands: host-driven mode only (no turns are run).

import { parseOrThrow } from '../schema/errors'
import type { ProviderConfig } from '../schema/provider'
import { ConfigureRequest } from '../schema/provider'
import type { ModelProvider, Tools } from './provider'
import type { Runner, RunnerHost } from './types'

export interface RunnerOptions {
  provider?: ProviderConfig | ModelProvider
  tools?: Tools
}

export function createRunner(_host: RunnerHost, _options: RunnerOptions = {}): Runner {
  return {
    async configure(request) {
      parseOrThrow(ConfigureRequest, request, 'configure request')
    },
    async interrupt() {},
    async recover() {},
    async close() {},
  }
}
